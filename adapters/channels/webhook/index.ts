/**
 * The `webhook` channel adapter: a generic HTTP integration signed with Standard Webhooks
 * (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp` (5-minute tolerance) and
 * `webhook-signature: v1,<base64 HMAC-SHA256("<id>.<timestamp>.<raw body>")>` keyed by the
 * channel's `secret` (`whsec_<base64>`, or any string of 16+ characters used as the key bytes).
 *
 * Inbound (POST /api/v1/channels/{channelId}/inbound), JSON body:
 * - `{type?: "message", id, text?, author?, thread?: {id, title?}, kind?, metadata?, attachments?}`:
 *   stored once per `id` (the message's `externalId`); `author` defaults to `{role: "user"}`.
 * - `{type: "status", id, status: "sent"|"delivered"|"failed", reason?}`: delivery report for an
 *   outbound message whose `externalId` is `id`.
 * Outbound: each outbound message is POSTed as JSON to `targetUrl` (through the SSRF guard), signed
 * the same way with `webhook-id` = the message id (stable across retries). A 2xx answer marks it
 * `delivered` (its JSON `id`, if any, becomes the `externalId`); 408/429/5xx/network errors are
 * retried; other 4xx and blocked URLs fail at once.
 */
import Type from 'typebox';
import { InvalidRequest } from '../../../core/errors/index.ts';
import { defineAdapter } from '../../../core/registry/index.ts';
import {
  DeliveryError,
  channelAdapter,
  channelAdaptersPoint,
  signStandardWebhook,
  verifyStandardWebhook,
  type InboundMessage,
} from '../../../plugins/channels/api.ts';

const config = Type.Object(
  {
    secret: Type.String({ minLength: 16, description: 'Standard Webhooks signing secret (whsec_...); secret, never returned' }),
    targetUrl: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://', description: 'Where outbound messages are POSTed' })),
    toleranceSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, default: 300 })),
  },
  { additionalProperties: false },
);
interface Config {
  secret: string;
  targetUrl?: string;
  toleranceSeconds?: number;
}

const AUTHOR_ROLES = new Set(['user', 'assistant', 'agent', 'system', 'unknown']);

function parseJson(raw: Buffer): Record<string, unknown> {
  try {
    const v = JSON.parse(raw.toString('utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    /* fall through */
  }
  throw new InvalidRequest('The webhook body must be a JSON object.');
}

const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

export default defineAdapter({
  id: 'channels-webhook',
  description: 'Channel adapter `webhook`: Standard Webhooks in and out',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'webhook',
        kinds: ['webhook'],
        description: 'Generic HTTP webhooks signed with Standard Webhooks',
        config,
        secretFields: ['secret'],
        inbound(req, channel) {
          const v = verifyStandardWebhook(channel.config.secret, req.headers, req.rawBody, req.now, channel.config.toleranceSeconds ?? 300);
          if (!v.ok) return v;
          const body = parseJson(req.rawBody);
          const id = str(body.id) ?? v.id;
          if (body.type === 'status') {
            const status = body.status;
            if (status !== 'sent' && status !== 'delivered' && status !== 'failed') throw new InvalidRequest('status must be sent, delivered or failed.');
            return { ok: true, replayKey: v.signature, statusUpdates: [{ externalId: id, status, reason: str(body.reason) }] };
          }
          if (body.type !== undefined && body.type !== 'message') throw new InvalidRequest(`Unknown webhook type '${String(body.type)}'.`);
          const a = (body.author ?? {}) as Record<string, unknown>;
          const thread = body.thread as Record<string, unknown> | undefined;
          const msg: InboundMessage = {
            externalId: id,
            text: typeof body.text === 'string' ? body.text : null,
            author: {
              role: (AUTHOR_ROLES.has(a.role as string) ? a.role : 'user') as 'user',
              ...(str(a.name) ? { name: str(a.name) } : {}),
              ...(str(a.email) ? { email: str(a.email) } : {}),
              ...(str(a.phone) ? { phone: str(a.phone) } : {}),
              ...(str(a.externalId) ? { externalId: str(a.externalId) } : {}),
            },
            raw: body,
            kind: (['text', 'event', 'call', 'comment', 'system'].includes(body.kind as string) ? body.kind : 'text') as 'text',
            metadata: body.metadata && typeof body.metadata === 'object' ? (body.metadata as Record<string, unknown>) : null,
            attachments: Array.isArray(body.attachments)
              ? (body.attachments as Record<string, unknown>[]).filter((x) => str(x?.name) && str(x?.contentType)).map((x) => ({ name: x.name as string, contentType: x.contentType as string, ...(str(x.url) ? { url: x.url as string } : {}) }))
              : [],
            ...(thread && str(thread.id) ? { thread: { externalId: thread.id as string, title: str(thread.title) ?? null } } : {}),
          };
          return { ok: true, replayKey: v.signature, messages: [msg] };
        },
        async outbound({ channel, message, thread }) {
          const target = channel.config.targetUrl;
          if (!target) throw new DeliveryError('The channel has no targetUrl for outbound messages.', { permanent: true });
          const body = JSON.stringify({
            type: 'message',
            id: message.id,
            channelId: message.channelId,
            thread: thread ? { id: thread.externalId ?? thread.id, title: thread.title } : null,
            text: message.text,
            kind: message.kind,
            author: message.author,
            metadata: message.metadata,
            attachments: message.attachments,
            createdAt: message.createdAt,
          });
          const headers = { 'content-type': 'application/json', ...signStandardWebhook(channel.config.secret, message.id, Math.floor(Date.now() / 1000), body) };
          let res: Response;
          try {
            res = await ctx.net.fetch(target, { method: 'POST', headers, body, timeoutMs: 15_000, maxBytes: 1024 * 1024 });
          } catch (err) {
            const e = err as { code?: string; message: string };
            if (e.code === 'ssrf_blocked') throw new DeliveryError(`The target URL is not allowed: ${e.message}`, { permanent: true });
            throw new DeliveryError(`The target did not answer: ${e.message}`);
          }
          const text = await res.text().catch(() => '');
          if (res.ok) {
            let externalId: string | null = null;
            try {
              const j = JSON.parse(text) as { id?: unknown };
              if (typeof j.id === 'string' && j.id) externalId = j.id;
            } catch {
              /* no id */
            }
            return { externalId, status: 'delivered', details: { httpStatus: res.status } };
          }
          const permanent = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
          throw new DeliveryError(`The target answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`, { permanent });
        },
      }),
    );
  },
});
