/**
 * bench/sandbox-overhead: what running user code in the sandbox costs per run.
 *
 * Subject: `sandbox.run` of a trivial ES module (fresh QuickJS runtime + context per run, limits,
 * bootstrap, console capture, JSON in/out, disposal), awaited one at a time, in the default
 * worker mode (a pool of worker threads, one run per worker; includes the message round trip)
 * and in inline mode (same thread).
 * Baselines, same process and run: a plain function call doing the same work, and `node:vm`
 * (a fresh context per run, then the same function compiled and called in it).
 * Sizes: SANDBOX_BENCH_RUNS (default 2000) runs each, after SANDBOX_BENCH_WARMUP (200).
 */
import vm from 'node:vm';
import { createSandbox, loadQuickJS } from '../core/sandbox/index.ts';
import { envInt } from './lib.ts';

const runs = envInt('SANDBOX_BENCH_RUNS', 2000);
const warmup = envInt('SANDBOX_BENCH_WARMUP', 200);

const code = 'export default (input) => ({ sum: input.a + input.b })';
const input = { a: 1, b: 2 };

function pct(samples: number[], p: number): number {
  const s = [...samples].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const fmt = (ms: number) => (ms < 0.01 ? `${(ms * 1000).toFixed(2)} µs` : `${ms.toFixed(3)} ms`);

async function measure(label: string, fn: () => Promise<unknown> | unknown): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  const r = { p50: pct(samples, 50), p99: pct(samples, 99) };
  console.log(`${label.padEnd(44)} p50 ${fmt(r.p50).padStart(10)}   p99 ${fmt(r.p99).padStart(10)}`);
  return r;
}

const t0 = performance.now();
await loadQuickJS();
console.log(`sandbox-overhead: ${runs} runs each (after ${warmup} warm-up), Node ${process.version}; QuickJS WASM load ${(performance.now() - t0).toFixed(1)} ms (once per process)`);

const limits = { timeoutMs: 5000, cpuMs: 1000, memoryBytes: 32 * 1024 * 1024 };
const sandbox = createSandbox({ limits });
const inline = createSandbox({ limits, mode: 'inline' });
const check = await sandbox.run({ code, input });
if (!check.ok || (check.output as { sum: number }).sum !== 3) throw new Error(`sandbox check failed: ${JSON.stringify(check)}`);

const plainFn = (i: { a: number; b: number }) => ({ sum: i.a + i.b });
const plain = await measure('plain function call (JSON in/out)', () => JSON.parse(JSON.stringify(plainFn(JSON.parse(JSON.stringify(input))))));
const vmRun = await measure('node:vm (fresh context + compile + call)', () => {
  const context = vm.createContext({ input: JSON.stringify(input) });
  return JSON.parse(vm.runInContext('JSON.stringify(((i) => ({ sum: i.a + i.b }))(JSON.parse(input)))', context, { timeout: 1000 }) as string);
});
const sbInline = await measure('sandbox.run inline (fresh runtime+context)', () => inline.run({ code, input }));
const sb = await measure('sandbox.run worker (default; + thread hop)', () => sandbox.run({ code, input }));

console.log(`ratio sandbox(worker) / node:vm: p50 ${(sb.p50 / vmRun.p50).toFixed(2)}x, p99 ${(sb.p99 / vmRun.p99).toFixed(2)}x`);
console.log(`ratio sandbox(inline) / node:vm: p50 ${(sbInline.p50 / vmRun.p50).toFixed(2)}x, p99 ${(sbInline.p99 / vmRun.p99).toFixed(2)}x`);
console.log(`ratio sandbox(worker) / plain call: p50 ${(sb.p50 / plain.p50).toFixed(0)}x, p99 ${(sb.p99 / plain.p99).toFixed(0)}x`);
await sandbox.close();
