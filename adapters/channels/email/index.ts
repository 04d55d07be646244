/**
 * The `email` channel adapter.
 * - Outbound: SMTP through nodemailer (`smtpHost`, `smtpPort`, `secure`, optional `smtpUser` /
 *   `smtpPassword`). Recipient: `metadata.to` of the message, else the sender of the last inbound
 *   e-mail of the thread. Subject: `metadata.subject`, else "Re: <thread title>". Replies carry
 *   In-Reply-To / References of the last inbound e-mail, so mail clients thread them. The
 *   Message-ID is `<message id@from domain>` (stable across retries) and becomes the externalId;
 *   the message is `sent` when the relay accepts it. 5xx SMTP answers fail at once, others retry.
 * - Inbound: a parse webhook (your MTA or provider POSTs the raw MIME message, any content type,
 *   to the channel's inbound URL) signed with Standard Webhooks using `inboundSecret`. The MIME
 *   is parsed with postal-mime; externalId = Message-ID (stored once); threading: a message whose
 *   In-Reply-To / References names a stored message joins that message's thread, else a thread
 *   keyed by the root of References (or its own Message-ID) is created with the subject as title.
 *   Attachments are listed (name, type, size); their bytes are not stored.
 */
import { createHash } from 'node:crypto';
import nodemailer from 'nodemailer';
import PostalMime from 'postal-mime';
import Type from 'typebox';
import { InvalidRequest } from '../../../core/errors/index.ts';
import { defineAdapter } from '../../../core/registry/index.ts';
import { DeliveryError, channelAdapter, channelAdaptersPoint, verifyStandardWebhook, type MessageAuthor } from '../../../plugins/channels/api.ts';

const config = Type.Object(
  {
    from: Type.String({ minLength: 3, description: 'Sender, e.g. "Support <support@example.com>"' }),
    smtpHost: Type.Optional(Type.String({ minLength: 1 })),
    smtpPort: Type.Integer({ minimum: 1, maximum: 65535, default: 587 }),
    secure: Type.Boolean({ default: false, description: 'TLS from the first byte (port 465); otherwise STARTTLS when offered' }),
    requireTLS: Type.Boolean({ default: false }),
    smtpUser: Type.Optional(Type.String({ minLength: 1 })),
    smtpPassword: Type.Optional(Type.String({ minLength: 1, description: 'secret' })),
    inboundSecret: Type.Optional(Type.String({ minLength: 16, description: 'Standard Webhooks secret that signs the parse webhook (secret)' })),
    toleranceSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 300 }),
  },
  { additionalProperties: false },
);
interface Config {
  from: string;
  smtpHost?: string;
  smtpPort: number;
  secure: boolean;
  requireTLS: boolean;
  smtpUser?: string;
  smtpPassword?: string;
  inboundSecret?: string;
  toleranceSeconds: number;
}

const ids = (s: string | undefined): string[] => (s ? (s.match(/<[^<>\s]+>/g) ?? []) : []);

