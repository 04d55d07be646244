/**
 * Run lifecycle across server instances: a server that shuts down records its runs in flight as
 * failed (never left running), and another instance on the same database sees the result.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import automations from '../../../plugins/automations/index.ts';

const env = { TRELLIS_SECRET_KEY: 'lifecycle-test-secret-key-0123456789abcdef', TRELLIS_OUTBOUND_ALLOW: '127.0.0.1' };
const plugins = [workspaces, automations];
const pluginConfig = { automations: { timeoutMs: 10_000, manualWaitMs: 50 } };

let release!: () => void;
const gate = new Promise<void>((r) => (release = r));
const peer = http.createServer(async (_req, res) => {
  await gate;
  res.end('late');
});
await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/hang`;

const nodeA = await buildTestApp({ plugins, env, pluginConfig });
const nodeB = await buildTestApp({ plugins, env, pluginConfig, databaseUrl: nodeA.databaseUrl });
t.teardown(async () => {
  release();
  await new Promise<void>((r) => peer.close(() => r()));
  await nodeB.close();
  await nodeA.close();
});
const ws = await setupWorkspace(nodeA);

t.test('a run in flight when its server stops is recorded as failed', async (t) => {
  const created = await nodeA.inject({
    method: 'POST',
    url: '/api/v1/automations',
    headers: ws.auth,
    payload: {
      name: 'Hangs',
      scriptSource: 'export default async (input, ctx) => (await ctx.fetch(input.url)).text()',
      resources: [{ label: 'peer', resourceType: 'http', resourceRef: '127.0.0.1' }],
    },
  });
  t.equal(created.statusCode, 201, created.body);
  const run = await nodeB.inject({ method: 'POST', url: `/api/v1/automations/${created.json().id}/run`, headers: ws.auth, payload: { input: { url } } });
  t.equal(run.statusCode, 200);
  t.equal(run.json().status, 'running');

  await nodeB.close();
  const after = (await nodeA.inject({ method: 'GET', url: `/api/v1/runs/${run.json().id}`, headers: ws.auth })).json();
  t.equal(after.status, 'failed', 'recorded before the server finished stopping');
  t.match(after.error.message, /shutting down/);
  t.ok(after.finishedAt);
  t.equal(after.events.at(-1).type, 'error');
});

t.test("one workspace's slow runs do not hold up another workspace's runs", async (t) => {
  let open!: () => void;
  const slowGate = new Promise<void>((r) => (open = r));
  const slowPeer = http.createServer(async (_req, res) => {
    await slowGate;
    res.end('slow');
  });
  await new Promise<void>((r) => slowPeer.listen(0, '127.0.0.1', r));
  const slowUrl = `http://127.0.0.1:${(slowPeer.address() as AddressInfo).port}/slow`;
  const app = await buildTestApp({ plugins, env, pluginConfig: { automations: { timeoutMs: 1500, manualWaitMs: 50, maxConcurrentRunsPerWorkspace: 2, maxWorkers: 3 } } });
  t.teardown(async () => {
    open();
    await new Promise<void>((r) => slowPeer.close(() => r()));
    await app.close();
  });
  const a = await setupWorkspace(app);
  const b = await setupWorkspace(app);
  const slow = (await app.inject({ method: 'POST', url: '/api/v1/automations', headers: a.auth, payload: { name: 'Slow', scriptSource: 'export default async (i, ctx) => (await ctx.fetch(i.url)).text()', resources: [{ label: 'p', resourceType: 'http', resourceRef: '127.0.0.1' }] } })).json();
  const quick = (await app.inject({ method: 'POST', url: '/api/v1/automations', headers: b.auth, payload: { name: 'Quick', scriptSource: 'export default () => "fast"' } })).json();
  const slowRuns = [];
  for (let i = 0; i < 3; i++) slowRuns.push((await app.inject({ method: 'POST', url: `/api/v1/automations/${slow.id}/run`, headers: a.auth, payload: { input: { url: slowUrl } } })).json());
  t.same(slowRuns.map((r) => r.status), ['running', 'running', 'running']);
  const q = await app.inject({ method: 'POST', url: `/api/v1/automations/${quick.id}/run`, headers: b.auth, payload: {} });
  let quickRun = q.json();
  const quickDeadline = Date.now() + 5000;
  while (quickRun.status === 'running' && Date.now() < quickDeadline) {
    await new Promise((r) => setTimeout(r, 20));
    quickRun = (await app.inject({ method: 'GET', url: `/api/v1/runs/${q.json().id}`, headers: b.auth })).json();
  }
  t.equal(quickRun.status, 'succeeded', "the other workspace's run is not queued behind them");
  t.equal(quickRun.output, 'fast');
  const stillRunning = (await app.inject({ method: 'GET', url: `/api/v1/runs/${slowRuns[0].id}`, headers: a.auth })).json();
  t.equal(stillRunning.status, 'running', 'it finished while the slow runs were still going');
  const deadline = Date.now() + 10_000;
  let finals: { status: string; error: { code: string; message: string } | null }[] = [];
  while (Date.now() < deadline) {
    finals = await Promise.all(slowRuns.map(async (r) => (await app.inject({ method: 'GET', url: `/api/v1/runs/${r.id}`, headers: a.auth })).json()));
    if (finals.every((f) => f.status !== 'running')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.same(finals.map((f) => f.status), ['failed', 'failed', 'failed'], 'every slow run ends failed (its fetch or its wait timed out)');
  // The third either waited for its workspace's turn until it gave up, or got it and timed out.
  t.match(finals[2].error?.message, /runs in progress|timed out|time limit/);
});
