/**
 * The `discord` channel adapter.
 * - Inbound: the application's Interactions Endpoint URL set to this channel's inbound URL.
 *   Requests are verified with Ed25519 (`X-Signature-Ed25519` over `X-Signature-Timestamp` + raw
 *   body, with the application's public key); timestamps older than 5 minutes and signatures seen
 *   before are refused. PING answers PONG; application commands, components and modal submits
 *   become messages (externalId = interaction id, thread = the Discord channel id) answered with
 *   an ephemeral acknowledgement (`ackText`). Ordinary chat messages reach bots only through the
 *   Gateway (a websocket), which this adapter does not open.
 * - Outbound: `POST /channels/{channel.id}/messages` with the bot token, to the thread's Discord
 *   channel or the configured `channelId`; the returned message id becomes the externalId.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import Type from 'typebox';
import { InvalidRequest } from '../../../core/errors/index.ts';
import { defineAdapter } from '../../../core/registry/index.ts';
import { DeliveryError, channelAdapter, channelAdaptersPoint, describeFetchError } from '../../../plugins/channels/api.ts';

const config = Type.Object(
  {
    publicKey: Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: "The application's Ed25519 public key (hex)" }),
    botToken: Type.Optional(Type.String({ minLength: 8, description: 'Bot token for sending messages (secret)' })),
    channelId: Type.Optional(Type.String({ pattern: '^[0-9]+$', description: 'Default Discord channel for outbound messages outside a thread' })),
    apiBaseUrl: Type.String({ default: 'https://discord.com/api/v10', pattern: '^https?://' }),
    ackText: Type.String({ default: 'Received.', maxLength: 2000 }),
    toleranceSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 300 }),
  },
  { additionalProperties: false },
);
interface Config {
  publicKey: string;
  botToken?: string;
  channelId?: string;
  apiBaseUrl: string;
  ackText: string;
  toleranceSeconds: number;
}

const keys = new Map<string, KeyObject>();
function publicKey(hex: string): KeyObject {
  let k = keys.get(hex);
  if (!k) {
    k = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(hex, 'hex').toString('base64url') }, format: 'jwk' });
    if (keys.size > 1000) keys.clear();
    keys.set(hex, k);
  }
  return k;
}

function commandText(data: Record<string, any> | undefined): string | null {
  if (!data) return null;
  if (data.custom_id) return String(data.custom_id);
  const opts = (list: any[] | undefined): string => (list ?? []).map((o) => (o.options ? `${o.name} ${opts(o.options)}` : `${o.name}:${o.value}`)).join(' ');
  return `/${data.name}${data.options?.length ? ` ${opts(data.options)}` : ''}`;
}

export default defineAdapter({
  id: 'channels-discord',
  description: 'Channel adapter `discord`: interactions in (Ed25519), channel messages out',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'discord',
        kinds: ['discord'],
        description: 'Discord interactions and REST API',
        config,
        secretFields: ['botToken'],
        inbound(req, channel) {
          const sig = req.headers['x-signature-ed25519'];
          const ts = req.headers['x-signature-timestamp'];
          if (!sig || !ts) return { ok: false, reason: 'missing X-Signature-Ed25519 or X-Signature-Timestamp' };
          if (!/^\d{1,12}$/.test(ts) || Math.abs(req.now - Number(ts)) > channel.config.toleranceSeconds) return { ok: false, reason: 'stale X-Signature-Timestamp' };
          if (!/^[0-9a-fA-F]{128}$/.test(sig)) return { ok: false, reason: 'malformed signature' };
          let valid = false;
          try {
            valid = verify(null, Buffer.concat([Buffer.from(ts), req.rawBody]), publicKey(channel.config.publicKey), Buffer.from(sig, 'hex'));
          } catch {
            valid = false;
          }
          if (!valid) return { ok: false, reason: 'signature mismatch' };
          let body: Record<string, any>;
          try {
            body = JSON.parse(req.rawBody.toString('utf8'));
          } catch {
            throw new InvalidRequest('The interaction body is not JSON.');
          }
          if (body.type === 1) return { ok: true, replayKey: sig, reply: { body: { type: 1 } } };
          const user = (body.member?.user ?? body.user ?? {}) as Record<string, any>;
          const name = user.global_name ?? user.username;
          return {
            ok: true,
            replayKey: sig,
            messages: [
              {
                externalId: String(body.id),
                text: commandText(body.data),
                kind: 'event',
                author: { role: 'user', ...(name ? { name: String(name) } : {}), ...(user.id ? { externalId: String(user.id) } : {}) },
                raw: body,
                metadata: { discord: { interactionType: body.type, guildId: body.guild_id ?? null, channelId: body.channel_id ?? body.channel?.id ?? null } },
                ...(body.channel_id || body.channel?.id ? { thread: { externalId: String(body.channel_id ?? body.channel.id), title: body.channel?.name ?? null } } : {}),
              },
            ],
            reply: { body: { type: 4, data: { content: channel.config.ackText, flags: 64 } } },
          };
        },
        async outbound({ channel, message, thread }) {
          const token = channel.config.botToken;
          if (!token) throw new DeliveryError('The channel has no botToken for outbound messages.', { permanent: true });
          const target = thread?.externalId && /^[0-9]+$/.test(thread.externalId) ? thread.externalId : channel.config.channelId;
          if (!target) throw new DeliveryError('No Discord channel to send to (configure `channelId`).', { permanent: true });
          let res: Response;
          try {
            res = await fetch(`${channel.config.apiBaseUrl.replace(/\/+$/, '')}/channels/${target}/messages`, {
              method: 'POST',
              headers: { authorization: `Bot ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ content: message.text ?? '', allowed_mentions: { parse: [] } }),
              signal: AbortSignal.timeout(15_000),
            });
          } catch (err) {
            throw new DeliveryError(`Discord did not answer: ${describeFetchError(err)}`);
          }
          const j = (await res.json().catch(() => ({}))) as { id?: string; message?: string; code?: number };
          if (!res.ok || !j.id) {
            throw new DeliveryError(`Discord answered ${res.status}: ${j.message ?? res.statusText}`, { permanent: res.status >= 400 && res.status < 500 && res.status !== 429 });
          }
          return { externalId: j.id, status: 'delivered' };
        },
      }),
    );
  },
});
