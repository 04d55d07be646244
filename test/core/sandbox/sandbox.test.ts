/**
 * The sandbox: escapes and failure modes. Every failure ends only its own run, with a clear
 * error code, and the next run (and runs in flight) still work.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createSafeFetch } from '../../../core/net/index.ts';
import { createSandbox, type ResourceBinding } from '../../../core/sandbox/index.ts';

const guarded = createSandbox({ fetch: createSafeFetch(), limits: { timeoutMs: 3000, cpuMs: 500, memoryBytes: 16 * 1024 * 1024 }, maxWorkers: 4 });
t.teardown(() => guarded.close());

const peer = http.createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.setHeader('x-peer', 'yes');
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => res.end(JSON.stringify({ method: req.method, url: req.url, body })));
});
await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => peer.close(() => r())));
const peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;

const ok = 'export default async (input) => ({ doubled: input.n * 2 })';

t.test('runs the default export with input and returns its JSON output; console becomes log events', async (t) => {
  const r = await guarded.run({
    code: `export default async function (input, ctx) {
      console.log('hello', { a: 1 }); console.info('info'); console.debug('dbg'); console.warn('careful'); console.error(new TypeError('bad'));
      return { doubled: input.n * 2, hasFetch: typeof ctx.fetch, resources: Object.keys(ctx.resources) };
    }`,
    input: { n: 21 },
  });
  t.equal(r.ok, true);
  t.same(r.output, { doubled: 42, hasFetch: 'undefined', resources: [] });
  t.same(r.logs.map((l) => [l.method, l.level, l.message.split('\n')[0]]), [
    ['log', 'info', 'hello {"a":1}'],
    ['info', 'info', 'info'],
    ['debug', 'info', 'dbg'],
    ['warn', 'error', 'careful'],
    ['error', 'error', 'TypeError: bad'],
  ]);
  const sync = await guarded.run({ code: 'export default (i) => i', input: [1, 'x'] });
  t.same(sync.output, [1, 'x']);
  const undef = await guarded.run({ code: 'export default () => {}' });
  t.equal(undef.ok, true);
  t.equal(undef.output, null);
  const tla = await guarded.run({ code: 'const x = await Promise.resolve(5); export default () => x' });
  t.equal(tla.output, 5);
});

t.test('a thrown error, a rejected promise or a bad module fails the run with the message', async (t) => {
  const thrown = await guarded.run({ code: 'export default () => { throw new TypeError("nope") }' });
  t.equal(thrown.ok, false);
  t.equal(thrown.error?.code, 'script_error');
  t.equal(thrown.error?.name, 'TypeError');
  t.equal(thrown.error?.message, 'nope');
  const rejected = await guarded.run({ code: 'export default async () => { await null; throw "plain string" }' });
  t.equal(rejected.error?.code, 'script_error');
  t.equal(rejected.error?.message, 'plain string');
  const syntax = await guarded.run({ code: 'export default (' });
  t.equal(syntax.error?.code, 'invalid_module');
  const noDefault = await guarded.run({ code: 'export const x = 1' });
  t.equal(noDefault.error?.code, 'invalid_module');
  const notFn = await guarded.run({ code: 'export default 42' });
  t.equal(notFn.ok, false);
  t.match(notFn.error?.message, /default function/);
  const unserializable = await guarded.run({ code: 'export default () => { const a = {}; a.a = a; return a }' });
  t.equal(unserializable.ok, false);
});

t.test('an infinite loop hits the CPU limit while a concurrent run still finishes', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const waiting = guarded.run({
    code: 'export default async (i, ctx) => ({ got: await ctx.resources.slow.wait() })',
    capabilities: { resources: { slow: { wait: async () => (await gate, 'done') } } },
  });
  const started = Date.now();
  const loop = await guarded.run({ code: 'export default () => { for (;;) {} }' });
  t.equal(loop.ok, false);
  t.equal(loop.error?.code, 'cpu_limit');
  t.match(loop.error?.message, /CPU limit/);
  t.ok(Date.now() - started < 2500, 'stopped near the CPU limit');
  release();
  const w = await waiting;
  t.equal(w.ok, true);
  t.same(w.output, { got: 'done' });
  t.same((await guarded.run({ code: ok, input: { n: 1 } })).output, { doubled: 2 });
});

t.test('a never-resolving promise fails at once when nothing can settle it', async (t) => {
  const r = await guarded.run({ code: 'export default () => new Promise(() => {})' });
  t.equal(r.ok, false);
  t.equal(r.error?.code, 'never_settled');
  const awaited = await guarded.run({ code: 'export default async () => { await new Promise(() => {}); return 1 }' });
  t.equal(awaited.error?.code, 'never_settled');
});

t.test('the wall-clock deadline covers awaited host calls, and the host call is aborted', async (t) => {
  let aborted = false;
  const never: ResourceBinding = {
    hang: (_args, signal) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          aborted = true;
          reject(new Error('aborted'));
        });
      }),
  };
  const started = Date.now();
  const r = await guarded.run({ code: 'export default async (i, ctx) => ctx.resources.r.hang()', capabilities: { resources: { r: never } }, limits: { timeoutMs: 300 } });
  t.equal(r.ok, false);
  t.equal(r.error?.code, 'timeout');
  t.match(r.error?.message, /300 ms/);
  t.ok(Date.now() - started < 2000);
  t.equal(aborted, true, 'the host call saw the abort');
});

t.test('a memory bomb fails with memory_limit and the next run works', async (t) => {
  for (const code of [
    'export default () => { const a = []; for (;;) a.push({ a: 1, b: [1, 2, 3] }) }',
    'export default () => { let s = "x"; for (;;) s = s + s }',
    'export default () => { const a = []; for (let i = 0;; i++) a.push("y".repeat(4096) + i) }',
  ]) {
    const r = await guarded.run({ code, limits: { cpuMs: 5000, timeoutMs: 20_000 } });
    t.equal(r.ok, false, code);
    t.ok(r.error?.code === 'memory_limit' || r.error?.code === 'cpu_limit', `${code}: ${r.error?.code} ${r.error?.message}`);
  }
  const bomb = await guarded.run({ code: 'export default () => { const a = []; for (;;) a.push({ a: 1, b: [1, 2, 3] }) }', limits: { cpuMs: 5000, timeoutMs: 20_000 } });
  t.equal(bomb.error?.code, 'memory_limit');
  t.match(bomb.error?.message, /memory limit/);
  t.same((await guarded.run({ code: ok, input: { n: 2 } })).output, { doubled: 4 });
  const buffers = await guarded.run({ code: 'export default () => [typeof ArrayBuffer, typeof Uint8Array, typeof SharedArrayBuffer, typeof WeakRef]' });
  t.same(buffers.output, ['undefined', 'undefined', 'undefined', 'undefined'], 'buffers (outside the memory accounting) are not offered');
});

t.test('deep recursion fails with stack_overflow', async (t) => {
  const r = await guarded.run({ code: 'export default function f(n = 0) { return f(n + 1) + 1 }' });
  t.equal(r.ok, false);
  t.equal(r.error?.code, 'stack_overflow');
  const asyncRec = await guarded.run({ code: 'const f = async (n) => (await f(n + 1)) + 1; export default () => f(0)' });
  t.equal(asyncRec.error?.code, 'stack_overflow');
  t.same((await guarded.run({ code: ok, input: { n: 3 } })).output, { doubled: 6 });
  // Source nested deeper than the parser's stack: contained in its worker, which is replaced.
  for (const code of ['export default () => ' + '['.repeat(100000), 'export default () => eval("(".repeat(100000))']) {
    const r = await guarded.run({ code });
    t.equal(r.ok, false);
    t.equal(r.error?.code, 'stack_overflow', JSON.stringify(r.error));
    const next = await guarded.run({ code: ok, input: { n: 4 } });
    t.same(next.output, { doubled: 8 }, 'the next run works');
  }
});

t.test('a log flood fails with log_limit; log events are capped', async (t) => {
  const r = await guarded.run({ code: 'export default () => { for (;;) console.log("spam") }', limits: { maxLogEvents: 100 } });
  t.equal(r.ok, false);
  t.equal(r.error?.code, 'log_limit');
  t.equal(r.logs.length, 100);
  const big = await guarded.run({ code: 'export default () => { for (let i = 0; i < 100; i++) console.log("x".repeat(8000)) }', limits: { maxLogBytes: 100_000 } });
  t.equal(big.error?.code, 'log_limit');
  const long = await guarded.run({ code: 'export default () => { console.log("z".repeat(100000)); return 1 }' });
  t.equal(long.ok, true);
  t.ok(long.logs[0].message.length < 9000, 'a single message is cut');
});

t.test('output and input limits', async (t) => {
  const r = await guarded.run({ code: 'export default () => "x".repeat(2000)', limits: { maxOutputBytes: 1000 } });
  t.equal(r.error?.code, 'output_limit');
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const bad = await guarded.run({ code: ok, input: cyclic });
  t.equal(bad.error?.code, 'invalid_input');
});

t.test('escapes: no process, require, imports, host globals or Function-constructor way out', async (t) => {
  const r = await guarded.run({
    code: `export default async (input, ctx) => {
      const g = (function () { return this })() || globalThis;
      const viaCtor = (() => {}).constructor('return typeof process + "/" + typeof require + "/" + typeof globalThis.__trellis_host')();
      const viaChain = ctx.constructor.constructor('return Object.keys(globalThis).sort().join(",")')();
      const asyncCtor = await (async () => {}).constructor('return typeof process')();
      const genCtor = (function* () {}).constructor('yield typeof require')().next().value;
      let dyn; try { await import('node:fs'); dyn = 'imported' } catch (e) { dyn = e.message }
      let ev; try { ev = eval('typeof process') } catch (e) { ev = e.message }
      return { process: typeof process, require: typeof require, module: typeof module, std: typeof std, os: typeof os,
        g: Object.keys(g).sort().join(','), viaCtor, viaChain, asyncCtor, genCtor, dyn, ev };
    }`,
  });
  t.equal(r.ok, true, JSON.stringify(r.error));
  const o = r.output as Record<string, string>;
  t.equal(o.process, 'undefined');
  t.equal(o.require, 'undefined');
  t.equal(o.module, 'undefined');
  t.equal(o.std, 'undefined');
  t.equal(o.os, 'undefined');
  t.equal(o.viaCtor, 'undefined/undefined/undefined');
  t.equal(o.asyncCtor, 'undefined');
  t.equal(o.genCtor, 'undefined');
  t.equal(o.g, 'console', 'the only non-standard global is console');
  t.equal(o.viaChain, 'console');
  t.match(o.dyn, /not available/);
  t.equal(o.ev, 'undefined');
  for (const code of ['import fs from "fs"; export default () => 1', 'import { readFileSync } from "node:fs"; export default () => 1', 'export { default } from "./other.js"']) {
    const s = await guarded.run({ code });
    t.equal(s.ok, false, code);
    t.equal(s.error?.code, 'invalid_module');
    t.match(s.error?.message, /not available/);
  }
});

t.test('prototype pollution stays inside the run', async (t) => {
  const seen: unknown[][] = [];
  const resources: Record<string, ResourceBinding> = {
    items: {
      get: async (args) => {
        seen.push(args);
        return { id: args[0], tags: ['a'] };
      },
    },
  };
  const r = await guarded.run({
    code: `export default async (input, ctx) => {
      Object.prototype.polluted = 'yes';
      Array.prototype.push = () => 'hijacked';
      JSON.parse = () => ({ hijacked: true });
      JSON.stringify = () => '"hijacked"';
      try { ctx.resources.items.__proto__.polluted2 = 'yes' } catch (e) {}
      try { ctx.resources.items.get = () => 'replaced' } catch (e) {}
      try { ctx.resources.items.get.__proto__.call = () => 'x' } catch (e) {}
      const row = await ctx.resources.items.get('r1', { __proto__: { admin: true } });
      return { row, replaced: ctx.resources.items.get === undefined };
    }`,
    capabilities: { resources },
  });
  t.equal(r.ok, true, JSON.stringify(r.error));
  t.same(seen, [['r1', {}]], 'the host received plain JSON arguments');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'host Object.prototype untouched');
  t.equal(({} as Record<string, unknown>).polluted2, undefined);
  t.equal(typeof Array.prototype.push, 'function');
  t.equal(JSON.stringify({ a: 1 }), '{"a":1}');
  t.notOk(Object.prototype.hasOwnProperty.call(Object.prototype, 'admin'));
  const next = await guarded.run({ code: 'export default () => [({}).polluted ?? null, typeof JSON.parse("{}")]' });
  t.same(next.output, [null, 'object'], 'the next run starts clean');
  const unknownMethod = await guarded.run({ code: 'export default async (i, ctx) => ctx.resources.items.drop()', capabilities: { resources } });
  t.equal(unknownMethod.ok, false);
  t.match(unknownMethod.error?.message, /not a function/);
});

t.test('ctx.fetch: only when granted, and through the SSRF guard', async (t) => {
  const notGranted = await guarded.run({ code: 'export default (i, ctx) => typeof ctx.fetch' });
  t.equal(notGranted.output, 'undefined');
  for (const url of [`${peerUrl}/x`, 'http://127.0.0.1/', 'http://localhost/', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/', 'http://0x7f.1/', 'http://2130706433/']) {
    const r = await guarded.run({ code: `export default async (i, ctx) => { const r = await ctx.fetch(${JSON.stringify(url)}); return r.status }`, capabilities: { fetch: true } });
    t.equal(r.ok, false, url);
    t.equal(r.error?.code, 'script_error');
    t.match(r.error?.message ?? '', /not allowed|blocked|refused/i, `${url}: ${r.error?.message}`);
  }
  const caught = await guarded.run({
    code: `export default async (i, ctx) => { try { await ctx.fetch('http://169.254.169.254/'); return 'fetched' } catch (e) { return 'refused: ' + e.message } }`,
    capabilities: { fetch: true },
  });
  t.match(caught.output, /^refused: /);

  const allowed = createSandbox({ fetch: createSafeFetch({ allow: ['127.0.0.1'] }), limits: { timeoutMs: 3000 } });
  t.teardown(() => allowed.close());
  const r = await allowed.run({
    code: `export default async (i, ctx) => {
      const res = await ctx.fetch(i.url + '/hook?q=1', { method: 'POST', headers: { 'content-type': 'application/json' }, body: { hello: 'world' } });
      return { ok: res.ok, status: res.status, header: res.headers.get('X-Peer'), json: await res.json() };
    }`,
    input: { url: peerUrl },
    capabilities: { fetch: true },
  });
  t.equal(r.ok, true, JSON.stringify(r.error));
  t.same(r.output, { ok: true, status: 200, header: 'yes', json: { method: 'POST', url: '/hook?q=1', body: '{"hello":"world"}' } });
});

t.test('many concurrent runs stay isolated', async (t) => {
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      guarded.run({ code: 'export default async (input) => { globalThis.shared = (globalThis.shared ?? 0) + input.i; await null; return globalThis.shared }', input: { i } }),
    ),
  );
  t.same(results.map((r) => r.output), Array.from({ length: 30 }, (_, i) => i));
});

t.test('a run stuck in one long builtin call is stopped by its worker being terminated; the event loop never blocks', async (t) => {
  // Array#sort without a comparator runs in C: QuickJS's interrupt handler is not consulted inside it.
  const stuck = 'export default () => { const a = []; for (let i = 0; i < 1e6; i++) a.push((i * 7919) % 1000003); for (;;) { a.sort(); a.reverse() } }';
  let maxGap = 0;
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 10);
  const started = Date.now();
  const [r, other] = await Promise.all([
    guarded.run({ code: stuck, limits: { cpuMs: 800, memoryBytes: 64 * 1024 * 1024, timeoutMs: 10_000 } }),
    guarded.run({ code: 'export default async (i) => { await null; return i + 1 }', input: 41 }),
  ]);
  clearInterval(ticker);
  t.equal(r.ok, false);
  t.equal(r.error?.code, 'cpu_limit', JSON.stringify(r.error));
  t.ok(Date.now() - started < 6000, `stopped after ${Date.now() - started} ms`);
  t.equal(other.output, 42, 'a concurrent run on another worker finished');
  t.ok(maxGap < 500, `the main event loop kept ticking (largest gap ${Math.round(maxGap)} ms)`);
  t.same((await guarded.run({ code: ok, input: { n: 5 } })).output, { doubled: 10 }, 'later runs get a fresh worker');
});

t.test('inline mode (same thread) runs and limits scripts too', async (t) => {
  const inline = createSandbox({ mode: 'inline', limits: { timeoutMs: 2000, cpuMs: 300 } });
  t.teardown(() => inline.close());
  t.same((await inline.run({ code: ok, input: { n: 4 } })).output, { doubled: 8 });
  t.equal((await inline.run({ code: 'export default () => { for (;;) {} }' })).error?.code, 'cpu_limit');
  t.equal((await inline.run({ code: 'export default () => new Promise(() => {})' })).error?.code, 'never_settled');
});

t.test('a full worker pool makes later runs wait, at most one timeout', async (t) => {
  const single = createSandbox({ maxWorkers: 1, limits: { timeoutMs: 3000 } });
  t.teardown(() => single.close());
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const holder = single.run({ code: 'export default async (i, ctx) => ctx.resources.g.wait()', capabilities: { resources: { g: { wait: async () => (await gate, 'held') } } } });
  const starved = await single.run({ code: ok, input: { n: 1 }, limits: { timeoutMs: 200 } });
  t.equal(starved.ok, false);
  t.equal(starved.error?.code, 'timeout');
  t.match(starved.error?.message, /No sandbox worker became free/);
  const queued = single.run({ code: ok, input: { n: 2 } });
  release();
  t.equal((await holder).output, 'held');
  t.same((await queued).output, { doubled: 4 }, 'a waiting run gets the worker when it frees up');
});
