/**
 * Channels plugin: channels, threads and messages (spec "Channels, threads, messages" and the
 * name-only channel operations), the channel-adapter extension point (`api.ts`), inbound webhooks
 * verified per adapter, and the outbound delivery queue.
 *
 * Permissions: `channels.read` and `channels.write`. The spec's role table gives editors and
 * viewers apps, data and files only, so neither role holds them: admins do, and any key that is
 * granted them explicitly (`permissions: {channels: ['read', 'write']}`).
 */
import Type from 'typebox';
import { definePlugin } from '../../core/registry/index.ts';
import { channelAdaptersPoint, channelsServiceRef, type ChannelsService as ChannelsServiceApi } from './api.ts';
import { migrations } from './migrations.ts';
import { channelsRoutes } from './channels.routes.ts';
import { ChannelsService, DELIVER_QUEUE, SWEEP_QUEUE } from './channels.service.ts';

export default definePlugin({
  id: 'channels',
  description: 'Channels, threads and messages, with channel adapters for inbound and outbound messaging',
  config: Type.Object({
    deliveryMaxAttempts: Type.Integer({ minimum: 1, default: 6, description: 'Delivery attempts of an outbound message before it is failed' }),
    deliveryBackoffMs: Type.Integer({ minimum: 1, default: 5000, description: 'First retry delay; doubles on every attempt' }),
    deliveryMaxBackoffMs: Type.Integer({ minimum: 1, default: 600_000 }),
    deliveryConcurrency: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Deliveries in flight at once on this node' }),
    inboundBodyLimit: Type.Integer({ minimum: 1024, default: 10 * 1024 * 1024, description: 'Largest inbound webhook body (bytes)' }),
    sweepCron: Type.String({ default: '* * * * *', description: 'How often messages left pending by a crash are re-queued' }),
  }),
  permissions: {
    'channels.read': { description: 'List and read channels, threads and messages', roles: [] },
    'channels.write': { description: 'Create, update and delete channels; create threads and messages', roles: [] },
  },
  migrations,
  provides: [channelsServiceRef],
  extensionPoints: [channelAdaptersPoint],
  setup(ctx) {
    const service = new ChannelsService({
      db: ctx.db,
      secrets: ctx.secrets,
      events: ctx.events,
      jobs: ctx.jobs,
      log: ctx.logger,
      baseUrl: ctx.core.baseUrl,
      delivery: { maxAttempts: ctx.config.deliveryMaxAttempts, backoffMs: ctx.config.deliveryBackoffMs, maxBackoffMs: ctx.config.deliveryMaxBackoffMs },
      adapters: ctx.extensions(channelAdaptersPoint),
    });
    const api: ChannelsServiceApi = { postMessage: (w, c, input) => service.postMessage(w, c, input) };
    ctx.provide(channelsServiceRef, api);
    ctx.routes((app) => channelsRoutes(app, service, ctx.config.inboundBodyLimit));
    ctx.onStart(async () => {
      const adapters = service.adapters();
      if (adapters.some((a) => a.outbound || a.inbound)) {
        // The sweeper re-queues stuck deliveries and drops expired replay keys.
        await ctx.jobs.work(SWEEP_QUEUE, async () => service.sweep(), { pollingIntervalSeconds: 5 });
        await ctx.jobs.schedule(SWEEP_QUEUE, ctx.config.sweepCron, {}, { key: 'all' });
      }
      if (adapters.some((a) => a.outbound)) {
        // Several workers: one slow platform must not hold every other channel's deliveries.
        await ctx.jobs.work<{ messageId: string }>(DELIVER_QUEUE, async (data) => service.deliver(data.messageId), { concurrency: ctx.config.deliveryConcurrency });
      }
      const runtime = { ingest: service.ingest.bind(service), channel: service.loadAdapterChannel.bind(service) };
      for (const a of adapters) await a.start?.(runtime);
    });
  },
});
