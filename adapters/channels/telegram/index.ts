/**
 * The `telegram` channel adapter (Bot API).
 * - Inbound: set the bot's webhook to this channel's inbound URL with `secret_token`; every update
 *   must carry `X-Telegram-Bot-Api-Secret-Token` equal to the channel's `secretToken` (compared in
 *   constant time). `message` and `channel_post` updates become messages with externalId
 *   `<chat id>:<message id>`, in a thread per chat (thread externalId = chat id). Telegram retries
 *   an update until it gets a 2xx; the retry is stored once. Edits and other updates are ignored.
 * - Outbound: `sendMessage` to the thread's chat (or the configured `chatId`).
 */
import Type from 'typebox';
import { InvalidRequest } from '../../../core/errors/index.ts';
import { defineAdapter } from '../../../core/registry/index.ts';
import { DeliveryError, channelAdapter, describeFetchError, channelAdaptersPoint, timingSafeStringEqual } from '../../../plugins/channels/api.ts';

const config = Type.Object(
  {
    botToken: Type.String({ minLength: 8, description: 'Bot token from @BotFather (secret)' }),
    secretToken: Type.String({ minLength: 8, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$', description: 'The webhook secret_token (secret)' }),
    chatId: Type.Optional(Type.String({ minLength: 1, description: 'Default chat for outbound messages outside a thread' })),
    apiBaseUrl: Type.String({ default: 'https://api.telegram.org', pattern: '^https?://' }),
  },
  { additionalProperties: false },
);
interface Config {
  botToken: string;
  secretToken: string;
  chatId?: string;
  apiBaseUrl: string;
}

export default defineAdapter({
  id: 'channels-telegram',
  description: 'Channel adapter `telegram`: Bot API webhook in, sendMessage out',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'telegram',
        kinds: ['telegram'],
        description: 'Telegram Bot API',
        config,
        secretFields: ['botToken', 'secretToken'],
        inbound(req, channel) {
          const token = req.headers['x-telegram-bot-api-secret-token'];
          if (!token) return { ok: false, reason: 'missing X-Telegram-Bot-Api-Secret-Token' };
          if (!timingSafeStringEqual(token, channel.config.secretToken)) return { ok: false, reason: 'secret token mismatch' };
          let update: Record<string, any>;
          try {
            update = JSON.parse(req.rawBody.toString('utf8'));
          } catch {
            throw new InvalidRequest('The Telegram update is not JSON.');
          }
          const m = (update.message ?? update.channel_post) as Record<string, any> | undefined;
          if (!m || !m.chat || m.message_id === undefined) return { ok: true, messages: [] };
          const from = (m.from ?? {}) as Record<string, any>;
          const name = [from.first_name, from.last_name].filter(Boolean).join(' ') || from.username || m.chat.title;
          const attachments = m.document ? [{ name: String(m.document.file_name ?? 'document'), contentType: String(m.document.mime_type ?? 'application/octet-stream'), ...(typeof m.document.file_size === 'number' ? { sizeBytes: m.document.file_size } : {}), metadata: { fileId: m.document.file_id } }] : [];
          return {
            ok: true,
            messages: [
              {
                externalId: `${m.chat.id}:${m.message_id}`,
                text: typeof m.text === 'string' ? m.text : typeof m.caption === 'string' ? m.caption : null,
                author: { role: 'user', ...(name ? { name: String(name) } : {}), ...(from.id !== undefined ? { externalId: String(from.id) } : {}) },
                raw: update,
                attachments,
                thread: { externalId: String(m.chat.id), title: m.chat.title ?? m.chat.username ?? name ?? null },
              },
            ],
          };
        },
        async outbound({ channel, message, thread }) {
          const chatId = thread?.externalId ?? channel.config.chatId;
          if (!chatId) throw new DeliveryError('No Telegram chat to send to (configure `chatId`).', { permanent: true });
          let res: Response;
          try {
            res = await fetch(`${channel.config.apiBaseUrl.replace(/\/+$/, '')}/bot${channel.config.botToken}/sendMessage`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ chat_id: chatId, text: message.text ?? '' }),
              signal: AbortSignal.timeout(15_000),
            });
          } catch (err) {
            throw new DeliveryError(`Telegram did not answer: ${describeFetchError(err).replace(channel.config.botToken, '***')}`);
          }
          const j = (await res.json().catch(() => ({}))) as { ok?: boolean; description?: string; error_code?: number; result?: { message_id: number; chat: { id: number | string } } };
          if (!res.ok || !j.ok || !j.result) {
            const code = j.error_code ?? res.status;
            throw new DeliveryError(`Telegram error ${code}: ${j.description ?? res.statusText}`, { permanent: code >= 400 && code < 500 && code !== 429 });
          }
          return { externalId: `${j.result.chat.id}:${j.result.message_id}`, status: 'delivered' };
        },
      }),
    );
  },
});
