/**
 * The channel-adapter contract: every channel adapter runs this suite against a real protocol
 * peer on 127.0.0.1 (see test/adapters/channels/*.test.ts).
 *
 * Inbound (when the adapter takes inbound requests):
 * - a valid signed delivery stores one message (raw present, externalId recorded);
 * - the same externalId delivered again (freshly signed) stores nothing new;
 * - a bad signature, a missing signature, a stale timestamp (protocols with timestamps) and a
 *   replayed request (protocols with per-request signatures) answer 401 and store nothing.
 * Outbound (when the adapter delivers):
 * - an outbound message goes pending -> sent/delivered, the peer receives it and the platform's id
 *   becomes the message's externalId;
 * - a platform that fails then recovers: retried with backoff, then delivered;
 * - a platform that is down: the message stays pending while retried, then `failed` with a
 *   reason, never lost.
 */
import type { Test } from 'tap';
import type { AnyAdapter, AnyPlugin } from '../../core/registry/index.ts';
import { buildTestApp, setupWorkspace, type TestApp, type WorkspaceFixture } from '../../core/testing/index.ts';
import channels from '../../plugins/channels/index.ts';
import workspaces from '../../plugins/workspaces/index.ts';

export interface SignedRequest {
  headers: Record<string, string>;
  payload: string | Buffer;
  /** Path suffix with a query string, when the protocol signs the URL. */
  query?: string;
}

export interface InboundSpec {
  /** A correctly signed request that delivers one message with this platform id and text. */
  sign(ctx: { channelId: string; inboundUrl: string; externalId: string; text: string; timestamp?: number; secretOverride?: string }): SignedRequest | Promise<SignedRequest>;
  /** The message's `externalId` as stored (adapters may qualify the platform id). */
  storedExternalId?(externalId: string): string;
  /** The protocol carries a timestamp that is checked (stale requests refused). */
  timestamps: boolean;
  /** The protocol signs each request (an identical request again is a replay). */
  perRequestSignature: boolean;
  /** The signature covers the body (false for static-token protocols such as Telegram's secret token). */
  bodySigned?: boolean;
  /** Names of the signature headers (removed for the "missing signature" case). */
  signatureHeaders: string[];
}

export interface OutboundSpec {
  /** What the peer received so far (texts of messages delivered to it). */
  received(): string[];
  /** Make the peer answer errors to the next `n` send requests (then recover). */
  failNext(n: number): void;
  /** Extra fields for the outbound message body (recipient metadata, ...). */
  messageExtras?: Record<string, unknown>;
  /** The channel config pointing at a peer that is down (a closed port). */
  downConfig: Record<string, unknown>;
  /** The status a successful send ends in. */
  finalStatus: 'sent' | 'delivered';
}

export interface ContractSubject {
  name: string;
  kind: string;
  adapterId: string;
  adapters: AnyAdapter[];
  plugins?: AnyPlugin[];
  env?: Record<string, string>;
  /** Channel config pointing at the running peer. */
  config: Record<string, unknown>;
  inbound?: InboundSpec;
  outbound?: OutboundSpec;
}

export const CONTRACT_DELIVERY = { deliveryMaxAttempts: 3, deliveryBackoffMs: 100, deliveryMaxBackoffMs: 400 };

export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface ContractHarness {
  app: TestApp;
  ws: WorkspaceFixture;
  createChannel(config?: Record<string, unknown>): Promise<{ id: string; inboundUrl: string }>;
  messages(channelId: string): Promise<Record<string, unknown>[]>;
  allMessages(channelId: string): Promise<Record<string, unknown>[]>;
  post(channelId: string, req: SignedRequest): Promise<{ statusCode: number; body: string; headers: Record<string, unknown>; json(): any }>;
}

