/**
 * Expo push service adapter: `POST {baseUrl}/--/api/v2/push/send` (up to 100 messages) and
 * `POST {baseUrl}/--/api/v2/push/getReceipts`. The base URL is operator configuration
 * (default https://exp.host); an access token is sent when configured.
 */
import Type from 'typebox';
import { defineAdapter } from '../../../core/registry/index.ts';
import { pushProvidersPoint, type PushMessage, type PushReceipt, type PushTicket } from '../../../plugins/notifications/api.ts';

interface ExpoTicket {
  status: 'ok' | 'error';
  id?: string;
  message?: string;
  details?: { error?: string } & Record<string, unknown>;
}

export default defineAdapter({
  id: 'push-expo',
  description: 'Expo push notification service',
  extends: pushProvidersPoint,
  config: Type.Object({
    baseUrl: Type.String({ default: 'https://exp.host', pattern: '^https?://' }),
    accessToken: Type.Optional(Type.String({ minLength: 1 })),
    timeoutMs: Type.Integer({ default: 15_000, minimum: 100 }),
  }),
  setup(ctx) {
    const base = ctx.config.baseUrl.replace(/\/+$/, '');
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(ctx.config.accessToken ? { authorization: `Bearer ${ctx.config.accessToken}` } : {}) },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(ctx.config.timeoutMs),
      });
      const json = (await res.json().catch(() => null)) as { data?: unknown; errors?: { message?: string }[] } | null;
      if (!res.ok || !json || json.errors) throw new Error(json?.errors?.map((e) => e.message).join('; ') || `HTTP ${res.status}`);
      return json.data;
    };
    ctx.extend(pushProvidersPoint, {
      id: 'expo',
      accepts: (token) => /^Expo(nent)?PushToken\[[^\]]+\]$/.test(token),
      async send(messages: PushMessage[]): Promise<PushTicket[]> {
        const data = (await post(
          '/--/api/v2/push/send',
          messages.map((m) => ({
            to: m.to, title: m.title, body: m.body, data: m.data, subtitle: m.subtitle, sound: m.sound,
            badge: m.badge, channelId: m.channelId, ttl: m.ttlSeconds, priority: m.priority,
          })),
        )) as ExpoTicket[];
        return messages.map((_m, i) => {
          const t = data?.[i];
          if (!t) return { status: 'error', ticketId: null, message: 'The provider returned no ticket.', error: 'ProviderError', details: null };
          return t.status === 'ok'
            ? { status: 'ok', ticketId: t.id ?? null, message: null, error: null, details: null }
            : { status: 'error', ticketId: null, message: t.message ?? 'error', error: t.details?.error ?? null, details: t.details ?? null };
        });
      },
      async receipts(ids: string[]): Promise<Record<string, PushReceipt>> {
        const data = (await post('/--/api/v2/push/getReceipts', { ids })) as Record<string, ExpoTicket>;
        const out: Record<string, PushReceipt> = {};
        for (const [id, r] of Object.entries(data ?? {})) {
          out[id] = r.status === 'ok' ? { status: 'ok', message: null, error: null, details: null } : { status: 'error', message: r.message ?? 'error', error: r.details?.error ?? null, details: r.details ?? null };
        }
        return out;
      },
    });
  },
});
