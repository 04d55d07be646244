/**
 * Workflows: CRUD, versioning (code/config/ui changes increment the version; earlier versions
 * stay readable and runnable), runs through the sandbox from the endpoint and from an automation's
 * workflow resource, permissions and tenant isolation.
 */
import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import workflows from '../../../plugins/workflows/index.ts';
import automations from '../../../plugins/automations/index.ts';

const app = await buildTestApp({ plugins: [workspaces, workflows, automations], pluginConfig: { workflows: { cpuMs: 300 } } });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

const req = (method: string, url: string, auth: Record<string, string>, payload?: unknown) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: auth, ...(payload !== undefined ? { payload: payload as object } : {}) });

const v1 = 'export default (input) => ({ v: 1, doubled: input.n * 2 })';
const v2 = 'export default async (input) => { console.log("v2 here"); return { v: 2, tripled: input.n * 3 } }';

t.test('create, version on every code/config/ui change, read earlier versions', async (t) => {
  const created = await req('POST', '/workflows', ws.auth, { name: 'Pricing Flow', code: v1, config: { currency: 'EUR', steps: [1, 2] }, ui: { x: 10 } });
  t.equal(created.statusCode, 201, created.body);
  const w = created.json();
  t.match(w, { name: 'Pricing Flow', handle: 'pricing-flow', description: null, code: v1, version: 1, config: { currency: 'EUR', steps: [1, 2] }, ui: { x: 10 } });
  t.equal(w.url, `/w/${ws.handle}/workflows/pricing-flow`);
  t.equal((await req('POST', '/workflows', ws.auth, { name: 'Pricing Flow', code: v1 })).statusCode, 409);

  const renamed = (await req('PATCH', `/workflows/${w.id}`, ws.auth, { name: 'Pricing', description: 'd' })).json();
  t.equal(renamed.version, 1, 'a rename keeps the version');
  const sameConfig = (await req('PATCH', `/workflows/${w.id}`, ws.auth, { config: { steps: [1, 2], currency: 'EUR' } })).json();
  t.equal(sameConfig.version, 1, 'an equal config (other key order) keeps the version');
  const code2 = (await req('PATCH', `/workflows/${w.id}`, ws.auth, { code: v2 })).json();
  t.equal(code2.version, 2);
  const config3 = (await req('PATCH', `/workflows/${w.id}`, ws.auth, { config: { currency: 'USD' } })).json();
  t.equal(config3.version, 3);
  t.same(config3.config, { currency: 'USD' }, 'config stored as given');
  const ui4 = (await req('PATCH', `/workflows/${w.id}`, ws.auth, { ui: { x: 11, nodes: [{ id: 'a' }] } })).json();
  t.equal(ui4.version, 4);
  t.same(ui4.ui, { x: 11, nodes: [{ id: 'a' }] });

  const versions = (await req('GET', `/workflows/${w.id}/versions`, ws.auth)).json();
  t.same(versions.map((v: { version: number }) => v.version), [4, 3, 2, 1]);
  const first = await req('GET', `/workflows/${w.id}/versions/1`, ws.auth);
  t.equal(first.statusCode, 200);
  t.match(first.json(), { workflowId: w.id, version: 1, code: v1, config: { currency: 'EUR', steps: [1, 2] }, ui: { x: 10 } });
  t.equal((await req('GET', `/workflows/${w.id}/versions/9`, ws.auth)).statusCode, 404);
  t.equal((await req('GET', `/workflows/${w.id}/versions/0`, ws.auth)).statusCode, 400);
  t.equal((await req('GET', '/workflows/pricing-flow', ws.auth)).json().version, 4, 'by handle');
  t.ok((await req('GET', '/workflows', ws.auth)).json().some((x: { id: string }) => x.id === w.id));
});

t.test('run the current or an earlier version; a failing script is a failed result', async (t) => {
  const w = (await req('POST', '/workflows', ws.auth, { name: 'Runner', code: v1 })).json();
  await req('PATCH', `/workflows/${w.id}`, ws.auth, { code: v2 });
  const current = await req('POST', `/workflows/${w.id}/run`, ws.auth, { input: { n: 2 } });
  t.equal(current.statusCode, 200, current.body);
  t.match(current.json(), { workflowId: w.id, version: 2, status: 'succeeded', output: { v: 2, tripled: 6 }, error: null });
  t.equal(current.json().logs[0].message, 'v2 here');
  const old = (await req('POST', `/workflows/${w.id}/run`, ws.auth, { input: { n: 2 }, version: 1 })).json();
  t.match(old, { version: 1, status: 'succeeded', output: { v: 1, doubled: 4 } });
  t.equal((await req('POST', `/workflows/${w.id}/run`, ws.auth, { version: 7 })).statusCode, 404);

  const bad = (await req('POST', '/workflows', ws.auth, { name: 'Loop', code: 'export default () => { for (;;) {} }' })).json();
  const looped = (await req('POST', `/workflows/${bad.id}/run`, ws.auth, {})).json();
  t.equal(looped.status, 'failed');
  t.equal(looped.error.code, 'cpu_limit');
  const caps = (await req('POST', '/workflows', ws.auth, { name: 'Caps', code: 'export default (i, ctx) => [typeof ctx.fetch, Object.keys(ctx.resources).length, typeof process]' })).json();
  t.same((await req('POST', `/workflows/${caps.id}/run`, ws.auth, null)).json().output, ['undefined', 0, 'undefined'], 'no capabilities');
});

