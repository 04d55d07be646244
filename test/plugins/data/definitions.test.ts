import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import data from '../../../plugins/data/index.ts';

const app = await buildTestApp({ plugins: [workspaces, data] });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

const req = (method: string, url: string, auth: Record<string, string>, payload?: unknown) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: auth, payload: payload as object });

t.test('create, read by id / slug / handle / legacy URL, list', async (t) => {
  const res = await req('POST', '/data-definitions', ws.auth, {
    name: 'Customer Orders',
    description: 'All orders',
    fields: {
      title: { name: 'Title', type: 'text', required: true },
      amount: { name: 'Amount', type: 'number' },
      status: { name: 'Status', type: 'select', options: [{ value: 'open' }, { value: 'done', label: 'Done', color: 'green' }] },
      site: { name: 'Site', type: 'text', variant: 'url' },
    },
  });
  t.equal(res.statusCode, 201, res.body);
  const d = res.json();
  t.equal(d.handle, 'customer-orders');
  t.match(d.url, new RegExp(`^/w/${ws.handle}/data/customer-orders-${d.id}$`));
  t.same(d.fields.status.options, [
    { value: 'open', label: 'open', color: '' },
    { value: 'done', label: 'Done', color: 'green' },
  ]);
  t.equal(d.deletedAt, null);
  t.same(Object.keys(d).sort(), ['createdAt', 'deletedAt', 'description', 'fields', 'handle', 'id', 'name', 'updatedAt', 'url']);

  for (const seg of [d.id, `customer-orders-${d.id}`, `anything-${d.id}`, 'customer-orders', encodeURIComponent(d.url), encodeURIComponent(`/w/${ws.handle}/data/customer-orders`)]) {
    const g = await req('GET', `/data-definitions/${seg}`, ws.auth);
    t.equal(g.statusCode, 200, `GET by ${seg}`);
    t.equal(g.json().id, d.id);
  }
  const list = await req('GET', '/data-definitions', ws.auth);
  t.equal(list.statusCode, 200);
  t.ok(Array.isArray(list.json()), 'bare array');
  t.ok(list.json().some((x: { id: string }) => x.id === d.id));
});

t.test('field validation', async (t) => {
  const bad = async (fields: unknown, pathPart: string) => {
    const res = await req('POST', '/data-definitions', ws.auth, { name: `Bad ${Math.random()}`, fields });
    t.equal(res.statusCode, 400, `${pathPart}: ${res.body}`);
    t.equal(res.json()._tag, 'HttpApiDecodeError');
    t.ok(res.json().issues.some((i: { path: string[] }) => i.path.join('.').includes(pathPart)), `issue names ${pathPart}: ${res.body}`);
  };
  await bad({ a: { name: 'A', type: 'nope' } }, 'a');
  await bad({ a: { name: '', type: 'text' } }, 'a');
  await bad({ a: { name: 'A', type: 'number', variant: 'url' } }, 'fields.a.variant');
  await bad({ a: { name: 'A', type: 'select' } }, 'fields.a.options');
  await bad({ a: { name: 'A', type: 'select', options: [{ value: 'x' }, { value: 'x' }] } }, 'fields.a.options.1.value');
  await bad({ a: { name: 'A', type: 'text', options: [{ value: 'x' }] } }, 'fields.a.options');
  await bad({ a: { name: 'A', type: 'relationship' } }, 'fields.a.dataDefinitionId');
  await bad({ a: { name: 'A', type: 'relationship', dataDefinitionId: '00000000-0000-7000-8000-000000000000' } }, 'fields.a.dataDefinitionId');
  await bad({ id: { name: 'A', type: 'text' } }, 'fields.id');
  await bad({ 'bad-handle': { name: 'A', type: 'text' } }, 'fields');
  await bad({ a: { name: 'A', type: 'text', extra: 1 } }, 'extra');

  // a relationship to another workspace's definition is refused
  const theirs = await req('POST', '/data-definitions', other.auth, { name: 'Theirs' });
  await bad({ a: { name: 'A', type: 'relationship', dataDefinitionId: theirs.json().id } }, 'fields.a.dataDefinitionId');
  const mine = await req('POST', '/data-definitions', ws.auth, { name: 'Customers' });
  const ok = await req('POST', '/data-definitions', ws.auth, { name: 'Invoices', fields: { customer: { name: 'Customer', type: 'relationship', dataDefinitionId: 'customers' } } });
  t.equal(ok.statusCode, 201, ok.body);
  t.equal(ok.json().fields.customer.dataDefinitionId, mine.json().id, 'stored as the id');
});

