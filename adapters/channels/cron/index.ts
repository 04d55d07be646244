/**
 * The `cron` channel adapter: posts a system message (`direction` and `kind` system, author
 * `{role: "system", name: "cron"}`) with the configured `text` on a schedule. The schedule is a
 * 5-field cron expression (minute granularity, optional `tz`), registered on the job queue
 * (pg-boss) under the channel's id, so with several nodes each tick posts once; a retried tick
 * does not post twice (its externalId is the job id). Deleting the channel removes the schedule.
 * Outbound messages on a cron channel are recorded only.
 */
import { CronExpressionParser } from 'cron-parser';
import Type from 'typebox';
import { DecodeError } from '../../../core/errors/index.ts';
import { defineAdapter } from '../../../core/registry/index.ts';
import { channelAdapter, channelAdaptersPoint } from '../../../plugins/channels/api.ts';

export const CRON_QUEUE = 'channels.cron';

const config = Type.Object(
  {
    schedule: Type.String({ minLength: 9, maxLength: 200, description: 'Cron expression, 5 fields (minute hour day month weekday)' }),
    text: Type.String({ minLength: 1, maxLength: 10_000, description: 'The text of the posted message' }),
    tz: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, default UTC' })),
  },
  { additionalProperties: false },
);
interface Config {
  schedule: string;
  text: string;
  tz?: string;
}

export default defineAdapter({
  id: 'channels-cron',
  description: 'Channel adapter `cron`: a system message on a schedule',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'cron',
        kinds: ['cron'],
        description: 'Posts a system message on a cron schedule',
        config,
        async onChannelSaved(channel) {
          const { schedule, tz } = channel.config;
          if (schedule.trim().split(/\s+/).length !== 5) throw new DecodeError([{ _tag: 'Refinement', path: ['config', 'schedule'], message: 'must have 5 fields (minute hour day month weekday)' }]);
          try {
            CronExpressionParser.parse(schedule, { tz: tz ?? 'UTC', strict: false });
          } catch (err) {
            throw new DecodeError([{ _tag: 'Refinement', path: ['config', 'schedule'], message: `is not a valid cron expression: ${(err as Error).message}` }]);
          }
          if (tz && !Intl.supportedValuesOf('timeZone').includes(tz) && tz !== 'UTC') {
            throw new DecodeError([{ _tag: 'Refinement', path: ['config', 'tz'], message: 'is not a known IANA time zone' }]);
          }
          await ctx.jobs.schedule(CRON_QUEUE, schedule, { channelId: channel.id }, { key: channel.id, tz: tz ?? 'UTC' });
        },
        async onChannelDeleted(channel) {
          await ctx.jobs.unschedule(CRON_QUEUE, channel.id);
        },
        async start(runtime) {
          await ctx.jobs.work<{ channelId: string }>(CRON_QUEUE, async (data, job) => {
            const channel = await runtime.channel(data.channelId);
            if (!channel) {
              await ctx.jobs.unschedule(CRON_QUEUE, data.channelId).catch(() => undefined);
              return;
            }
            const config = channel.config as unknown as Config;
            await runtime.ingest(channel.id, [
              {
                externalId: `cron:${job.id}`,
                direction: 'system',
                kind: 'system',
                author: { role: 'system', name: 'cron' },
                text: config.text,
                raw: { schedule: config.schedule, tz: config.tz ?? 'UTC', firedAt: new Date().toISOString(), jobId: job.id },
              },
            ]);
          }, { pollingIntervalSeconds: 2 });
        },
      }),
    );
  },
});
