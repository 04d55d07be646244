/**
 * bench/automations-webhook: webhook delivery -> run `succeeded`.
 *
 * Subject: BENCH_CONNECTIONS (default 20) concurrent senders POST JSON to one automation's
 * webhook URL for BENCH_SECONDS (default 10) (autocannon in a child process). Every delivery
 * starts a run of a small script (reads the body, logs once, returns a value). Reported:
 * - webhook -> run succeeded latency p50/p99: per run, `finished_at - created_at` (the run row is
 *   created when the delivery is accepted, finished when the result is persisted);
 * - sustained runs/s: succeeded runs / (last finish - first receipt);
 * - the webhook ack rate and latency seen by the senders;
 * - the same 20 senders paced at BENCH_RATE (default 200) deliveries/s, evenly spaced: latency
 *   below saturation. At saturation a closed loop of 20 senders has latency = 20 / throughput
 *   (Little's law), so the saturated p50 measures the queue, not the service.
 * Baseline, same run and load: GET /healthz (the HTTP floor of this server).
 * Goals (issue 5): p50 <= 20 ms and >= 200 runs/s on this 2-core machine.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildApp } from '../core/app.ts';
import { loadConfig } from '../core/config/index.ts';
import workspaces from '../plugins/workspaces/index.ts';
import automations from '../plugins/automations/index.ts';
import { benchDatabase, envInt, load, row, serveWithWorkspace } from './lib.ts';

const connections = envInt('BENCH_CONNECTIONS', 20);
const seconds = envInt('BENCH_SECONDS', 10);
/** Offered load of the paced phase (runs/s): the 200 runs/s, below saturation. */
const rate = envInt('BENCH_RATE', 200);

const db = await benchDatabase();
const config = loadConfig({ TRELLIS_DATA_DIR: `/tmp/trellis-bench-data-${process.pid}`, TRELLIS_LOG_LEVEL: 'silent', TRELLIS_DB_POOL_SIZE: '20' });
const trellis = await buildApp({ config, plugins: [workspaces, automations], databaseUrl: db.url, logger: false });
const { origin, base, key } = await serveWithWorkspace(trellis);
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

const created = await fetch(`${base}/automations`, {
  method: 'POST',
  headers: auth,
  body: JSON.stringify({
    name: 'Bench hook',
    scriptSource: 'export default async (input) => { console.log("order", input.body.order); return { ok: true, order: input.body.order } }',
    triggers: [{ type: 'webhook' }],
  }),
});
if (created.status !== 201) throw new Error(await created.text());
const automation = (await created.json()) as { id: string; triggers: { webhookUrl: string }[] };
const hookPath = new URL(automation.triggers[0].webhookUrl).pathname;
const hookUrl = `${origin}${hookPath}`;
const body = JSON.stringify({ order: 42, items: [{ sku: 'a', qty: 1 }] });
const check = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
if (check.status !== 202) throw new Error(`webhook answered ${check.status}: ${await check.text()}`);

const waitIdle = async () => {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const [{ n }] = await trellis.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM automations_runs WHERE status = 'running'`);
    if (n === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('runs did not finish');
};

console.log(`automations-webhook: ${connections} concurrent senders, ${seconds} s, Node ${process.version}`);
// Warm-up (JIT, pools, QuickJS), then the baseline and the subject.
await load(hookUrl, { connections, seconds: 2, method: 'POST', headers: { 'content-type': 'application/json' }, body });
await waitIdle();
await trellis.db.query('DELETE FROM automations_runs');
const baseline = await load(`${origin}/healthz`, { connections, seconds });
const cpu0 = process.cpuUsage();
const subject = await load(hookUrl, { connections, seconds, method: 'POST', headers: { 'content-type': 'application/json' }, body });
await waitIdle();
const cpu = process.cpuUsage(cpu0);

const statsSql = `
  SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'succeeded')::int AS ok,
    percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at) * 1000) AS p50,
    percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at) * 1000) AS p99,
    extract(epoch FROM max(finished_at) - min(created_at)) * 1000 AS window_ms
  FROM automations_runs`;
const [stats] = await trellis.db.query<{ n: number; ok: number; p50: number; p99: number; window_ms: number }>(statsSql);
const runsPerSec = (stats.ok / stats.window_ms) * 1000;
console.log(row('baseline GET /healthz', baseline));
console.log(row('webhook ack (202, run recorded)', subject));
console.log(`webhook -> run succeeded: ${stats.ok}/${stats.n} runs succeeded, p50 ${stats.p50.toFixed(1)} ms, p99 ${stats.p99.toFixed(1)} ms (saturated closed loop: about ${connections} / throughput)`);
console.log(`sustained: ${runsPerSec.toFixed(0)} runs/s over ${(stats.window_ms / 1000).toFixed(1)} s (goal >= 200 runs/s)`);
console.log(`server process CPU (all threads, incl. sandbox workers) per run: ${((cpu.user + cpu.system) / 1000 / stats.ok).toFixed(2)} ms -> about ${(1000 / ((cpu.user + cpu.system) / 1000 / stats.ok)).toFixed(0)} runs/s per core of Node CPU (PostgreSQL not included); load average ${(await import('node:os')).loadavg()[0].toFixed(1)}`);
console.log(`ratio webhook acks / healthz baseline: ${(subject.rps / baseline.rps).toFixed(2)}; runs/s / healthz req/s: ${(runsPerSec / baseline.rps).toFixed(3)}`);

// Paced: the same 20 senders at an offered rate below saturation, arrivals evenly spaced (a
// child process), where latency is the service time rather than the queue of a saturated server.
await trellis.db.query('DELETE FROM automations_runs');
const { stdout: pacedOut } = await promisify(execFile)(process.execPath, [path.resolve(import.meta.dirname, 'paced-senders.ts'), hookUrl, String(rate), String(seconds), String(connections), body], { maxBuffer: 1024 * 1024 });
const paced = JSON.parse(pacedOut) as { sent: number; ok: number; failed: number };
await waitIdle();
const [fixed] = await trellis.db.query<{ n: number; ok: number; p50: number; p99: number; window_ms: number }>(statsSql);
const [split] = await trellis.db.query<{ before: number; after: number }>(`
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM (e.meta->>'at')::timestamptz - r.created_at) * 1000) AS before,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.finished_at - (e.meta->>'at')::timestamptz) * 1000) AS after
  FROM automations_runs r JOIN automations_run_events e ON e.run_id = r.id AND e.type = 'log'`);
console.log(`  p50 split: receipt -> script's console.log ${split.before.toFixed(1)} ms, console.log -> result persisted ${split.after.toFixed(1)} ms`);
console.log(`paced: ${connections} senders at ${rate} deliveries/s, evenly spaced (${paced.ok}/${paced.sent} acknowledged): ${fixed.ok}/${fixed.n} runs succeeded at ${((fixed.ok / fixed.window_ms) * 1000).toFixed(0)} runs/s, webhook -> run succeeded p50 ${fixed.p50.toFixed(1)} ms, p99 ${fixed.p99.toFixed(1)} ms (goal p50 <= 20 ms at >= 200 runs/s)`);

await trellis.close();
await db.close();
