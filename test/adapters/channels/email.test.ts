import type { AddressInfo } from 'node:net';
import t from 'tap';
import PostalMime from 'postal-mime';
import { SMTPServer } from 'smtp-server';
import email from '../../../adapters/channels/email/index.ts';
import { signStandardWebhook } from '../../../plugins/channels/api.ts';
import { contractHarness, runChannelContract, until } from '../../contracts/channels.ts';
import { deadPort } from './peers.ts';

const SECRET = `whsec_${Buffer.from('email-parse-webhook-secret-0001').toString('base64')}`;

// A real SMTP server: collects every message; can refuse the next n with 451 (temporary).
const received: { envelope: { from: string; to: string[] }; raw: Buffer; parsed: Awaited<ReturnType<typeof PostalMime.parse>> }[] = [];
let failing = 0;
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  onRcptTo(address, _session, cb) {
    if (address.address.startsWith('bounce@')) {
      const err = new Error('Mailbox unavailable') as Error & { responseCode: number };
      err.responseCode = 550;
      return cb(err);
    }
    cb();
  },
  onData(stream, session, cb) {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', async () => {
      if (failing > 0) {
        failing--;
        const err = new Error('Try again later') as Error & { responseCode: number };
        err.responseCode = 451;
        return cb(err);
      }
      const raw = Buffer.concat(chunks);
      received.push({ envelope: { from: (session.envelope.mailFrom as { address: string }).address, to: session.envelope.rcptTo.map((r) => r.address) }, raw, parsed: await PostalMime.parse(raw) });
      cb();
    });
  },
});
await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
const smtpPort = (smtp.server.address() as AddressInfo).port;
t.teardown(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
const down = await deadPort();

function mime(o: { messageId: string; text: string; subject?: string; inReplyTo?: string; references?: string; from?: string; attachment?: boolean }) {
  const head = [
    `From: ${o.from ?? 'Ada Lovelace <ada@example.test>'}`,
    'To: support@trellis.test',
    `Subject: ${o.subject ?? 'Help with my order'}`,
    `Message-ID: ${o.messageId}`,
    ...(o.inReplyTo ? [`In-Reply-To: ${o.inReplyTo}`] : []),
    ...(o.references ? [`References: ${o.references}`] : []),
    'Date: Sat, 21 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
  ];
  if (!o.attachment) return [...head, 'Content-Type: text/plain; charset=utf-8', '', o.text, ''].join('\r\n');
  return [
    ...head,
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    o.text,
    '--b1',
    'Content-Type: application/pdf; name="invoice.pdf"',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 fake').toString('base64'),
    '--b1--',
    '',
  ].join('\r\n');
}
let seq = 0;
function signed(payload: string, opts: { timestamp?: number; secret?: string } = {}) {
  return { headers: { 'content-type': 'message/rfc822', ...signStandardWebhook(opts.secret ?? SECRET, `mail_${++seq}`, opts.timestamp ?? Math.floor(Date.now() / 1000), payload) }, payload };
}

const subject = {
  name: 'email',
  kind: 'email',
  adapterId: 'email',
  adapters: [email],
  config: { from: 'Support <support@trellis.test>', smtpHost: '127.0.0.1', smtpPort, inboundSecret: SECRET },
  inbound: {
    sign: ({ externalId, text, timestamp, secretOverride }: { externalId: string; text: string; timestamp?: number; secretOverride?: string }) =>
      signed(mime({ messageId: `<${externalId}@example.test>`, text }), { timestamp, secret: secretOverride }),
    storedExternalId: (id: string) => `<${id}@example.test>`,
    timestamps: true,
    perRequestSignature: true,
    signatureHeaders: ['webhook-signature', 'webhook-id', 'webhook-timestamp'],
  },
  outbound: {
    received: () => received.map((r) => (r.parsed.text ?? '').trim()),
    failNext: (n: number) => {
      failing = n;
    },
    messageExtras: { metadata: { to: 'ada@example.test' } },
    downConfig: { smtpPort: down },
    finalStatus: 'sent' as const,
  },
};

runChannelContract(t, subject);

t.test('email specifics', async (t) => {
  const h = await contractHarness(subject);
  t.teardown(() => h.app.close());
  const ch = await h.createChannel();
  const threadsOf = async () => (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
  const threadMessages = async (id: string) => (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${id}/messages`, headers: h.ws.auth })).json();

  t.test('a conversation: inbound, our reply (threaded headers), the customer\'s answer joins the same thread', async (t) => {
    const r1 = await h.post(ch.id, signed(mime({ messageId: '<q1@example.test>', text: 'Where is order 42?', subject: 'Order 42', attachment: true })));
    t.equal(r1.statusCode, 200, r1.body);
    const [thread] = await threadsOf();
    t.match(thread, { externalId: '<q1@example.test>', title: 'Order 42' });
    const [first] = await threadMessages(thread.id);
    t.match(first, { direction: 'inbound', text: /Where is order 42\?/, author: { role: 'user', email: 'ada@example.test', name: 'Ada Lovelace' }, externalId: '<q1@example.test>' });
    t.match(first.attachments, [{ name: 'invoice.pdf', contentType: 'application/pdf', sizeBytes: 13 }]);
    t.equal(first.raw.subject, 'Order 42');

    const out = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/threads/${thread.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent', name: 'Sam' }, text: 'It ships today.' } })).json();
    const sent = await until('sent', async () => {
      const m = (await threadMessages(thread.id)).find((x: { id: string }) => x.id === out.id);
      return m.status === 'sent' && m;
    });
    const mail = received.at(-1)!;
    t.same(mail.envelope.to, ['ada@example.test'], 'answered to the sender of the last inbound e-mail');
    t.equal(mail.parsed.subject, 'Re: Order 42');
    t.equal(mail.parsed.inReplyTo, '<q1@example.test>');
    t.match(mail.parsed.references, /<q1@example\.test>/);
    t.equal(mail.parsed.messageId, sent.externalId, 'our Message-ID is the externalId');

    const r2 = await h.post(ch.id, signed(mime({ messageId: '<q2@example.test>', text: 'Thanks!', subject: 'Re: Order 42', inReplyTo: sent.externalId, references: `<q1@example.test> ${sent.externalId}` })));
    t.equal(r2.statusCode, 200);
    const threads = await threadsOf();
    t.equal(threads.length, 1, 'no new thread');
    const all = await threadMessages(thread.id);
    t.same(all.map((m: { text: string }) => m.text.trim()), ['Where is order 42?', 'It ships today.', 'Thanks!']);
    t.equal(all[2].parentMessageId, out.id, 'In-Reply-To resolved to our message');
  });

  t.test('a rejected recipient fails at once (5xx); malformed MIME is a 400', async (t) => {
    const m = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'x', metadata: { to: 'bounce@example.test', subject: 'Hi' } } })).json();
    const failed = await until('failed', async () => {
      const x = (await h.messages(ch.id)).find((y) => y.id === m.id) as Record<string, any>;
      return x.status === 'failed' && x;
    });
    t.equal(failed.metadata.delivery.attempts, 1);
    t.match(failed.metadata.delivery.error, /550/);
    const empty = await h.post(ch.id, signed(''));
    t.equal(empty.statusCode, 400);
  });

  t.test('an HTML-only e-mail gets a plain-text version', async (t) => {
    const html = ['From: Bob <bob@example.test>', 'To: support@trellis.test', 'Subject: Styled', 'Message-ID: <html1@example.test>', 'MIME-Version: 1.0', 'Content-Type: text/html; charset=utf-8', '', '<html><body><p>Hello &amp; welcome</p><p>Line two<br>three</p><script>x()</script></body></html>', ''].join('\r\n');
    t.equal((await h.post(ch.id, signed(html))).statusCode, 200);
    const all = await h.allMessages(ch.id);
    const m = all.find((x) => x.externalId === '<html1@example.test>') as Record<string, any>;
    t.equal(m.text, 'Hello & welcome\nLine two\nthree');
    t.match(m.raw.html, /<p>Hello/);
  });

  t.test('secrets are write-only', async (t) => {
    const withPw = await h.createChannel({ ...subject.config, smtpUser: 'u', smtpPassword: 'pw-very-secret' });
    const info = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${withPw.id}/adapter`, headers: h.ws.auth })).json();
    t.same(info.secrets, { smtpPassword: true, inboundSecret: true });
    t.equal(info.config.smtpUser, 'u');
    t.notOk(JSON.stringify(info).includes('pw-very-secret'));
  });
});
