import { createHmac } from 'node:crypto';
import t from 'tap';
import sms from '../../../adapters/channels/sms/index.ts';
import { contractHarness, runChannelContract, until } from '../../contracts/channels.ts';
import { deadPort, startHttpPeer } from './peers.ts';

const SID = 'ACtest0000000000000000000000000000';
const TOKEN = 'twilio-auth-token-123';
let n = 0;

// A Twilio-compatible REST peer: POST /2010-04-01/Accounts/{sid}/Messages.json, basic auth.
const peer = await startHttpPeer((req) => {
  if (req.headers.authorization !== `Basic ${Buffer.from(`${SID}:${TOKEN}`).toString('base64')}`) return { status: 401, body: { code: 20003, message: 'Authenticate', status: 401 } };
  if (req.path !== `/2010-04-01/Accounts/${SID}/Messages.json`) return { status: 404, body: { code: 20404, message: 'Not found' } };
  const form = Object.fromEntries(new URLSearchParams(req.body.toString()));
  if (form.To === '+15550000000') return { status: 400, body: { code: 21211, message: "The 'To' number is not a valid phone number.", status: 400 } };
  return { status: 201, body: { sid: `SM${String(++n).padStart(32, '0')}`, status: 'queued', to: form.To, from: form.From, body: form.Body } };
});
t.teardown(() => peer.close());
const down = await deadPort();

// Twilio's documented algorithm, written independently of the adapter.
function twilioSign(token: string, url: string, params: Record<string, string>): string {
  let data = url;
  for (const k of Object.keys(params).sort()) data += k + params[k];
  return createHmac('sha1', token).update(Buffer.from(data, 'utf-8')).digest('base64');
}
function signed(url: string, params: Record<string, string>, token = TOKEN) {
  return { headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSign(token, url, params) }, payload: new URLSearchParams(params).toString() };
}
const incoming = (sid: string, text: string, from = '+15551230001') => ({ MessageSid: sid, SmsSid: sid, AccountSid: SID, From: from, To: '+15559990000', Body: text, NumMedia: '0', SmsStatus: 'received' });

const subject = {
  name: 'sms',
  kind: 'sms',
  adapterId: 'sms',
  adapters: [sms],
  config: { accountSid: SID, authToken: TOKEN, from: '+15559990000', apiBaseUrl: peer.url },
  inbound: {
    sign: ({ inboundUrl, externalId, text, secretOverride }: { inboundUrl: string; externalId: string; text: string; secretOverride?: string }) => signed(inboundUrl, incoming(externalId, text), secretOverride),
    timestamps: false,
    perRequestSignature: false,
    signatureHeaders: ['x-twilio-signature'],
  },
  outbound: {
    received: () => peer.requests.map((r) => new URLSearchParams(r.body.toString()).get('Body') as string),
    failNext: (k: number) => peer.failNext(k, 503),
    messageExtras: { metadata: { to: '+15551230001' } },
    downConfig: { apiBaseUrl: `http://127.0.0.1:${down}` },
    finalStatus: 'sent' as const,
  },
};

runChannelContract(t, subject);

t.test('sms specifics', async (t) => {
  const h = await contractHarness(subject);
  t.teardown(() => h.app.close());
  const ch = await h.createChannel();

  t.test('incoming SMS: a thread per number, media, TwiML answer; the signature covers the URL', async (t) => {
    const params = { ...incoming('SM1', 'photo'), NumMedia: '1', MediaUrl0: 'https://media.example.test/1', MediaContentType0: 'image/jpeg' };
    const res = await h.post(ch.id, signed(ch.inboundUrl, params));
    t.equal(res.statusCode, 200);
    t.match(res.headers['content-type'], /xml/);
    t.match(res.body, /<Response><\/Response>/);
    const wrongUrl = await h.post(ch.id, signed(`${ch.inboundUrl}?x=1`, incoming('SM2', 'x')));
    t.equal(wrongUrl.statusCode, 401, 'signed for another URL');
    const threads = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
    t.equal(threads[0].externalId, '+15551230001');
    const msgs = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
    t.match(msgs[0], { text: 'photo', author: { role: 'user', phone: '+15551230001' }, attachments: [{ contentType: 'image/jpeg', url: 'https://media.example.test/1' }] });

    // Reply in the thread: goes to the number, then the provider's status callback marks it delivered.
    const out = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'thanks!' } })).json();
    const sent = await until('sent', async () => {
      const r = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
      const m = r.find((x: { id: string }) => x.id === out.id);
      return m.status === 'sent' && m;
    });
    const form = Object.fromEntries(new URLSearchParams(peer.requests.at(-1)!.body.toString()));
    t.match(form, { To: '+15551230001', From: '+15559990000', Body: 'thanks!', StatusCallback: ch.inboundUrl });
    const cb = await h.post(ch.id, signed(ch.inboundUrl, { MessageSid: sent.externalId, MessageStatus: 'delivered', AccountSid: SID, To: '+15551230001' }));
    t.equal(cb.statusCode, 200);
    const after = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
    t.equal(after.find((x: { id: string }) => x.id === out.id).status, 'delivered', 'status callback applied');
  });

  t.test('undelivered status callback fails the message with the error code; invalid numbers fail at once', async (t) => {
    const out = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'x', metadata: { to: '+15551230002' } } })).json();
    const sent = await until('sent', async () => {
      const m = (await h.messages(ch.id)).find((x) => x.id === out.id);
      return m?.status === 'sent' && m;
    });
    await h.post(ch.id, signed(ch.inboundUrl, { MessageSid: sent.externalId as string, MessageStatus: 'undelivered', ErrorCode: '30003' }));
    const failed = (await h.messages(ch.id)).find((x) => x.id === out.id) as Record<string, any>;
    t.equal(failed.status, 'failed');
    t.equal(failed.metadata.delivery.error, 'undelivered (error 30003)');

    const bad = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'x', metadata: { to: '+15550000000' } } })).json();
    const badFailed = await until('failed', async () => {
      const m = (await h.messages(ch.id)).find((x) => x.id === bad.id) as Record<string, any>;
      return m?.status === 'failed' && m;
    });
    t.equal(badFailed.metadata.delivery.attempts, 1);
    t.match(badFailed.metadata.delivery.error, /21211/);
    const noRecipient = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'nobody' } })).json();
    const nr = await until('failed', async () => {
      const m = (await h.messages(ch.id)).find((x) => x.id === noRecipient.id) as Record<string, any>;
      return m?.status === 'failed' && m;
    });
    t.match(nr.metadata.delivery.error, /No recipient/);
  });
});
