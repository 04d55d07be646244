/**
 * Webhook triggers end to end: delivery -> run succeeded, input shape, 404 for unknown / wrong
 * secret / disabled, Standard Webhooks signatures, duplicate delivery ids.
 */
import { createHmac, randomBytes } from 'node:crypto';
import t from 'tap';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import automations from '../../../plugins/automations/index.ts';

const app = await buildTestApp({ plugins: [workspaces, automations], pluginConfig: { automations: { timeoutMs: 3000 } } });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);

const script = `export default async (input) => { console.log(input.method); return { got: input.body, q: input.query, ua: input.headers['user-agent'] ?? null, auth: input.headers.authorization ?? null } }`;

async function createHook(extra: Record<string, unknown> = {}, config: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/automations',
    headers: ws.auth,
    payload: { name: `Hook ${Math.random().toString(36).slice(2)}`, scriptSource: script, triggers: [{ type: 'webhook', name: 'in', config }], ...extra },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  const a = res.json();
  const url = new URL(a.triggers[0].webhookUrl);
  return { a, path: url.pathname, trigger: a.triggers[0] };
}

async function waitRun(runId: string) {
  const deadline = Date.now() + 5000;
  for (;;) {
    const run = (await app.inject({ method: 'GET', url: `/api/v1/runs/${runId}`, headers: ws.auth })).json();
    if (run.status !== 'running' || Date.now() > deadline) return run;
    await new Promise((r) => setTimeout(r, 10));
  }
}

const runCount = async (automationId: string) => (await app.inject({ method: 'GET', url: `/api/v1/automations/${automationId}/runs`, headers: ws.auth })).json().length;

t.test('a delivery starts a run that succeeds; body, headers and query become the input', async (t) => {
  const { a, path, trigger } = await createHook();
  t.match(trigger.webhookUrl, new RegExp(`^${app.config.baseUrl}/api/v1/automations/webhooks/`));
  const res = await app.inject({ method: 'POST', url: `${path}?source=crm&n=2`, headers: { 'content-type': 'application/json', 'user-agent': 'tester', authorization: 'Bearer not-for-scripts' }, payload: JSON.stringify({ order: 42 }) });
  t.equal(res.statusCode, 202, res.body);
  t.equal(res.json().duplicate, false);
  const run = await waitRun(res.json().runId);
  t.equal(run.status, 'succeeded');
  t.equal(run.triggerType, 'webhook');
  t.equal(run.triggerId, trigger.id);
  t.same(run.output, { got: { order: 42 }, q: { source: 'crm', n: '2' }, ua: 'tester', auth: null });
  t.equal(run.input.method, 'POST');
  t.same(run.events.map((e: { type: string }) => e.type), ['received', 'log', 'result']);

  const text = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'text/plain' }, payload: 'plain words' });
  t.equal(text.statusCode, 202);
  t.equal((await waitRun(text.json().runId)).output.got, 'plain words');
  const form = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1&b=2' });
  t.equal(form.statusCode, 202);
  t.equal((await waitRun(form.json().runId)).output.got, 'a=1&b=2');
  const empty = await app.inject({ method: 'POST', url: path });
  t.equal(empty.statusCode, 202);
  t.equal((await waitRun(empty.json().runId)).output.got, null);
  const badJson = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json' }, payload: '{nope' });
  t.equal(badJson.statusCode, 400);
  t.equal(await runCount(a.id), 4);
});

t.test('unknown id, wrong secret, disabled trigger or automation: 404 and no run', async (t) => {
  const { a, path, trigger } = await createHook();
  const [, , , , , publicId, secret] = path.split('/');
  const attempts = [
    `/api/v1/automations/webhooks/wh_unknown/${secret}`,
    `/api/v1/automations/webhooks/${publicId}/${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`,
    `/api/v1/automations/webhooks/${publicId}/short`,
    `/api/v1/automations/webhooks/${publicId}/${secret}x`,
  ];
  for (const url of attempts) {
    const res = await app.inject({ method: 'POST', url, payload: {} });
    t.equal(res.statusCode, 404, url);
    t.equal(res.json().code, 'not_found');
  }
  await app.inject({ method: 'PATCH', url: `/api/v1/automations/${a.id}`, headers: ws.auth, payload: { triggers: [{ id: trigger.id, type: 'webhook', enabled: false }] } });
  t.equal((await app.inject({ method: 'POST', url: path, payload: {} })).statusCode, 404, 'disabled trigger');
  await app.inject({ method: 'PATCH', url: `/api/v1/automations/${a.id}`, headers: ws.auth, payload: { enabled: false, triggers: [{ id: trigger.id, type: 'webhook', enabled: true }] } });
  t.equal((await app.inject({ method: 'POST', url: path, payload: {} })).statusCode, 404, 'disabled automation');
  await app.inject({ method: 'PATCH', url: `/api/v1/automations/${a.id}`, headers: ws.auth, payload: { enabled: true } });
  t.equal((await app.inject({ method: 'POST', url: path, payload: {} })).statusCode, 202, 'enabled again');
  t.equal(await runCount(a.id), 1, 'only the last delivery ran');

  const rows = await app.trellis.db.query<{ secret_box: string }>('SELECT secret_box FROM automations_triggers WHERE id = $1', [trigger.id]);
  t.notOk(rows[0].secret_box.includes(secret), 'the secret is stored encrypted');

  await app.inject({ method: 'PATCH', url: `/api/v1/automations/${a.id}`, headers: ws.auth, payload: { triggers: [{ type: 'webhook' }] } });
  t.equal((await app.inject({ method: 'POST', url: path, payload: {} })).statusCode, 404, 'a replaced trigger no longer answers');
  await app.inject({ method: 'DELETE', url: `/api/v1/automations/${a.id}`, headers: ws.auth });
  t.equal((await app.inject({ method: 'POST', url: path, payload: {} })).statusCode, 404, 'a deleted automation no longer answers');
});

