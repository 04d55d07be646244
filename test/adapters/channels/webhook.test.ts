import t from 'tap';
import webhook from '../../../adapters/channels/webhook/index.ts';
import { signStandardWebhook, verifyStandardWebhook } from '../../../plugins/channels/api.ts';
import { contractHarness, runChannelContract, until } from '../../contracts/channels.ts';
import { deadPort, startHttpPeer } from './peers.ts';

const SECRET = `whsec_${Buffer.from('a-test-secret-of-32-bytes-length').toString('base64')}`;

// The receiving end of outbound webhooks: verifies the Standard Webhooks signature like a real consumer.
const peer = await startHttpPeer((req) => {
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]));
  const v = verifyStandardWebhook(SECRET, headers, req.body, Math.floor(Date.now() / 1000));
  if (!v.ok) return { status: 401, body: { error: v.reason } };
  return { status: 200, body: { id: `rcv-${JSON.parse(req.body.toString()).id}` } };
});
t.teardown(() => peer.close());
const down = await deadPort();

const sign = ({ externalId, text, timestamp, secretOverride }: { externalId: string; text: string; timestamp?: number; secretOverride?: string }) => {
  const payload = JSON.stringify({ type: 'message', id: externalId, text, author: { role: 'user', name: 'Ada' } });
  const headers = signStandardWebhook(secretOverride ?? SECRET, `msg_${externalId}_${Math.random()}`, timestamp ?? Math.floor(Date.now() / 1000), payload);
  return { headers: { ...headers, 'content-type': 'application/json' }, payload };
};

const subject = {
  name: 'webhook',
  kind: 'webhook',
  adapterId: 'webhook',
  adapters: [webhook],
  config: { secret: SECRET, targetUrl: `${peer.url}/hook` },
  inbound: { sign, timestamps: true, perRequestSignature: true, signatureHeaders: ['webhook-signature', 'webhook-id', 'webhook-timestamp'] },
  outbound: {
    received: () => peer.requests.map((r) => JSON.parse(r.body.toString()).text as string),
    failNext: (n: number) => peer.failNext(n, 503),
    downConfig: { targetUrl: `http://127.0.0.1:${down}/hook` },
    finalStatus: 'delivered' as const,
  },
};

runChannelContract(t, subject);