t.test('an automation runs a workflow version through a workflow resource', async (t) => {
  const w = (await req('POST', '/workflows', ws.auth, { name: 'Shared', code: v1 })).json();
  await req('PATCH', `/workflows/${w.id}`, ws.auth, { code: v2 });
  const a = await req('POST', '/automations', ws.auth, {
    name: 'Uses workflows',
    scriptSource: `export default async (input, ctx) => {
      const latest = await ctx.resources.flow.run({ n: input.n });
      const pinned = await ctx.resources.pinned.run({ n: input.n });
      return { latest: [latest.version, latest.output], pinned: [pinned.version, pinned.output, pinned.status] };
    }`,
    resources: [
      { label: 'flow', resourceType: 'workflow', resourceRef: w.id },
      { label: 'pinned', resourceType: 'workflow', resourceRef: w.id, config: { version: 1 } },
    ],
  });
  t.equal(a.statusCode, 201, a.body);
  const run = (await req('POST', `/automations/${a.json().id}/run`, ws.auth, { input: { n: 5 } })).json();
  t.equal(run.status, 'succeeded', JSON.stringify(run.error));
  t.same(run.output, { latest: [2, { v: 2, tripled: 15 }], pinned: [1, { v: 1, doubled: 10 }, 'succeeded'] });

  const missingVersion = await req('POST', '/automations', ws.auth, { name: 'Bad pin', scriptSource: 'export default () => 1', resources: [{ label: 'f', resourceType: 'workflow', resourceRef: w.id, config: { version: 99 } }] });
  t.equal(missingVersion.statusCode, 400);
  const theirs = (await req('POST', '/workflows', other.auth, { name: 'Theirs', code: v1 })).json();
  const cross = await req('POST', '/automations', ws.auth, { name: 'Cross wf', scriptSource: 'export default () => 1', resources: [{ label: 'f', resourceType: 'workflow', resourceRef: theirs.id }] });
  t.equal(cross.statusCode, 400, "another workspace's workflow is refused");
});

t.test('permissions and tenant isolation', async (t) => {
  const w = (await req('POST', '/workflows', ws.auth, { name: 'Guarded', code: v1 })).json();
  for (const role of ['viewer', 'editor']) {
    const { key } = await createApiKey(app, ws.user, ws.handle, { role });
    const auth = { authorization: `Bearer ${key}` };
    t.equal((await req('GET', `/workflows/${w.id}`, auth)).statusCode, 200);
    t.equal((await req('GET', `/workflows/${w.id}/versions/1`, auth)).statusCode, 200);
    t.equal((await req('POST', '/workflows', auth, { name: `by ${role}`, code: v1 })).statusCode, 403);
    t.equal((await req('PATCH', `/workflows/${w.id}`, auth, { code: v2 })).statusCode, 403);
    t.equal((await req('DELETE', `/workflows/${w.id}`, auth)).statusCode, 403);
    t.equal((await req('POST', `/workflows/${w.id}/run`, auth, {})).statusCode, 403);
  }
  for (const [method, url, body] of [
    ['GET', `/workflows/${w.id}`],
    ['GET', `/workflows/${w.handle}`],
    ['PATCH', `/workflows/${w.id}`, { code: 'export default () => "pwned"' }],
    ['DELETE', `/workflows/${w.id}`],
    ['GET', `/workflows/${w.id}/versions`],
    ['GET', `/workflows/${w.id}/versions/1`],
    ['POST', `/workflows/${w.id}/run`, {}],
  ] as [string, string, unknown?][]) {
    const res = await req(method, url, other.auth, body);
    t.equal(res.statusCode, 404, `${method} ${url}`);
  }
  const still = (await req('GET', `/workflows/${w.id}`, ws.auth)).json();
  t.equal(still.version, 1);
  t.equal((await req('DELETE', `/workflows/${w.id}`, ws.auth)).statusCode, 204);
  t.equal((await req('GET', `/workflows/${w.id}/versions/1`, ws.auth)).statusCode, 404);
});