t.test('handle unique per workspace (409), free again after delete, same handle in another workspace', async (t) => {
  const a = await req('POST', '/data-definitions', ws.auth, { name: 'Tasks', handle: 'tasks' });
  t.equal(a.statusCode, 201);
  const dup = await req('POST', '/data-definitions', ws.auth, { name: 'Other tasks', handle: 'tasks' });
  t.equal(dup.statusCode, 409);
  t.equal(dup.json().code, 'conflict');
  const elsewhere = await req('POST', '/data-definitions', other.auth, { name: 'Tasks', handle: 'tasks' });
  t.equal(elsewhere.statusCode, 201);
  const b = await req('POST', '/data-definitions', ws.auth, { name: 'B', handle: 'tasks-b' });
  const clash = await req('PATCH', `/data-definitions/${b.json().id}`, ws.auth, { handle: 'tasks' });
  t.equal(clash.statusCode, 409);
  const del = await req('DELETE', '/data-definitions/tasks', ws.auth);
  t.equal(del.statusCode, 204);
  t.equal((await req('GET', `/data-definitions/${a.json().id}`, ws.auth)).statusCode, 404, 'deleted is gone');
  t.notOk((await req('GET', '/data-definitions', ws.auth)).json().some((x: { id: string }) => x.id === a.json().id), 'not listed');
  const again = await req('POST', '/data-definitions', ws.auth, { name: 'Tasks again', handle: 'tasks' });
  t.equal(again.statusCode, 201, 'handle reusable');
});

t.test('patch', async (t) => {
  const a = await req('POST', '/data-definitions', ws.auth, { name: 'Notes', fields: { body: { name: 'Body', type: 'text', variant: 'long-text' } } });
  const p = await req('PATCH', `/data-definitions/${a.json().id}`, ws.auth, { name: 'Notes 2', description: null, fields: { body: { name: 'Body', type: 'text' }, pinned: { name: 'Pinned', type: 'boolean' } } });
  t.equal(p.statusCode, 200, p.body);
  t.equal(p.json().name, 'Notes 2');
  t.equal(p.json().handle, 'notes', 'handle unchanged');
  t.same(Object.keys(p.json().fields).sort(), ['body', 'pinned']);
  t.ok(p.json().updatedAt >= a.json().updatedAt);
  const badp = await req('PATCH', `/data-definitions/${a.json().id}`, ws.auth, { fields: { x: { name: 'X', type: 'multi-select', options: [] } } });
  t.equal(badp.statusCode, 400);
});

t.test('tenant isolation: another workspace gets 404 on every path-id route', async (t) => {
  const a = await req('POST', '/data-definitions', ws.auth, { name: 'Secret' });
  const id = a.json().id;
  for (const seg of [id, 'secret', `secret-${id}`]) {
    t.equal((await req('GET', `/data-definitions/${seg}`, other.auth)).statusCode, 404);
    t.equal((await req('PATCH', `/data-definitions/${seg}`, other.auth, { name: 'x' })).statusCode, 404);
    t.equal((await req('DELETE', `/data-definitions/${seg}`, other.auth)).statusCode, 404);
  }
  t.notOk((await req('GET', '/data-definitions', other.auth)).json().some((x: { id: string }) => x.id === id));
  t.equal((await req('GET', `/data-definitions/${id}`, ws.auth)).json().name, 'Secret', 'unchanged');
});

t.test('permissions: viewer reads, cannot write; editor writes', async (t) => {
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const editor = await createApiKey(app, ws.user, ws.handle, { role: 'editor' });
  const v = { authorization: `Bearer ${viewer.key}` };
  const e = { authorization: `Bearer ${editor.key}` };
  t.equal((await req('GET', '/data-definitions', v)).statusCode, 200);
  const denied = await req('POST', '/data-definitions', v, { name: 'Nope' });
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().code, 'insufficient_permissions');
  t.equal(denied.json().details.requiredPermission, 'data.write');
  const made = await req('POST', '/data-definitions', e, { name: 'By editor' });
  t.equal(made.statusCode, 201);
  t.equal((await req('PATCH', `/data-definitions/${made.json().id}`, v, { name: 'x' })).statusCode, 403);
  t.equal((await req('DELETE', `/data-definitions/${made.json().id}`, v)).statusCode, 403);
  t.equal((await req('GET', '/data-definitions', {})).statusCode, 401);
});

t.test('a first-party session works with the workspace header; a non-member gets 404', async (t) => {
  const made = await req('POST', '/data-definitions', ws.user.headers(ws.handle), { name: 'Via session' });
  t.equal(made.statusCode, 201, made.body);
  t.equal((await req('GET', `/data-definitions/${made.json().id}`, ws.user.headers(ws.handle))).statusCode, 200);
  const noHeader = await req('GET', '/data-definitions', { cookie: ws.user.cookie });
  t.equal(noHeader.statusCode, 400);
  t.equal(noHeader.json().code, 'workspace_context_required');
  const stranger = await req('GET', `/data-definitions/${made.json().id}`, other.user.headers(ws.handle));
  t.equal(stranger.statusCode, 404, 'not a member of that workspace');
});

t.test('NUL characters are a 400, not a 500', async (t) => {
  const res = await req('POST', '/data-definitions', ws.auth, { name: 'Nul\u0000name' });
  t.equal(res.statusCode, 400);
  const f = await req('POST', '/data-definitions', ws.auth, { name: 'Okay nul', fields: { a: { name: 'A\u0000', type: 'text' } } });
  t.equal(f.statusCode, 400);
  const p = await req('PATCH', '/data-definitions/okay-nul', ws.auth, { description: 'x\u0000' });
  t.ok([400, 404].includes(p.statusCode));
});