/** Plain text of an HTML-only e-mail (tags dropped, line breaks kept, common entities decoded). */
function htmlToText(html: string): string {
  return html
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/gi, '')
    .replace(/<br\s*\/?>|<\/(p|div|li|tr|h[1-6])>/gi, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function mailbox(a: unknown): { name?: string; address?: string } {
  const x = a as { name?: string; address?: string; group?: { name?: string; address?: string }[] } | undefined;
  if (!x) return {};
  if (x.group?.length) return x.group[0];
  return x;
}

export default defineAdapter({
  id: 'channels-email',
  description: 'Channel adapter `email`: SMTP out (nodemailer), raw MIME parse webhook in (postal-mime)',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(
      channelAdaptersPoint,
      channelAdapter<Config>({
        id: 'email',
        kinds: ['email'],
        description: 'E-mail over SMTP and an inbound parse webhook',
        config,
        secretFields: ['smtpPassword', 'inboundSecret'],
        async inbound(req, channel) {
          if (!channel.config.inboundSecret) return { ok: false, reason: 'the channel has no inboundSecret' };
          const v = verifyStandardWebhook(channel.config.inboundSecret, req.headers, req.rawBody, req.now, channel.config.toleranceSeconds);
          if (!v.ok) return v;
          if (req.rawBody.length === 0) throw new InvalidRequest('The body must be a raw MIME message.');
          let email: Awaited<ReturnType<typeof PostalMime.parse>>;
          try {
            email = await PostalMime.parse(req.rawBody);
          } catch (err) {
            throw new InvalidRequest(`The body is not a parseable MIME message: ${(err as Error).message}`);
          }
          if (!email.from && !email.messageId && !email.text) throw new InvalidRequest('The body is not a MIME message (no From, Message-ID or text).');
          const messageId = ids(email.messageId)[0] ?? `<${createHash('sha256').update(req.rawBody).digest('hex')}@trellis.invalid>`;
          const references = [...ids(email.inReplyTo), ...ids(email.references)];
          const root = ids(email.references)[0] ?? ids(email.inReplyTo)[0] ?? messageId;
          const from = mailbox(email.from);
          const author: MessageAuthor = { role: 'user', ...(from.address ? { email: from.address } : {}), ...(from.name ? { name: from.name } : {}) };
          const addrs = (list: unknown[] | undefined) => (list ?? []).map((a) => mailbox(a).address).filter(Boolean);
          return {
            ok: true,
            replayKey: v.signature,
            messages: [
              {
                externalId: messageId,
                text: email.text ?? (email.html ? htmlToText(email.html) : null),
                author,
                raw: {
                  messageId,
                  subject: email.subject ?? null,
                  from: from.address ?? null,
                  to: addrs(email.to),
                  cc: addrs(email.cc),
                  date: email.date ?? null,
                  inReplyTo: email.inReplyTo ?? null,
                  references: ids(email.references),
                  headers: email.headers.slice(0, 100),
                  html: email.html ? email.html.slice(0, 256 * 1024) : null,
                },
                metadata: { subject: email.subject ?? null },
                attachments: email.attachments.map((a) => ({
                  name: a.filename ?? 'attachment',
                  contentType: a.mimeType,
                  sizeBytes: typeof a.content === 'string' ? Buffer.byteLength(a.content) : a.content.byteLength,
                  metadata: { disposition: a.disposition, ...(a.contentId ? { contentId: a.contentId } : {}) },
                })),
                references,
                thread: { externalId: root, title: email.subject ?? null },
              },
            ],
          };
        },
        async outbound({ channel, message, thread, lastInbound }) {
          const c = channel.config;
          if (!c.smtpHost) throw new DeliveryError('The channel has no smtpHost for outbound e-mail.', { permanent: true });
          const meta = (message.metadata ?? {}) as Record<string, unknown>;
          const to = (typeof meta.to === 'string' || Array.isArray(meta.to) ? meta.to : undefined) ?? lastInbound?.author.email;
          if (!to || (Array.isArray(to) && to.length === 0)) throw new DeliveryError('No recipient: set metadata.to, or answer in a thread with an inbound e-mail.', { permanent: true });
          const title = thread?.title ?? (lastInbound?.metadata as { subject?: string } | null)?.subject ?? null;
          const subject = typeof meta.subject === 'string' ? meta.subject : title ? (/^re:/i.test(title) ? title : `Re: ${title}`) : `Message from ${channel.name}`;
          const domain = /@([^>\s]+)>?\s*$/.exec(c.from)?.[1] ?? 'trellis.invalid';
          const messageId = `<${message.id}@${domain}>`;
          const parentId = lastInbound?.externalId && /^<.+>$/.test(lastInbound.externalId) ? lastInbound.externalId : undefined;
          const parentRefs = ((lastInbound?.raw as { references?: string[] } | null)?.references ?? []).filter((x) => typeof x === 'string');
          const transport = nodemailer.createTransport({
            host: c.smtpHost,
            port: c.smtpPort,
            secure: c.secure,
            requireTLS: c.requireTLS,
            ...(c.smtpUser ? { auth: { user: c.smtpUser, pass: c.smtpPassword ?? '' } } : {}),
            connectionTimeout: 15_000,
            greetingTimeout: 10_000,
            socketTimeout: 30_000,
          });
          try {
            const info = await transport.sendMail({
              from: c.from,
              to: to as string | string[],
              subject,
              text: message.text ?? '',
              messageId,
              ...(parentId ? { inReplyTo: parentId, references: [...parentRefs, parentId] } : {}),
              attachments: [],
            });
            return { externalId: info.messageId ?? messageId, status: 'sent', details: { accepted: info.accepted, response: info.response } };
          } catch (err) {
            const e = err as { responseCode?: number; code?: string; message: string };
            const permanent = (e.responseCode !== undefined && e.responseCode >= 500) || e.code === 'EAUTH' || e.code === 'EENVELOPE';
            throw new DeliveryError(`SMTP: ${e.message}`, { permanent });
          } finally {
            transport.close();
          }
        },
      }),
    );
  },
});
