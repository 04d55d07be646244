import t from 'tap';
import slack from '../../../adapters/channels/slack/index.ts';
import { hmacHex } from '../../../plugins/channels/api.ts';
import { contractHarness, runChannelContract, until } from '../../contracts/channels.ts';
import { deadPort, startHttpPeer } from './peers.ts';

const SIGNING = 'slack-signing-secret-123456';
const TOKEN = 'xoxb-test-token';
let tsCounter = 1700000000;

// A Slack Web API peer: chat.postMessage with bearer auth.
const peer = await startHttpPeer((req) => {
  if (req.path !== '/api/chat.postMessage') return { status: 404, body: { ok: false, error: 'unknown_method' } };
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return { body: { ok: false, error: 'invalid_auth' } };
  const body = JSON.parse(req.body.toString());
  if (body.channel === 'CGONE') return { body: { ok: false, error: 'channel_not_found' } };
  return { body: { ok: true, channel: body.channel, ts: `${tsCounter++}.000100`, message: { text: body.text } } };
});
t.teardown(() => peer.close());
const down = await deadPort();

function signed(body: unknown, opts: { timestamp?: number; secret?: string } = {}) {
  const payload = JSON.stringify(body);
  const ts = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  return { headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${hmacHex('sha256', opts.secret ?? SIGNING, `v0:${ts}:${payload}`)}` }, payload };
}
const event = (e: Record<string, unknown>) => ({ token: 'x', team_id: 'T1', type: 'event_callback', event_id: `Ev${Math.random()}`, event_time: 1, event: { channel: 'C0TEST', user: 'U1', ...e } });

const subject = {
  name: 'slack',
  kind: 'slack',
  adapterId: 'slack',
  adapters: [slack],
  config: { signingSecret: SIGNING, botToken: TOKEN, channel: 'C0TEST', apiBaseUrl: `${peer.url}/api` },
  inbound: {
    sign: ({ externalId, text, timestamp, secretOverride }: { externalId: string; text: string; timestamp?: number; secretOverride?: string }) =>
      signed(event({ type: 'message', text, ts: externalId }), { timestamp, secret: secretOverride }),
    storedExternalId: (id: string) => `C0TEST:${id}`,
    timestamps: true,
    perRequestSignature: true,
    signatureHeaders: ['x-slack-signature', 'x-slack-request-timestamp'],
  },
  outbound: {
    received: () => peer.requests.map((r) => JSON.parse(r.body.toString()).text as string),
    failNext: (n: number) => peer.failNext(n, 503),
    downConfig: { apiBaseUrl: `http://127.0.0.1:${down}/api` },
    finalStatus: 'delivered' as const,
  },
};

runChannelContract(t, subject);

t.test('slack specifics', async (t) => {
  const h = await contractHarness(subject);
  t.teardown(() => h.app.close());
  const ch = await h.createChannel();

  t.test('url_verification answers the challenge (signed); unsigned is refused', async (t) => {
    const ok = await h.post(ch.id, signed({ type: 'url_verification', challenge: 'c-123', token: 'x' }));
    t.equal(ok.statusCode, 200);
    t.same(ok.json(), { challenge: 'c-123' });
    const unsigned = await h.post(ch.id, { headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ type: 'url_verification', challenge: 'c' }) });
    t.equal(unsigned.statusCode, 401);
  });

  t.test('thread replies, app_mention + message stored once, bot messages and edits ignored', async (t) => {
    t.equal((await h.post(ch.id, signed(event({ type: 'message', text: 'root', ts: '1.1' })))).statusCode, 200);
    t.equal((await h.post(ch.id, signed(event({ type: 'message', text: 'reply', ts: '1.2', thread_ts: '1.1' })))).statusCode, 200);
    t.equal((await h.post(ch.id, signed(event({ type: 'app_mention', text: 'reply', ts: '1.2', thread_ts: '1.1' })))).statusCode, 200);
    t.equal((await h.post(ch.id, signed(event({ type: 'message', text: 'bot', ts: '1.3', bot_id: 'B1' })))).statusCode, 200);
    t.equal((await h.post(ch.id, signed(event({ type: 'message', subtype: 'message_changed', ts: '1.4' })))).statusCode, 200);
    const top = await h.messages(ch.id);
    t.same(top.map((m) => m.text), ['root']);
    const threads = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
    t.equal(threads.length, 1);
    t.equal(threads[0].externalId, 'C0TEST:1.1');
    const replies = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
    t.same(replies.map((m: { text: string }) => m.text), ['reply']);
    t.match(replies[0].author, { role: 'user', externalId: 'U1' });

    const out = await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'answer in thread' } });
    const done = await until('delivered', async () => {
      const r = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
      const m = r.find((x: { id: string }) => x.id === out.json().id);
      return m.status !== 'pending' && m;
    });
    t.equal(done.status, 'delivered');
    const sent = JSON.parse(peer.requests.at(-1)!.body.toString());
    t.same(sent, { channel: 'C0TEST', text: 'answer in thread', thread_ts: '1.1' }, 'posted as a thread reply');
  });

  t.test('a permanent Slack error fails at once', async (t) => {
    const gone = await h.createChannel({ ...subject.config, channel: 'CGONE' });
    const m = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${gone.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'x' } })).json();
    const failed = await until('failed', async () => {
      const x = (await h.messages(gone.id)).find((y) => y.id === m.id) as Record<string, any>;
      return x.status === 'failed' && x;
    });
    t.equal(failed.metadata.delivery.attempts, 1);
    t.match(failed.metadata.delivery.error, /channel_not_found/);
  });
});
