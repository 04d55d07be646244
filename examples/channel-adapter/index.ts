/**
 * A custom channel adapter, worked end to end: "Acme Chat", a made-up chat service with
 * - signed webhooks: `X-Acme-Timestamp` (unix seconds) and
 *   `X-Acme-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`, body
 *   `{"event": "message.created", "message": {"id", "conversation_id", "text", "sender": {"id", "name"}}}`
 *   or `{"event": "message.status", "message_id", "status": "delivered"|"failed", "error"?}`;
 * - a REST send: `POST {baseUrl}/v1/conversations/{conversation}/messages` with
 *   `Authorization: Bearer <apiToken>` and `{"text"}`, answering `{"id"}`.
 *
 * Channels use it with `{"kind": "custom", "adapter": "acme-chat", "config": {...}}`.
 * See README.md in this folder ("Write a channel adapter") for the walk-through; the contract
 * suite runs against it in test/adapters/channels/custom.test.ts.
 */
import Type from 'typebox';
import { InvalidRequest } from '../../core/errors/index.ts';
import { defineAdapter } from '../../core/registry/index.ts';
import { DeliveryError, channelAdapter, channelAdaptersPoint, describeFetchError, hmacHex, timingSafeStringEqual } from '../../plugins/channels/api.ts';

// 1. The per-channel config: a TypeBox object. Secret fields are listed in `secretFields` below.
const config = Type.Object(
  {
    baseUrl: Type.String({ pattern: '^https?://', default: 'https://api.acme-chat.example', description: 'Acme Chat API base URL' }),
    apiToken: Type.String({ minLength: 8, description: 'API token for sending (secret)' }),
    webhookSecret: Type.String({ minLength: 16, description: 'Signs the webhooks Acme Chat sends us (secret)' }),
    defaultConversation: Type.Optional(Type.String({ minLength: 1, description: 'Where channel-level messages go' })),
  },
  { additionalProperties: false },
);
interface Config {
  baseUrl: string;
  apiToken: string;
  webhookSecret: string;
  defaultConversation?: string;
}

const TOLERANCE_SECONDS = 300;

export default defineAdapter({
  id: 'example-acme-chat',
  description: 'Example channel adapter: Acme Chat (signed webhooks in, REST out)',
  // 2. An adapter extends exactly one extension point: the channels plugin's.
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'acme-chat', // the channel's `adapter` field
        kinds: ['custom'],
        description: 'Acme Chat',
        config,
        secretFields: ['apiToken', 'webhookSecret'],

        // 3. Inbound: verify on the RAW body, then map. Return {ok: false} to refuse (401, nothing stored).
        inbound(req, channel) {
          const ts = req.headers['x-acme-timestamp'];
          const sig = req.headers['x-acme-signature'];
          if (!ts || !sig) return { ok: false, reason: 'missing X-Acme-Timestamp or X-Acme-Signature' };
          if (!/^\d+$/.test(ts) || Math.abs(req.now - Number(ts)) > TOLERANCE_SECONDS) return { ok: false, reason: 'stale timestamp' };
          const expected = `sha256=${hmacHex('sha256', channel.config.webhookSecret, Buffer.concat([Buffer.from(`${ts}.`), req.rawBody]))}`;
          if (!timingSafeStringEqual(sig, expected)) return { ok: false, reason: 'signature mismatch' };

          let body: Record<string, any>;
          try {
            body = JSON.parse(req.rawBody.toString('utf8'));
          } catch {
            throw new InvalidRequest('The body is not JSON.'); // signed but malformed: 400
          }
          if (body.event === 'message.status') {
            return { ok: true, replayKey: sig, statusUpdates: [{ externalId: String(body.message_id), status: body.status === 'failed' ? 'failed' : 'delivered', reason: body.error }] };
          }
          if (body.event !== 'message.created' || !body.message?.id) return { ok: true, replayKey: sig }; // acknowledged, ignored
          const m = body.message;
          return {
            ok: true,
            replayKey: sig, // the same signed request twice is a replay (401)
            messages: [
              {
                externalId: String(m.id), // stored once per channel: redeliveries are harmless
                text: typeof m.text === 'string' ? m.text : null,
                author: { role: 'user', ...(m.sender?.name ? { name: String(m.sender.name) } : {}), ...(m.sender?.id ? { externalId: String(m.sender.id) } : {}) },
                raw: body,
                ...(m.conversation_id ? { thread: { externalId: String(m.conversation_id) } } : {}),
              },
            ],
          };
        },

        // 4. Outbound: send one message; throw to retry (DeliveryError {permanent: true} to fail at once).
        async outbound({ channel, message, thread }) {
          const conversation = thread?.externalId ?? channel.config.defaultConversation;
          if (!conversation) throw new DeliveryError('No conversation to send to (set defaultConversation).', { permanent: true });
          let res: Response;
          try {
            // Operator-configured platform URL: plain fetch. A URL your *users* type in goes through ctx.net.fetch.
            res = await fetch(`${channel.config.baseUrl.replace(/\/+$/, '')}/v1/conversations/${encodeURIComponent(conversation)}/messages`, {
              method: 'POST',
              headers: { authorization: `Bearer ${channel.config.apiToken}`, 'content-type': 'application/json' },
              body: JSON.stringify({ text: message.text ?? '' }),
              signal: AbortSignal.timeout(15_000),
            });
          } catch (err) {
            throw new DeliveryError(`Acme Chat did not answer: ${describeFetchError(err)}`);
          }
          const j = (await res.json().catch(() => ({}))) as { id?: string; error?: string };
          if (!res.ok || !j.id) throw new DeliveryError(`Acme Chat answered ${res.status}: ${j.error ?? res.statusText}`, { permanent: res.status >= 400 && res.status < 500 && res.status !== 429 });
          return { externalId: j.id, status: 'sent' }; // a later message.status webhook moves it to delivered
        },
      }),
    );
  },
});