t.test('webhook specifics', async (t) => {
  const h = await contractHarness(subject);
  t.teardown(() => h.app.close());

  t.test('the secret is never returned; config is validated', async (t) => {
    const ch = await h.createChannel();
    const info = await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/adapter`, headers: h.ws.auth });
    t.same(info.json().secrets, { secret: true });
    t.notOk(JSON.stringify(info.json()).includes(SECRET));
    t.notOk((await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth })).body.includes('whsec_'));
    const rows = await h.app.trellis.db.query<{ config: unknown; secrets: string }>('SELECT config, secrets FROM channels_channels WHERE id = $1', [ch.id]);
    t.notOk(JSON.stringify(rows[0]).includes(SECRET.slice(6)), 'encrypted at rest');
    const short = await h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: 'w', kind: 'webhook', config: { secret: 'short' } } });
    t.equal(short.statusCode, 400);
    t.match(short.json().issues, [{ path: ['config', 'secret'] }]);
    const missing = await h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: 'w', kind: 'webhook' } });
    t.equal(missing.statusCode, 400);
    const badUrl = await h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: 'w', kind: 'webhook', config: { secret: SECRET, targetUrl: 'ftp://x' } } });
    t.equal(badUrl.statusCode, 400);
    const patched = await h.app.inject({ method: 'PATCH', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth, payload: { config: { targetUrl: `${peer.url}/other` } } });
    t.equal(patched.statusCode, 200);
    const info2 = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/adapter`, headers: h.ws.auth })).json();
    t.equal(info2.config.targetUrl, `${peer.url}/other`);
    t.same(info2.secrets, { secret: true }, 'secret kept when omitted from the patch');
    const unset = await h.app.inject({ method: 'PATCH', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth, payload: { config: { targetUrl: null } } });
    t.equal(unset.statusCode, 200);
    t.notOk('targetUrl' in (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/adapter`, headers: h.ws.auth })).json().config, 'null unsets');
    const unsetRequired = await h.app.inject({ method: 'PATCH', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth, payload: { config: { secret: null } } });
    t.equal(unsetRequired.statusCode, 400, 'a required field cannot be unset');
  });

  t.test('threads by the sender\'s thread id, status reports, malformed bodies', async (t) => {
    const ch = await h.createChannel();
    const now = Math.floor(Date.now() / 1000);
    const post = (body: unknown) => {
      const payload = JSON.stringify(body);
      return h.post(ch.id, { headers: { ...signStandardWebhook(SECRET, `m${Math.random()}`, now, payload), 'content-type': 'application/json' }, payload });
    };
    t.equal((await post({ id: 'a', text: 'one', thread: { id: 'conv-1', title: 'Conversation' } })).statusCode, 200);
    t.equal((await post({ id: 'b', text: 'two', thread: { id: 'conv-1' } })).statusCode, 200);
    const threads = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
    t.equal(threads.length, 1);
    t.match(threads[0], { externalId: 'conv-1', title: 'Conversation' });
    const inThread = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${threads[0].id}/messages`, headers: h.ws.auth })).json();
    t.same(inThread.map((m: { text: string }) => m.text), ['one', 'two']);

    const out = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'tracked' } })).json();
    const sent = await until('delivered', async () => {
      const m = (await h.messages(ch.id)).find((x) => x.id === out.id);
      return m?.status === 'delivered' && m;
    });
    t.equal(sent.externalId, `rcv-${out.id}`);
    t.equal((await post({ type: 'status', id: sent.externalId, status: 'sent' })).statusCode, 200);
    t.equal((await h.messages(ch.id)).find((x) => x.id === out.id)!.status, 'delivered', 'a status never goes backwards');
    t.equal((await post({ type: 'status', id: sent.externalId, status: 'failed', reason: 'bounced' })).statusCode, 200);
    const failed = (await h.messages(ch.id)).find((x) => x.id === out.id) as Record<string, any>;
    t.equal(failed.status, 'failed');
    t.equal(failed.metadata.delivery.error, 'bounced');

    const notJson = await h.post(ch.id, { headers: { ...signStandardWebhook(SECRET, 'x1', now, 'not json'), 'content-type': 'text/plain' }, payload: 'not json' });
    t.equal(notJson.statusCode, 400, 'signed but malformed: 400');
    t.equal(notJson.json().code, 'invalid_request');
  });

  t.test('concurrent redeliveries into a new thread: one thread, one message; replay of a thread-creating request is refused', async (t) => {
    const ch = await h.createChannel();
    const body = JSON.stringify({ id: 'race-1', text: 'race', thread: { id: 'race-thread', title: 'Race' } });
    const now = Math.floor(Date.now() / 1000);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => h.post(ch.id, { headers: { ...signStandardWebhook(SECRET, `race-${i}`, now, body), 'content-type': 'application/json' }, payload: body })),
    );
    t.same(results.map((r) => r.statusCode), Array(10).fill(200));
    t.equal(results.reduce((n, r) => n + r.json().received, 0), 1, 'exactly one stored');
    const threads = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
    t.equal(threads.length, 1);
    t.equal((await h.allMessages(ch.id)).length, 1);

    const fresh = JSON.stringify({ id: 'replay-new-thread', text: 'x', thread: { id: 'another-thread' } });
    const req = { headers: { ...signStandardWebhook(SECRET, 'rn-1', now, fresh), 'content-type': 'application/json' }, payload: fresh };
    t.equal((await h.post(ch.id, req)).statusCode, 200);
    t.equal((await h.post(ch.id, req)).statusCode, 401, 'replayed');
    t.equal((await h.allMessages(ch.id)).length, 2);
  });

  t.test('a slow platform does not hold other channels\' deliveries', async (t) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const http = await import('node:http');
    const slow = http.createServer((_req, res) => void gate.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}')));
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => { slow.closeAllConnections(); slow.close(() => r()); }));
    const slowCh = await h.createChannel({ ...subject.config, targetUrl: `http://127.0.0.1:${(slow.address() as { port: number }).port}/slow` });
    const fastCh = await h.createChannel();
    const send = async (id: string) => (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'x' } })).json();
    const s1 = await send(slowCh.id);
    await until('the slow delivery in flight', async () => ((await h.app.trellis.db.query<{ l: Date | null }>('SELECT delivery_lease AS l FROM channels_messages WHERE id = $1', [s1.id]))[0].l ? true : undefined));
    const f1 = await send(fastCh.id);
    const done = await until('the other channel delivered', async () => {
      const m = (await h.messages(fastCh.id)).find((x) => x.id === f1.id);
      return m?.status === 'delivered' && m;
    });
    t.ok(done, 'delivered while the slow platform still holds its request');
    t.equal((await h.messages(slowCh.id)).find((x) => x.id === s1.id)!.status, 'pending');
    release();
    await until('the slow one delivered', async () => (await h.messages(slowCh.id)).find((x) => x.id === s1.id)?.status === 'delivered');
  });

  t.test('a delivery left pending by a crash (never queued) is re-queued by the sweeper and delivered once', async (t) => {
    const ch = await h.createChannel();
    const [{ id: wsId }] = await h.app.trellis.db.query<{ id: string }>('SELECT workspace_id AS id FROM channels_channels WHERE id = $1', [ch.id]);
    // The state a crash between commit and queueing leaves: pending, due two minutes ago, no job.
    const [{ id }] = await h.app.trellis.db.query<{ id: string }>(
      `INSERT INTO channels_messages (id, workspace_id, channel_id, direction, status, kind, text, author, delivery, delivery_next_at)
       VALUES (gen_random_uuid(), $1, $2, 'outbound', 'pending', 'text', 'orphaned', '{"role":"agent"}', '{"attempts":0,"error":null}', now() - interval '2 minutes') RETURNING id`,
      [wsId, ch.id],
    );
    const { PgBoss } = await import('pg-boss');
    const boss = new PgBoss({ connectionString: h.app.databaseUrl, schema: 'pgboss', supervise: false, schedule: false, migrate: false });
    await boss.start();
    t.teardown(() => boss.stop({ graceful: false, close: true }));
    await boss.send('channels.deliver-sweep', {}); // what the every-minute schedule enqueues
    await boss.send('channels.deliver-sweep', {}); // twice: still one delivery
    const m = await until('the orphan delivered', async () => {
      const x = (await h.messages(ch.id)).find((y) => y.id === id);
      return x?.status === 'delivered' && x;
    });
    t.equal(m.externalId, `rcv-${id}`);
    await until('both sweeps and every delivery job settled', async () => {
      const [{ n }] = await h.app.trellis.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pgboss.job WHERE name IN ('channels.deliver-sweep', 'channels.deliver') AND state IN ('created', 'retry', 'active')`);
      return n === 0;
    });
    t.equal(peer.requests.filter((r) => JSON.parse(r.body.toString()).id === id).length, 1, 'sent once');
  });

  t.test('a blocked target URL fails at once (SSRF guard), without retries', async (t) => {
    const strict = await contractHarness({ ...subject, env: { TRELLIS_OUTBOUND_ALLOW: '' } });
    t.teardown(() => strict.app.close());
    const ch = await strict.createChannel();
    const m = (await strict.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/messages`, headers: strict.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'to loopback' } })).json();
    const failed = await until('failed', async () => {
      const x = (await strict.messages(ch.id)).find((y) => y.id === m.id) as Record<string, any>;
      return x.status === 'failed' && x;
    });
    t.equal(failed.metadata.delivery.attempts, 1);
    t.match(failed.metadata.delivery.error, /not allowed/);
  });
});
