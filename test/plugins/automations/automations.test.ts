/**
 * Automations: CRUD, manual runs, runs endpoints, failure modes end to end, recovery of runs left
 * running by a dead process, permissions and tenant isolation.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import automations from '../../../plugins/automations/index.ts';

const app = await buildTestApp({
  plugins: [workspaces, automations],
  pluginConfig: { automations: { timeoutMs: 15_000, cpuMs: 2000, memoryMb: 16, manualWaitMs: 5000, recoveryIntervalMs: 100, recoveryGraceMs: 0 } },
});
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

const req = (method: string, url: string, auth: Record<string, string>, payload?: unknown) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: auth, ...(payload !== undefined ? { payload: payload as object } : {}) });

const script = `export default async function (input, ctx) {
  console.log('got', input);
  if (input && input.fail) throw new Error('asked to fail');
  return { echo: input, resources: Object.keys(ctx.resources) };
}`;

t.test('create, read, list, patch and delete an automation', async (t) => {
  const created = await req('POST', '/automations', ws.auth, {
    name: 'Echo Bot',
    description: 'echoes',
    scriptSource: script,
    triggers: [{ type: 'manual', name: 'By hand' }, { type: 'webhook', metadata: { source: 'crm' } }],
  });
  t.equal(created.statusCode, 201, created.body);
  const a = created.json();
  t.match(a, { name: 'Echo Bot', handle: 'echo-bot', description: 'echoes', enabled: true, scriptSource: script, resources: [], lastRunAt: null });
  t.equal(a.url, `/w/${ws.handle}/automations/echo-bot`);
  t.equal(a.triggers.length, 2);
  t.match(a.triggers[0], { name: 'By hand', type: 'manual', enabled: true, position: 0, config: {}, metadata: {}, webhookUrl: null });
  t.match(a.triggers[1], { type: 'webhook', position: 1, metadata: { source: 'crm' }, config: { hasSigningSecret: false } });
  t.match(a.triggers[1].webhookUrl, /^http:\/\/[^/]+\/api\/v1\/automations\/webhooks\/wh_[A-Za-z0-9]+\/[A-Za-z0-9_-]{40,}$/);

  const dup = await req('POST', '/automations', ws.auth, { name: 'Echo Bot', scriptSource: script });
  t.equal(dup.statusCode, 409);
  t.equal(dup.json().code, 'conflict');

  const got = await req('GET', `/automations/${a.id}`, ws.auth);
  t.equal(got.statusCode, 200);
  t.same(got.json(), a);
  t.same((await req('GET', '/automations/echo-bot', ws.auth)).json().id, a.id, 'by handle');
  const list = await req('GET', '/automations', ws.auth);
  t.ok(Array.isArray(list.json()));
  t.ok(list.json().some((x: { id: string }) => x.id === a.id));

  const patched = await req('PATCH', `/automations/${a.id}`, ws.auth, {
    description: null,
    enabled: false,
    triggers: [{ id: a.triggers[1].id, type: 'webhook', name: 'Renamed hook' }],
  });
  t.equal(patched.statusCode, 200, patched.body);
  const p = patched.json();
  t.equal(p.description, null);
  t.equal(p.enabled, false);
  t.equal(p.triggers.length, 1, 'the manual trigger was removed');
  t.equal(p.triggers[0].name, 'Renamed hook');
  t.equal(p.triggers[0].webhookUrl, a.triggers[1].webhookUrl, 'the webhook URL is kept');
  t.equal(p.name, 'Echo Bot', 'unchanged fields stay');

  const del = await req('DELETE', `/automations/${a.id}`, ws.auth);
  t.equal(del.statusCode, 204);
  t.equal((await req('GET', `/automations/${a.id}`, ws.auth)).statusCode, 404);
  t.equal((await req('DELETE', `/automations/${a.id}`, ws.auth)).statusCode, 404);
});

t.test('bad input is a 400, never a 500', async (t) => {
  const cases: unknown[] = [
    {},
    { name: 'x', scriptSource: 'x', extra: 1 },
    { name: 'x', scriptSource: 'x', triggers: [{ type: 'cron' }] },
    { name: 'x', scriptSource: 'x', triggers: [{ type: 'schedule', config: { cron: 'not a cron' } }] },
    { name: 'x', scriptSource: 'x', triggers: [{ type: 'schedule', config: { cron: '* * * * *', timezone: 'Mars/Base' } }] },
    { name: 'x', scriptSource: 'x', triggers: [{ type: 'schedule', config: { cron: '0 * * * * *' } }] },
    { name: 'x', scriptSource: 'x', triggers: [{ type: 'webhook', config: { signingSecret: 'plain' } }] },
    { name: 'x', scriptSource: 'x', resources: [{ label: 'd', resourceType: 'data_definition', resourceRef: 'people' }] },
    { name: 'x', scriptSource: 'x', resources: [{ label: 'c', resourceType: 'channel', resourceRef: '0190c0de-0000-7000-8000-000000000000' }] },
    { name: 'x', scriptSource: 'x', resources: [{ label: 'w', resourceType: 'workflow', resourceRef: 'abc' }] },
    { name: 'x', scriptSource: 'x', resources: [{ label: 'bad label', resourceType: 'http', resourceRef: 'example.com' }] },
    { name: 'x', scriptSource: 'x', resources: [{ label: 'h', resourceType: 'http', resourceRef: 'http://x/y' }] },
    { name: 'x', scriptSource: 'x', resources: [{ label: 'h', resourceType: 'http', resourceRef: 'a.com' }, { label: 'h', resourceType: 'http', resourceRef: 'b.com' }] },
    { name: 'x', scriptSource: 'x', triggers: [{ type: 'data_event', config: { definition: 'people' } }] },
  ];
  for (const body of cases) {
    const res = await req('POST', '/automations', ws.auth, body);
    t.equal(res.statusCode, 400, `${JSON.stringify(body)} -> ${res.body}`);
  }
  const unavailable = await req('POST', '/automations', ws.auth, cases[7]);
  t.match(unavailable.json().message, /unavailable/);
  t.equal((await req('GET', '/automations/not-a-uuid-or-handle!', ws.auth)).statusCode, 404);
  t.equal((await req('GET', '/runs/not-a-uuid', ws.auth)).statusCode, 404);
});

async function createAutomation(body: Record<string, unknown>, auth = ws.auth) {
  const res = await req('POST', '/automations', auth, { name: `A ${Math.random().toString(36).slice(2)}`, scriptSource: script, ...body });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
}

t.test('manual run: succeeded with output, events and lastRunAt', async (t) => {
  const a = await createAutomation({ triggers: [{ type: 'manual' }] });
  const res = await req('POST', `/automations/${a.id}/run`, ws.auth, { input: { hello: 'world' } });
  t.equal(res.statusCode, 200, res.body);
  const run = res.json();
  t.match(run, { automationId: a.id, triggerId: a.triggers[0].id, status: 'succeeded', triggerType: 'manual', input: { hello: 'world' }, output: { echo: { hello: 'world' }, resources: [] }, error: null });
  t.type(run.durationMs, 'number');
  t.ok(run.finishedAt);
  t.same(run.events.map((e: { type: string; level: string }) => [e.type, e.level]), [['received', 'info'], ['log', 'info'], ['result', 'info']]);
  t.same(run.events[0].payload, { hello: 'world' });
  t.equal(run.events[1].message, 'got {"hello":"world"}');
  t.same(run.events[2].payload, run.output);
  t.equal(run.events[0].runId, run.id);

  const after = await req('GET', `/automations/${a.id}`, ws.auth);
  t.ok(after.json().lastRunAt);

  const single = await req('GET', `/runs/${run.id}`, ws.auth);
  t.same(single.json(), run);
  const nested = await req('GET', `/automations/${a.id}/runs/${run.id}`, ws.auth);
  t.same(nested.json(), run);

  const summaries = await req('GET', '/runs', ws.auth);
  t.equal(summaries.statusCode, 200);
  const mine = summaries.json().find((s: { run: { id: string } }) => s.run.id === run.id);
  t.same(mine.automation, { id: a.id, name: a.name, handle: a.handle });
  t.same(mine.trigger, { id: a.triggers[0].id, name: a.triggers[0].name, type: 'manual' });
  t.same(mine.run, Object.fromEntries(Object.entries(run).filter(([k]) => k !== 'events')));
  const perAutomation = await req('GET', `/automations/${a.id}/runs`, ws.auth);
  t.same(perAutomation.json().map((s: { run: { id: string } }) => s.run.id), [run.id]);
  const noBody = await req('POST', `/automations/${a.id}/run`, ws.auth);
  t.equal(noBody.statusCode, 200, noBody.body);
  t.equal(noBody.json().input, null);
});

t.test('a failing script is a failed run, with an error event; every failure mode fails only its run', async (t) => {
  const a = await createAutomation({});
  const failed = (await req('POST', `/automations/${a.id}/run`, ws.auth, { input: { fail: true } })).json();
  t.equal(failed.status, 'failed');
  t.equal(failed.output, null);
  t.match(failed.error, { code: 'script_error', name: 'Error', message: 'asked to fail' });
  t.same(failed.events.map((e: { type: string }) => e.type), ['received', 'log', 'error']);
  t.equal(failed.events[2].level, 'error');

  const modes: [string, string][] = [
    ['export default () => { for (;;) {} }', 'cpu_limit'],
    ['export default () => new Promise(() => {})', 'never_settled'],
    ['export default () => { const a = []; for (;;) a.push({ a: [1, 2, 3] }) }', 'memory_limit'],
    ['export default function f() { return f() + 1 }', 'stack_overflow'],
    ['export default () => { for (;;) console.log("flood") }', 'log_limit'],
    ['import fs from "fs"; export default () => fs', 'invalid_module'],
    ['export default () => process.exit(1)', 'script_error'],
    ['export default () => (() => {}).constructor("return process")().exit(1)', 'script_error'],
  ];
  for (const [code, expected] of modes) {
    const b = await createAutomation({ scriptSource: code });
    const res = await req('POST', `/automations/${b.id}/run`, ws.auth, {});
    t.equal(res.statusCode, 200);
    t.equal(res.json().status, 'failed', code);
    t.equal(res.json().error.code, expected, `${code}: ${JSON.stringify(res.json().error)}`);
    t.ok(res.json().error.message.length > 0);
  }
  const flood = await createAutomation({ scriptSource: 'export default () => { for (;;) console.log("flood") }' });
  const floodRun = (await req('POST', `/automations/${flood.id}/run`, ws.auth, {})).json();
  t.equal(floodRun.events.filter((e: { type: string }) => e.type === 'log').length, 1000, 'log events are capped');
  // The server still serves and runs scripts.
  const ok = (await req('POST', `/automations/${a.id}/run`, ws.auth, { input: 1 })).json();
  t.equal(ok.status, 'succeeded');
});

t.test('a run still going after the manual wait is returned running, then finishes; ctx.fetch through an http resource', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const peer = http.createServer(async (req, res) => {
    if (req.url === '/slow') await gate;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url }));
  });
  await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => peer.close(() => r())));
  const base = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  const slow = await buildTestApp({
    plugins: [workspaces, automations],
    env: { TRELLIS_OUTBOUND_ALLOW: '127.0.0.1' },
    pluginConfig: { automations: { timeoutMs: 5000, manualWaitMs: 50 } },
  });
  t.teardown(() => slow.close());
  const w = await setupWorkspace(slow);
  const created = await slow.inject({
    method: 'POST',
    url: '/api/v1/automations',
    headers: w.auth,
    payload: {
      name: 'Waiter',
      scriptSource: 'export default async (input, ctx) => (await ctx.fetch(input.url)).json()',
      resources: [{ label: 'peer', resourceType: 'http', resourceRef: '127.0.0.1' }],
    },
  });
  t.equal(created.statusCode, 201, created.body);
  const run = await slow.inject({ method: 'POST', url: `/api/v1/automations/${created.json().id}/run`, headers: w.auth, payload: { input: { url: `${base}/slow` } } });
  t.equal(run.statusCode, 200);
  t.equal(run.json().status, 'running');
  t.equal(run.json().finishedAt, null);
  release();
  const deadline = Date.now() + 5000;
  let final;
  while (Date.now() < deadline) {
    final = (await slow.inject({ method: 'GET', url: `/api/v1/runs/${run.json().id}`, headers: w.auth })).json();
    if (final.status !== 'running') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(final.status, 'succeeded');
  t.same(final.output, { path: '/slow' });

  // Not granted for other hosts, and no ctx.fetch at all without an http resource.
  const other = await slow.inject({ method: 'POST', url: `/api/v1/automations/${created.json().id}/run`, headers: w.auth, payload: { input: { url: 'http://localhost:1/x' } } });
  t.equal(other.json().status, 'failed');
  t.match(other.json().error.message, /not among the hosts granted/);
  const none = await slow.inject({ method: 'POST', url: '/api/v1/automations', headers: w.auth, payload: { name: 'No fetch', scriptSource: 'export default (i, ctx) => typeof ctx.fetch' } });
  const noneRun = await slow.inject({ method: 'POST', url: `/api/v1/automations/${none.json().id}/run`, headers: w.auth, payload: {} });
  t.equal(noneRun.json().output, 'undefined');
});

t.test('runs left running by a dead process are failed by the recovery sweep', async (t) => {
  const a = await createAutomation({});
  const rows = await app.trellis.db.query<{ id: string }>(
    `INSERT INTO automations_runs (id, workspace_id, automation_id, trigger_type, trigger_name, status, input, deadline_at, started_at)
     SELECT gen_random_uuid(), workspace_id, id, 'manual', 'manual', 'running', '{}'::jsonb, now() - interval '1 second', now() - interval '2 minutes'
     FROM automations_automations WHERE id = $1 RETURNING id`,
    [a.id],
  );
  const runId = rows[0].id;
  const deadline = Date.now() + 5000;
  let run;
  while (Date.now() < deadline) {
    run = (await req('GET', `/runs/${runId}`, ws.auth)).json();
    if (run.status !== 'running') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  t.equal(run.status, 'failed');
  t.equal(run.error.code, 'interrupted');
  t.ok(run.finishedAt);
  t.equal(run.events.at(-1).type, 'error');
});

t.test('a disabled automation does not run', async (t) => {
  const a = await createAutomation({ enabled: false });
  const res = await req('POST', `/automations/${a.id}/run`, ws.auth, {});
  t.equal(res.statusCode, 400);
  t.equal(res.json().code, 'invalid_request');
  t.same((await req('GET', `/automations/${a.id}/runs`, ws.auth)).json(), []);
});

t.test('permissions: viewers and editors read, only admins (or granted keys) write and run', async (t) => {
  const a = await createAutomation({});
  for (const role of ['viewer', 'editor']) {
    const { key } = await createApiKey(app, ws.user, ws.handle, { role });
    const auth = { authorization: `Bearer ${key}` };
    t.equal((await req('GET', '/automations', auth)).statusCode, 200, `${role} lists`);
    t.equal((await req('GET', `/automations/${a.id}`, auth)).statusCode, 200);
    t.equal((await req('GET', '/runs', auth)).statusCode, 200);
    const create = await req('POST', '/automations', auth, { name: `by ${role}`, scriptSource: script });
    t.equal(create.statusCode, 403, `${role} cannot create`);
    t.equal(create.json().details.requiredPermission, 'automations.write');
    t.equal((await req('PATCH', `/automations/${a.id}`, auth, { name: 'x' })).statusCode, 403, `${role} cannot change`);
    t.equal((await req('DELETE', `/automations/${a.id}`, auth)).statusCode, 403);
    const run = await req('POST', `/automations/${a.id}/run`, auth, {});
    t.equal(run.statusCode, 403, `${role} cannot run`);
    t.equal(run.json().details.requiredPermission, 'automations.run');
  }
  const granted = await createApiKey(app, ws.user, ws.handle, { role: 'viewer', permissions: { automations: ['run'] } });
  const run = await req('POST', `/automations/${a.id}/run`, { authorization: `Bearer ${granted.key}` }, {});
  t.equal(run.statusCode, 200, run.body);
});

t.test("tenant isolation: another workspace's automations and runs are 404", async (t) => {
  const a = await createAutomation({});
  const run = (await req('POST', `/automations/${a.id}/run`, ws.auth, {})).json();
  for (const [method, url, body] of [
    ['GET', `/automations/${a.id}`],
    ['GET', `/automations/${a.handle}`],
    ['PATCH', `/automations/${a.id}`, { name: 'stolen' }],
    ['DELETE', `/automations/${a.id}`],
    ['POST', `/automations/${a.id}/run`, {}],
    ['GET', `/automations/${a.id}/runs`],
    ['GET', `/automations/${a.id}/runs/${run.id}`],
    ['GET', `/runs/${run.id}`],
  ] as [string, string, unknown?][]) {
    const res = await req(method, url, other.auth, body);
    t.equal(res.statusCode, 404, `${method} ${url}`);
    t.equal(res.json().code, 'not_found');
  }
  t.notOk((await req('GET', '/automations', other.auth)).json().some((x: { id: string }) => x.id === a.id));
  t.notOk((await req('GET', '/runs', other.auth)).json().some((x: { run: { id: string } }) => x.run.id === run.id));
  t.equal((await req('GET', `/automations/${a.id}`, ws.auth)).json().name, a.name, 'unchanged');
});
