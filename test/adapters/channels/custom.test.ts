import t from 'tap';
import acmeChat from '../../../examples/channel-adapter/index.ts';
import { hmacHex } from '../../../plugins/channels/api.ts';
import { contractHarness, runChannelContract, until } from '../../contracts/channels.ts';
import { deadPort, startHttpPeer } from './peers.ts';

const TOKEN = 'acme-api-token';
const SECRET = 'acme-webhook-secret-0123';
let n = 0;

// An "Acme Chat" API peer.
const peer = await startHttpPeer((req) => {
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return { status: 401, body: { error: 'unauthorized' } };
  if (!/^\/v1\/conversations\/[^/]+\/messages$/.test(req.path)) return { status: 404, body: { error: 'no such conversation' } };
  return { status: 201, body: { id: `acme-${++n}` } };
});
t.teardown(() => peer.close());
const down = await deadPort();

function signed(body: unknown, opts: { timestamp?: number; secret?: string } = {}) {
  const payload = JSON.stringify(body);
  const ts = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  return { headers: { 'content-type': 'application/json', 'x-acme-timestamp': ts, 'x-acme-signature': `sha256=${hmacHex('sha256', opts.secret ?? SECRET, `${ts}.${payload}`)}` }, payload };
}
const created = (id: string, text: string) => ({ event: 'message.created', delivery: Math.random(), message: { id, text, sender: { id: 'u1', name: 'Ada' } } });

const subject = {
  name: 'custom (examples/channel-adapter: acme-chat)',
  kind: 'custom',
  adapterId: 'acme-chat',
  adapters: [acmeChat],
  config: { baseUrl: peer.url, apiToken: TOKEN, webhookSecret: SECRET, defaultConversation: 'c1' },
  inbound: {
    sign: ({ externalId, text, timestamp, secretOverride }: { externalId: string; text: string; timestamp?: number; secretOverride?: string }) => signed(created(externalId, text), { timestamp, secret: secretOverride }),
    timestamps: true,
    perRequestSignature: true,
    signatureHeaders: ['x-acme-signature', 'x-acme-timestamp'],
  },
  outbound: {
    received: () => peer.requests.map((r) => JSON.parse(r.body.toString()).text as string),
    failNext: (k: number) => peer.failNext(k, 503),
    downConfig: { baseUrl: `http://127.0.0.1:${down}` },
    finalStatus: 'sent' as const,
  },
};

runChannelContract(t, subject);

t.test('the example: conversations become threads; status webhooks deliver', async (t) => {
  const h = await contractHarness(subject);
  t.teardown(() => h.app.close());
  const ch = await h.createChannel();
  const res = await h.post(ch.id, signed({ event: 'message.created', message: { id: 'm1', conversation_id: 'conv-9', text: 'hi', sender: { name: 'Ada' } } }));
  t.equal(res.statusCode, 200);
  const [thread] = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
  t.equal(thread.externalId, 'conv-9');
  const out = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/threads/${thread.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'hello Ada' } })).json();
  const sent = await until('sent', async () => {
    const list = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${thread.id}/messages`, headers: h.ws.auth })).json();
    const m = list.find((x: { id: string }) => x.id === out.id);
    return m.status === 'sent' && m;
  });
  t.match(peer.requests.at(-1)!.path, '/v1/conversations/conv-9/messages');
  t.equal((await h.post(ch.id, signed({ event: 'message.status', message_id: sent.externalId, status: 'delivered' }))).statusCode, 200);
  const list = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${thread.id}/messages`, headers: h.ws.auth })).json();
  t.equal(list.find((x: { id: string }) => x.id === out.id).status, 'delivered');
  const unknownAdapter = await h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: 'x', kind: 'custom', adapter: 'acme-chat-2' } });
  t.equal(unknownAdapter.statusCode, 400);
  const wrongKind = await h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: 'x', kind: 'slack', adapter: 'acme-chat', config: subject.config } });
  t.equal(wrongKind.statusCode, 400, 'the adapter serves kind custom only');
});