export async function contractHarness(subject: ContractSubject, extraPluginConfig: Record<string, Record<string, unknown>> = {}): Promise<ContractHarness> {
  const app = await buildTestApp({
    plugins: [workspaces, channels, ...(subject.plugins ?? [])],
    adapters: subject.adapters,
    env: { TRELLIS_OUTBOUND_ALLOW: '127.0.0.1', ...(subject.env ?? {}) },
    pluginConfig: { channels: { ...CONTRACT_DELIVERY }, ...extraPluginConfig },
  });
  const ws = await setupWorkspace(app);
  const get = async (url: string) => {
    const res = await app.inject({ method: 'GET', url, headers: ws.auth });
    if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  return {
    app,
    ws,
    async createChannel(config = subject.config) {
      const res = await app.inject({ method: 'POST', url: '/api/v1/channels', headers: ws.auth, payload: { name: `${subject.name} channel`, kind: subject.kind, adapter: subject.adapterId, config } });
      if (res.statusCode !== 201) throw new Error(`create channel: ${res.statusCode} ${res.body}`);
      const info = await get(`/api/v1/channels/${res.json().id}/adapter`);
      return { id: res.json().id, inboundUrl: info.inboundUrl };
    },
    messages: (channelId) => get(`/api/v1/channels/${channelId}/messages?limit=1000`),
    async allMessages(channelId) {
      const top = await get(`/api/v1/channels/${channelId}/messages?limit=1000`);
      const threads = await get(`/api/v1/channels/${channelId}/threads`);
      const inThreads = [];
      for (const th of threads) inThreads.push(...(await get(`/api/v1/channels/${channelId}/threads/${th.id}/messages?limit=1000`)));
      return [...top, ...inThreads];
    },
    post(channelId, req) {
      return app.inject({ method: 'POST', url: `/api/v1/channels/${channelId}/inbound${req.query ?? ''}`, headers: req.headers, payload: req.payload });
    },
  };
}

export function runChannelContract(t: Test, subject: ContractSubject): void {
  t.test(`channel adapter contract: ${subject.name}`, async (t) => {
    const h = await contractHarness(subject);
    t.teardown(() => h.app.close());

    const inbound = subject.inbound;
    if (inbound) {
      const stored = (id: string) => (inbound.storedExternalId ? inbound.storedExternalId(id) : id);

      t.test('a valid delivery stores one message; a duplicate delivery stores nothing new', async (t) => {
        const ch = await h.createChannel();
        const first = await h.post(ch.id, await inbound.sign({ channelId: ch.id, inboundUrl: ch.inboundUrl, externalId: 'ext-1', text: 'hello from the platform' }));
        t.ok(first.statusCode >= 200 && first.statusCode < 300, `accepted: ${first.statusCode} ${first.body}`);
        let all = await h.allMessages(ch.id);
        t.equal(all.length, 1);
        t.match(all[0], { direction: 'inbound', status: 'received', text: 'hello from the platform', externalId: stored('ext-1') });
        t.ok('raw' in all[0] && all[0].raw !== null, 'raw payload kept');
        const again = await h.post(ch.id, await inbound.sign({ channelId: ch.id, inboundUrl: ch.inboundUrl, externalId: 'ext-1', text: 'hello from the platform' }));
        t.ok(again.statusCode >= 200 && again.statusCode < 300, `duplicate accepted: ${again.statusCode} ${again.body}`);
        all = await h.allMessages(ch.id);
        t.equal(all.length, 1, 'still one message');
        const channel = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth })).json();
        t.ok(channel.lastMessageAt, 'channel lastMessageAt set');
      });

      t.test('bad, missing, stale and replayed signatures: 401 and nothing stored', async (t) => {
        const ch = await h.createChannel();
        const bad = await h.post(ch.id, await inbound.sign({ channelId: ch.id, inboundUrl: ch.inboundUrl, externalId: 'bad-1', text: 'forged', secretOverride: 'the-wrong-secret-0123456789abcdef' }));
        t.equal(bad.statusCode, 401, 'wrong secret');
        t.equal(bad.json().code, 'invalid_signature');

        const good = await inbound.sign({ channelId: ch.id, inboundUrl: ch.inboundUrl, externalId: 'tamper-1', text: 'original' });
        const tampered = { ...good, payload: Buffer.from(good.payload.toString().replace('original', 'tampered')) };
        if (inbound.bodySigned !== false) t.equal((await h.post(ch.id, tampered)).statusCode, 401, 'body changed after signing');

        const missing = { ...good, headers: Object.fromEntries(Object.entries(good.headers).filter(([k]) => !inbound.signatureHeaders.includes(k.toLowerCase()))) };
        t.equal((await h.post(ch.id, missing)).statusCode, 401, 'signature headers missing');

        if (inbound.timestamps) {
          const stale = await inbound.sign({ channelId: ch.id, inboundUrl: ch.inboundUrl, externalId: 'stale-1', text: 'old', timestamp: Math.floor(Date.now() / 1000) - 600 });
          t.equal((await h.post(ch.id, stale)).statusCode, 401, 'stale timestamp (10 minutes old)');
          const future = await inbound.sign({ channelId: ch.id, inboundUrl: ch.inboundUrl, externalId: 'stale-2', text: 'future', timestamp: Math.floor(Date.now() / 1000) + 600 });
          t.equal((await h.post(ch.id, future)).statusCode, 401, 'timestamp too far ahead');
        }
        t.equal((await h.allMessages(ch.id)).length, 0, 'nothing stored');

        if (inbound.perRequestSignature) {
          const once = await inbound.sign({ channelId: ch.id, inboundUrl: ch.inboundUrl, externalId: 'replay-1', text: 'once' });
          const a = await h.post(ch.id, once);
          t.ok(a.statusCode < 300, 'first delivery accepted');
          const replay = await h.post(ch.id, once);
          t.equal(replay.statusCode, 401, 'the identical signed request again is a replay');
          t.equal((await h.allMessages(ch.id)).length, 1, 'only the first stored');
        }
        const other = await h.app.inject({ method: 'POST', url: `/api/v1/channels/00000000-0000-7000-8000-000000000000/inbound`, headers: good.headers, payload: good.payload });
        t.equal(other.statusCode, 404, 'unknown channel');
      });
    }

    const outbound = subject.outbound;
    if (outbound) {
      const send = async (channelId: string, text: string) => {
        const res = await h.app.inject({
          method: 'POST',
          url: `/api/v1/channels/${channelId}/messages`,
          headers: h.ws.auth,
          payload: { direction: 'outbound', author: { role: 'agent', name: 'Trellis' }, text, ...(outbound.messageExtras ?? {}) },
        });
        if (res.statusCode !== 201) throw new Error(`send: ${res.statusCode} ${res.body}`);
        return res.json();
      };
      const find = async (channelId: string, id: string) => (await h.allMessages(channelId)).find((m) => m.id === id) as Record<string, any>;

      t.test('outbound: pending, then sent/delivered with the platform id', async (t) => {
        const ch = await h.createChannel();
        const m = await send(ch.id, 'outbound hello');
        t.equal(m.status, 'pending', 'queued');
        const done = await until('delivery', async () => {
          const x = await find(ch.id, m.id);
          return x.status !== 'pending' && x;
        });
        t.equal(done.status, outbound.finalStatus, JSON.stringify(done.metadata));
        t.ok(done.externalId, 'platform id recorded as externalId');
        t.ok(outbound.received().includes('outbound hello'), 'the peer received it');
        t.equal(done.metadata.delivery.attempts, 1);
      });

      t.test('outbound: a failing platform is retried with backoff, then delivered', async (t) => {
        const ch = await h.createChannel();
        outbound.failNext(1);
        const m = await send(ch.id, 'after one failure');
        const done = await until('delivery after retry', async () => {
          const x = await find(ch.id, m.id);
          return x.status !== 'pending' && x;
        });
        t.equal(done.status, outbound.finalStatus, JSON.stringify(done.metadata));
        t.equal(done.metadata.delivery.attempts, 2, 'second attempt succeeded');
        t.equal(outbound.received().filter((x) => x === 'after one failure').length, 1, 'received once');
      });

      t.test('outbound: a platform that is down leaves the message pending while retried, then failed with a reason', async (t) => {
        const ch = await h.createChannel({ ...subject.config, ...outbound.downConfig });
        const m = await send(ch.id, 'into the void');
        const retrying = await until('a failed attempt', async () => {
          const x = await find(ch.id, m.id);
          return (x.metadata?.delivery?.attempts ?? 0) >= 1 && x;
        });
        if (retrying.status === 'pending') t.ok(retrying.metadata.delivery.error, 'pending with the last error while retried');
        const failed = await until('failure', async () => {
          const x = await find(ch.id, m.id);
          return x.status === 'failed' && x;
        });
        t.equal(failed.metadata.delivery.attempts, CONTRACT_DELIVERY.deliveryMaxAttempts, 'every attempt made');
        t.type(failed.metadata.delivery.error, 'string');
        t.ok(failed.metadata.delivery.error.length > 0, `reason: ${failed.metadata.delivery.error}`);
        t.equal(failed.text, 'into the void', 'never lost');
      });
    }
  });
}