t.test('a repeated delivery id does not start a second run', async (t) => {
  const { a, path } = await createHook();
  const first = await app.inject({ method: 'POST', url: path, headers: { 'webhook-id': 'msg_1' }, payload: { n: 1 } });
  const again = await app.inject({ method: 'POST', url: path, headers: { 'webhook-id': 'msg_1' }, payload: { n: 1 } });
  t.equal(first.statusCode, 202);
  t.equal(again.statusCode, 202);
  t.equal(again.json().duplicate, true);
  t.equal(again.json().runId, first.json().runId);
  const concurrent = await Promise.all(Array.from({ length: 10 }, () => app.inject({ method: 'POST', url: path, headers: { 'idempotency-key': 'k-2' }, payload: { n: 2 } })));
  t.equal(new Set(concurrent.map((r) => r.json().runId)).size, 1, 'concurrent duplicates share one run');
  t.equal(concurrent.filter((r) => !r.json().duplicate).length, 1);
  await waitRun(first.json().runId);
  t.equal(await runCount(a.id), 2);
});

t.test('Standard Webhooks signature verification', async (t) => {
  const key = randomBytes(24);
  const secret = `whsec_${key.toString('base64')}`;
  const { a, path, trigger } = await createHook({}, { signingSecret: secret });
  t.same(trigger.config, { hasSigningSecret: true }, 'the signing secret is never returned');
  const body = JSON.stringify({ event: 'paid' });
  const sign = (id: string, ts: number, payload: string, k = key) => `v1,${createHmac('sha256', k).update(`${id}.${ts}.${payload}`).digest('base64')}`;
  const now = Math.floor(Date.now() / 1000);
  const headers = (id: string, ts: number, sig: string) => ({ 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': sig });

  const good = await app.inject({ method: 'POST', url: path, headers: headers('m1', now, `v1,bogus ${sign('m1', now, body)}`), payload: body });
  t.equal(good.statusCode, 202, good.body);
  t.same((await waitRun(good.json().runId)).output.got, { event: 'paid' });

  for (const [what, h, payload] of [
    ['no headers', { 'content-type': 'application/json' }, body],
    ['wrong key', headers('m2', now, sign('m2', now, body, randomBytes(24))), body],
    ['tampered body', headers('m3', now, sign('m3', now, body)), body.replace('paid', 'refunded')],
    ['stale timestamp', headers('m4', now - 3600, sign('m4', now - 3600, body)), body],
    ['id swapped', headers('m5', now, sign('m1', now, body)), body],
  ] as [string, Record<string, string>, string][]) {
    const res = await app.inject({ method: 'POST', url: path, headers: h, payload });
    t.equal(res.statusCode, 401, what);
    t.equal(res.json().code, 'invalid_signature', what);
  }
  t.equal(await runCount(a.id), 1);

  const cleared = await app.inject({ method: 'PATCH', url: `/api/v1/automations/${a.id}`, headers: ws.auth, payload: { triggers: [{ id: trigger.id, type: 'webhook', config: { signingSecret: null } }] } });
  t.same(cleared.json().triggers[0].config, { hasSigningSecret: false });
  t.equal((await app.inject({ method: 'POST', url: path, payload: {} })).statusCode, 202, 'unsigned accepted once the secret is cleared');
});

t.test('a workspace whose runs queue up gets 429 with retry-after instead of an unbounded backlog', async (t) => {
  const busy = await buildTestApp({ plugins: [workspaces, automations], pluginConfig: { automations: { timeoutMs: 5000, maxConcurrentRunsPerWorkspace: 1, maxQueuedRunsPerWorkspace: 2 } } });
  t.teardown(() => busy.close());
  const w = await setupWorkspace(busy);
  const slow = 'export default () => { const end = Date.now() + 400; while (Date.now() < end) {} return "done" }';
  const created = await busy.inject({ method: 'POST', url: '/api/v1/automations', headers: w.auth, payload: { name: 'Slow', scriptSource: slow, triggers: [{ type: 'webhook', name: 'in' }] } });
  const path = new URL(created.json().triggers[0].webhookUrl).pathname;
  const codes: number[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await busy.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json' }, payload: '{}' });
    codes.push(res.statusCode);
    if (res.statusCode === 429) {
      t.equal(res.headers['retry-after'], '1');
      t.equal(res.json().code, 'too_many_requests');
    }
  }
  // One run executes, two wait: the rest are refused until the queue drains.
  t.same(codes, [202, 202, 202, 429, 429, 429]);
  const runs = (await busy.inject({ method: 'GET', url: `/api/v1/automations/${created.json().id}/runs`, headers: w.auth })).json();
  t.equal(runs.length, 3, 'a refused delivery records no run');
});
