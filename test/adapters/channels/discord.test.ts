import { generateKeyPairSync, sign as edSign, type KeyObject } from 'node:crypto';
import t from 'tap';
import discord from '../../../adapters/channels/discord/index.ts';
import { contractHarness, runChannelContract, until } from '../../contracts/channels.ts';
import { deadPort, startHttpPeer } from './peers.ts';

const BOT = 'discord-bot-token';
const app = generateKeyPairSync('ed25519');
const rawPublic = (k: KeyObject) => Buffer.from(k.export({ format: 'jwk' }).x as string, 'base64url').toString('hex');
const intruder = generateKeyPairSync('ed25519');
let nextId = 1000n;

// A Discord REST peer: POST /channels/{id}/messages with "Authorization: Bot <token>".
const peer = await startHttpPeer((req) => {
  if (req.headers.authorization !== `Bot ${BOT}`) return { status: 401, body: { message: '401: Unauthorized', code: 0 } };
  const m = /^\/api\/v10\/channels\/(\d+)\/messages$/.exec(req.path);
  if (!m) return { status: 404, body: { message: 'Unknown Channel', code: 10003 } };
  if (m[1] === '404') return { status: 404, body: { message: 'Unknown Channel', code: 10003 } };
  const body = JSON.parse(req.body.toString());
  return { body: { id: String(nextId++), channel_id: m[1], content: body.content } };
});
t.teardown(() => peer.close());
const down = await deadPort();

// Ed25519 is deterministic: a redelivery differs from the first by its timestamp, as in real life.
// Each signing uses a timestamp one second older than the previous one (never equal).
let lastTs = Number.MAX_SAFE_INTEGER;
function signed(body: unknown, opts: { timestamp?: number; key?: KeyObject } = {}) {
  const payload = JSON.stringify(body);
  if (opts.timestamp === undefined) lastTs = Math.min(Math.floor(Date.now() / 1000), lastTs - 1);
  const ts = String(opts.timestamp ?? lastTs);
  const sig = edSign(null, Buffer.from(ts + payload), opts.key ?? app.privateKey).toString('hex');
  return { headers: { 'content-type': 'application/json', 'x-signature-ed25519': sig, 'x-signature-timestamp': ts }, payload };
}
const command = (id: string, text: string) => ({
  id,
  application_id: '1',
  type: 2,
  token: 'tok',
  channel_id: '555',
  guild_id: '9',
  member: { user: { id: '42', username: 'ada' } },
  data: { id: 'c1', name: 'ask', type: 1, options: [{ name: 'q', type: 3, value: text }] },
});

const subject = {
  name: 'discord',
  kind: 'discord',
  adapterId: 'discord',
  adapters: [discord],
  config: { publicKey: rawPublic(app.publicKey), botToken: BOT, channelId: '555', apiBaseUrl: `${peer.url}/api/v10` },
  inbound: {
    sign: ({ externalId, text, timestamp, secretOverride }: { externalId: string; text: string; timestamp?: number; secretOverride?: string }) =>
      signed(command(externalId, text), { timestamp, key: secretOverride ? intruder.privateKey : undefined }),
    timestamps: true,
    perRequestSignature: true,
    signatureHeaders: ['x-signature-ed25519', 'x-signature-timestamp'],
  },
  outbound: {
    received: () => peer.requests.map((r) => JSON.parse(r.body.toString()).content as string),
    failNext: (n: number) => peer.failNext(n, 502),
    downConfig: { apiBaseUrl: `http://127.0.0.1:${down}/api/v10` },
    finalStatus: 'delivered' as const,
  },
};

// The contract stores `text` from the command option; align the expectation with the command form.
const contractSubject = {
  ...subject,
  inbound: {
    ...subject.inbound,
    sign: (c: { externalId: string; text: string; timestamp?: number; secretOverride?: string }) => {
      const body = { ...command(c.externalId, c.text), data: { custom_id: c.text, component_type: 2 }, type: 3 };
      return signed(body, { timestamp: c.timestamp, key: c.secretOverride ? intruder.privateKey : undefined });
    },
  },
};
runChannelContract(t, contractSubject);

t.test('discord specifics', async (t) => {
  const h = await contractHarness(subject);
  t.teardown(() => h.app.close());
  const ch = await h.createChannel();

  t.test('PING answers PONG after verification', async (t) => {
    const res = await h.post(ch.id, signed({ id: 'p1', type: 1, application_id: '1', token: 't', version: 1 }));
    t.equal(res.statusCode, 200);
    t.same(res.json(), { type: 1 });
    const forged = await h.post(ch.id, signed({ id: 'p2', type: 1 }, { key: intruder.privateKey }));
    t.equal(forged.statusCode, 401);
  });

  t.test('a slash command becomes an event message in the Discord channel thread, acknowledged ephemerally', async (t) => {
    const res = await h.post(ch.id, signed(command('i-1', 'where is my order?')));
    t.equal(res.statusCode, 200);
    t.same(res.json(), { type: 4, data: { content: 'Received.', flags: 64 } });
    const threads = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
    t.equal(threads[0].externalId, '555');
    const msgs = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
    t.match(msgs[0], { kind: 'event', text: '/ask q:where is my order?', externalId: 'i-1', author: { role: 'user', name: 'ada', externalId: '42' } });

    const out = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'on its way' } })).json();
    const done = await until('delivered', async () => {
      const r = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
      const m = r.find((x: { id: string }) => x.id === out.id);
      return m.status !== 'pending' && m;
    });
    t.equal(done.status, 'delivered');
    t.match(peer.requests.at(-1)!.path, /\/channels\/555\/messages$/);
  });

  t.test('config: the public key must be 32 bytes of hex; the bot token is secret', async (t) => {
    const bad = await h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: 'd', kind: 'discord', config: { publicKey: 'xyz' } } });
    t.equal(bad.statusCode, 400);
    const info = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/adapter`, headers: h.ws.auth })).json();
    t.same(info.secrets, { botToken: true });
    t.notOk(JSON.stringify(info).includes(BOT));
  });

  t.test('an unknown Discord channel fails at once', async (t) => {
    const gone = await h.createChannel({ ...subject.config, channelId: '404' });
    const m = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${gone.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'x' } })).json();
    const failed = await until('failed', async () => {
      const x = (await h.messages(gone.id)).find((y) => y.id === m.id) as Record<string, any>;
      return x.status === 'failed' && x;
    });
    t.equal(failed.metadata.delivery.attempts, 1);
    t.match(failed.metadata.delivery.error, /Unknown Channel/);
  });
});
