/**
 * The `sms` channel adapter, for Twilio's Messaging REST API and compatible providers.
 * - Outbound: `POST {apiBaseUrl}/2010-04-01/Accounts/{accountSid}/Messages.json` (form encoded,
 *   basic auth `accountSid:authToken`) with To, From, Body and StatusCallback = this channel's
 *   inbound URL; the returned `sid` becomes the externalId and the message is `sent`. The
 *   recipient is `metadata.to` of the message, else the thread's phone number, else the author
 *   of the last inbound message.
 * - Inbound (the number's messaging webhook and the status callbacks, both pointed at the inbound
 *   URL): verified with `X-Twilio-Signature` = base64(HMAC-SHA1(authToken, URL + the POST
 *   parameters sorted by name, each name followed by its value)). Incoming SMS become messages
 *   (externalId = MessageSid, a thread per remote number); status callbacks move outbound
 *   messages to delivered / failed (undelivered, failed) with the error code as reason. Answers
 *   empty TwiML.
 */
import Type from 'typebox';
import { defineAdapter } from '../../../core/registry/index.ts';
import { DeliveryError, channelAdapter, channelAdaptersPoint, describeFetchError, hmacBase64, timingSafeStringEqual, type Attachment } from '../../../plugins/channels/api.ts';

const config = Type.Object(
  {
    accountSid: Type.String({ minLength: 2 }),
    authToken: Type.String({ minLength: 8, description: 'Auth token: signs webhooks and authenticates sends (secret)' }),
    from: Type.String({ minLength: 2, description: 'The sending number (E.164) or messaging service sender' }),
    apiBaseUrl: Type.String({ default: 'https://api.twilio.com', pattern: '^https?://' }),
    statusCallback: Type.Boolean({ default: true, description: 'Ask the provider to report delivery to the inbound URL' }),
  },
  { additionalProperties: false },
);
interface Config {
  accountSid: string;
  authToken: string;
  from: string;
  apiBaseUrl: string;
  statusCallback: boolean;
}

/** Twilio's request signature: base64 HMAC-SHA1 of the URL followed by the sorted POST params. */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const data = url + Object.keys(params).sort().map((k) => k + params[k]).join('');
  return hmacBase64('sha1', authToken, data);
}

const TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

export default defineAdapter({
  id: 'channels-sms',
  description: 'Channel adapter `sms`: Twilio-compatible REST send, signed webhooks and status callbacks',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'sms',
        kinds: ['sms'],
        description: 'SMS through a Twilio-compatible API',
        config,
        secretFields: ['authToken'],
        inbound(req, channel) {
          const sig = req.headers['x-twilio-signature'];
          if (!sig) return { ok: false, reason: 'missing X-Twilio-Signature' };
          const params = Object.fromEntries(new URLSearchParams(req.rawBody.toString('utf8')));
          if (!timingSafeStringEqual(sig, twilioSignature(channel.config.authToken, req.url, params))) return { ok: false, reason: 'signature mismatch' };
          const reply = { contentType: 'text/xml', body: TWIML };
          if (!params.MessageSid) return { ok: true, reply };
          if (params.MessageStatus && !params.Body) {
            const s = params.MessageStatus;
            const status = s === 'delivered' || s === 'read' ? 'delivered' : s === 'failed' || s === 'undelivered' ? 'failed' : s === 'sent' ? 'sent' : undefined;
            return { ok: true, reply, statusUpdates: status ? [{ externalId: params.MessageSid, status, reason: status === 'failed' ? `${s}${params.ErrorCode ? ` (error ${params.ErrorCode})` : ''}` : undefined }] : [] };
          }
          const attachments: Attachment[] = [];
          for (let i = 0; i < Number(params.NumMedia ?? 0) && i < 10; i++) {
            if (params[`MediaUrl${i}`]) attachments.push({ name: `media-${i}`, contentType: params[`MediaContentType${i}`] ?? 'application/octet-stream', url: params[`MediaUrl${i}`] });
          }
          return {
            ok: true,
            reply,
            messages: [
              {
                externalId: params.MessageSid,
                text: params.Body ?? null,
                author: { role: 'user', ...(params.From ? { phone: params.From } : {}) },
                raw: params,
                attachments,
                ...(params.From ? { thread: { externalId: params.From, title: params.From } } : {}),
              },
            ],
          };
        },
        async outbound({ channel, message, thread, lastInbound }) {
          const c = channel.config;
          const meta = (message.metadata ?? {}) as Record<string, unknown>;
          const to = (typeof meta.to === 'string' && meta.to) || (thread?.externalId?.startsWith('+') ? thread.externalId : undefined) || lastInbound?.author.phone;
          if (!to) throw new DeliveryError('No recipient: set metadata.to, or answer in a thread of a phone number.', { permanent: true });
          const form = new URLSearchParams({ To: to, From: c.from, Body: message.text ?? '' });
          if (c.statusCallback) form.set('StatusCallback', channel.inboundUrl);
          let res: Response;
          try {
            res = await fetch(`${c.apiBaseUrl.replace(/\/+$/, '')}/2010-04-01/Accounts/${encodeURIComponent(c.accountSid)}/Messages.json`, {
              method: 'POST',
              headers: { authorization: `Basic ${Buffer.from(`${c.accountSid}:${c.authToken}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
              body: form.toString(),
              signal: AbortSignal.timeout(15_000),
            });
          } catch (err) {
            throw new DeliveryError(`The SMS provider did not answer: ${describeFetchError(err)}`);
          }
          const j = (await res.json().catch(() => ({}))) as { sid?: string; status?: string; message?: string; code?: number };
          if (!res.ok || !j.sid) {
            throw new DeliveryError(`The SMS provider answered ${res.status}: ${j.message ?? res.statusText}${j.code ? ` (code ${j.code})` : ''}`, { permanent: res.status >= 400 && res.status < 500 && res.status !== 429 });
          }
          return { externalId: j.sid, status: 'sent', details: { to, providerStatus: j.status ?? null } };
        },
      }),
    );
  },
});
