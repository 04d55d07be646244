/**
 * The `slack` channel adapter.
 * - Inbound: the Events API at POST /api/v1/channels/{channelId}/inbound. Requests are verified
 *   with the signing secret (`x-slack-signature: v0=HMAC-SHA256("v0:<ts>:<raw body>")`,
 *   `x-slack-request-timestamp` within 5 minutes; a signature seen before is a replay).
 *   `url_verification` answers the challenge; `message` and `app_mention` events become messages
 *   with `externalId` `<slack channel>:<ts>` (Slack retries and the double message/app_mention
 *   delivery are stored once); replies (`thread_ts`) go to the thread `<slack channel>:<thread_ts>`.
 *   Bot messages and edits/deletions are acknowledged and ignored.
 * - Outbound: `chat.postMessage` with the bot token, to the thread's Slack channel (as a thread
 *   reply) or the configured `channel`; the returned ts becomes the externalId.
 */
import Type from 'typebox';
import { InvalidRequest } from '../../../core/errors/index.ts';
import { defineAdapter } from '../../../core/registry/index.ts';
import { DeliveryError, channelAdapter, describeFetchError, channelAdaptersPoint, hmacHex, timingSafeStringEqual, type InboundMessage } from '../../../plugins/channels/api.ts';

const config = Type.Object(
  {
    signingSecret: Type.String({ minLength: 8, description: "The Slack app's signing secret (secret)" }),
    botToken: Type.Optional(Type.String({ minLength: 8, description: 'Bot token xoxb-... for chat.postMessage (secret)' })),
    channel: Type.Optional(Type.String({ minLength: 1, description: 'Default Slack channel id for outbound messages outside a thread' })),
    apiBaseUrl: Type.String({ default: 'https://slack.com/api', pattern: '^https?://', description: 'Slack Web API base URL' }),
    toleranceSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 300 }),
  },
  { additionalProperties: false },
);
interface Config {
  signingSecret: string;
  botToken?: string;
  channel?: string;
  apiBaseUrl: string;
  toleranceSeconds: number;
}

const PERMANENT = new Set(['invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'channel_not_found', 'not_in_channel', 'is_archived', 'msg_too_long', 'no_text', 'invalid_arguments', 'missing_scope']);

export default defineAdapter({
  id: 'channels-slack',
  description: 'Channel adapter `slack`: Events API in, chat.postMessage out',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'slack',
        kinds: ['slack'],
        description: 'Slack Events API and Web API',
        config,
        secretFields: ['signingSecret', 'botToken'],
        inbound(req, channel) {
          const ts = req.headers['x-slack-request-timestamp'];
          const sig = req.headers['x-slack-signature'];
          if (!ts || !sig) return { ok: false, reason: 'missing x-slack-signature or x-slack-request-timestamp' };
          if (!/^\d{1,12}$/.test(ts) || Math.abs(req.now - Number(ts)) > channel.config.toleranceSeconds) return { ok: false, reason: 'stale x-slack-request-timestamp' };
          const expected = `v0=${hmacHex('sha256', channel.config.signingSecret, Buffer.concat([Buffer.from(`v0:${ts}:`), req.rawBody]))}`;
          if (!timingSafeStringEqual(sig, expected)) return { ok: false, reason: 'signature mismatch' };
          let body: Record<string, any>;
          try {
            body = JSON.parse(req.rawBody.toString('utf8'));
          } catch {
            throw new InvalidRequest('The Slack event body is not JSON.');
          }
          if (body.type === 'url_verification') return { ok: true, replayKey: sig, reply: { body: { challenge: String(body.challenge ?? '') } } };
          if (body.type !== 'event_callback' || !body.event) return { ok: true, replayKey: sig, messages: [] };
          const e = body.event as Record<string, any>;
          if ((e.type !== 'message' && e.type !== 'app_mention') || e.bot_id || (e.subtype && e.subtype !== 'thread_broadcast' && e.subtype !== 'file_share') || !e.ts || !e.channel) {
            return { ok: true, replayKey: sig, messages: [] };
          }
          const msg: InboundMessage = {
            externalId: `${e.channel}:${e.ts}`,
            text: typeof e.text === 'string' ? e.text : null,
            author: { role: 'user', ...(e.user ? { externalId: String(e.user) } : {}) },
            raw: body,
            metadata: { slack: { team: body.team_id ?? null, channel: e.channel, eventId: body.event_id ?? null } },
            attachments: Array.isArray(e.files)
              ? e.files.map((f: Record<string, any>) => ({ name: String(f.name ?? 'file'), contentType: String(f.mimetype ?? 'application/octet-stream'), ...(f.url_private ? { url: String(f.url_private) } : {}), ...(typeof f.size === 'number' ? { sizeBytes: f.size } : {}) }))
              : [],
            ...(e.thread_ts && e.thread_ts !== e.ts ? { thread: { externalId: `${e.channel}:${e.thread_ts}` } } : {}),
          };
          return { ok: true, replayKey: sig, messages: [msg] };
        },
        async outbound({ channel, message, thread, lastInbound }) {
          const token = channel.config.botToken;
          if (!token) throw new DeliveryError('The channel has no botToken for outbound messages.', { permanent: true });
          let target = channel.config.channel;
          let threadTs: string | undefined;
          if (thread?.externalId && /^[A-Z0-9]+:\d+\.\d+$/.test(thread.externalId)) [target, threadTs] = thread.externalId.split(':');
          else if (!target && lastInbound?.externalId?.includes(':')) target = lastInbound.externalId.split(':')[0];
          if (!target) throw new DeliveryError('No Slack channel to post to (configure `channel`).', { permanent: true });
          let res: Response;
          try {
            res = await fetch(`${channel.config.apiBaseUrl.replace(/\/+$/, '')}/chat.postMessage`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' },
              body: JSON.stringify({ channel: target, text: message.text ?? '', ...(threadTs ? { thread_ts: threadTs } : {}) }),
              signal: AbortSignal.timeout(15_000),
            });
          } catch (err) {
            throw new DeliveryError(`Slack did not answer: ${describeFetchError(err)}`);
          }
          if (res.status === 429 || res.status >= 500) throw new DeliveryError(`Slack answered ${res.status}`);
          const j = (await res.json().catch(() => ({}))) as { ok?: boolean; error?: string; ts?: string; channel?: string };
          if (!j.ok) throw new DeliveryError(`Slack error: ${j.error ?? `HTTP ${res.status}`}`, { permanent: PERMANENT.has(j.error ?? '') });
          return { externalId: `${j.channel ?? target}:${j.ts}`, status: 'delivered' };
        },
      }),
    );
  },
});
