import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import { definePlugin } from '../../../core/registry/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import data from '../../../plugins/data/index.ts';
import { DATA_ROW_EVENTS, dataServiceRef, type DataRowEvent } from '../../../plugins/data/api.ts';

/** Records the row events the data plugin publishes, and exposes the DataService over a route. */
const seen: { topic: string; workspaceId: string; payload: DataRowEvent }[] = [];
const probe = definePlugin({
  id: 'probe',
  description: 'records data events',
  deps: { data: dataServiceRef },
  setup(ctx) {
    for (const topic of DATA_ROW_EVENTS) ctx.events.subscribe<DataRowEvent>(topic, (payload, meta) => void seen.push({ topic, workspaceId: meta.workspaceId, payload }));
    ctx.routes((app) => {
      app.get('/probe/:def', { config: { permission: 'data.read' } }, async (request) =>
        ctx.deps.data.query(request.workspace!.id, (request.params as { def: string }).def, { pageSize: 2, sort: '-amount' }),
      );
    });
  },
});

const app = await buildTestApp({ plugins: [workspaces, data, probe], pluginConfig: { data: { maxBatchRows: 50, maxRowBytes: 2048 } } });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

const req = (method: string, url: string, auth: Record<string, string>, payload?: unknown) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: auth, payload: payload as object });
const idle = () => app.trellis.app.ready();

const customers = (await req('POST', '/data-definitions', ws.auth, { name: 'Customers', fields: { name: { name: 'Name', type: 'text' }, email: { name: 'Email', type: 'text', unique: true } } })).json();
const theirCustomers = (await req('POST', '/data-definitions', other.auth, { name: 'Customers' })).json();
const orders = (
  await req('POST', '/data-definitions', ws.auth, {
    name: 'Orders',
    fields: {
      title: { name: 'Title', type: 'text', required: true },
      amount: { name: 'Amount', type: 'number' },
      paid: { name: 'Paid', type: 'boolean' },
      due: { name: 'Due', type: 'date' },
      at: { name: 'At', type: 'timestamp' },
      meta: { name: 'Meta', type: 'json' },
      attachments: { name: 'Attachments', type: 'files' },
      status: { name: 'Status', type: 'select', options: [{ value: 'open' }, { value: 'done' }] },
      tags: { name: 'Tags', type: 'multi-select', options: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] },
      customer: { name: 'Customer', type: 'relationship', dataDefinitionId: customers.id },
      link: { name: 'Link', type: 'text', variant: 'url' },
      code: { name: 'Code', type: 'text', unique: true },
    },
  })
).json();
if (!orders.id) throw new Error('orders definition not created');

const count = async (def = orders.id, auth = ws.auth) => (await req('GET', `/data-definitions/${def}/query?pageSize=1`, auth)).json().total as number;

let alice: string;
t.test('upsert-many creates rows, validates every type, publishes one event per row after commit', async (t) => {
  const c = await req('POST', `/data-definitions/${customers.id}/data/upsert-many`, ws.auth, { rows: [{ data: { name: 'Alice', email: 'a@x' } }, { data: { name: 'Bob', email: 'b@x' } }] });
  t.equal(c.statusCode, 200, c.body);
  alice = c.json().items[0].id;
  seen.length = 0;
  const res = await req('POST', `/data-definitions/${orders.handle}/data/upsert-many`, ws.auth, {
    rows: [
      {
        data: {
          title: 'First',
          amount: 10.5,
          paid: true,
          due: '2026-02-28',
          at: '2026-01-01T10:00:00+02:00',
          meta: { nested: [1, 2] },
          attachments: ['f1'],
          status: 'open',
          tags: ['a', 'b'],
          customer: alice,
          link: 'https://example.com/x',
          code: 'A1',
        },
      },
      { data: { title: 'Second', amount: 3, status: 'done', tags: ['c'], code: 'A2' } },
      { data: { title: 'Third', amount: 100, paid: false } },
    ],
  });
  t.equal(res.statusCode, 200, res.body);
  const body = res.json();
  t.equal(body.created, 3);
  t.equal(body.updated, 0);
  t.equal(body.items[0].definitionHandle, 'orders');
  t.equal(body.items[0].data.at, '2026-01-01T08:00:00.000Z', 'timestamp normalized to UTC');
  t.same(body.items[0].data.meta, { nested: [1, 2] });
  t.equal(body.items[0].deletedAt, null);
  await app.trellis.app.ready();
  const deadline = Date.now() + 5000;
  while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  t.equal(seen.length, 3, 'three events');
  t.ok(seen.every((e) => e.topic === 'data.row.created' && e.payload.definitionId === orders.id && e.payload.previous === null));
  t.same(seen.map((e) => e.payload.row.id).sort(), body.items.map((r: { id: string }) => r.id).sort());
  t.equal(await count(), 3);
  const g = await req('GET', `/data-definitions/${orders.id}/data/${body.items[1].id}`, ws.auth);
  t.equal(g.statusCode, 200);
  t.same(g.json(), body.items[1]);
});

t.test('bad rows: 400 naming row index and field, nothing written', async (t) => {
  const before = await count();
  const cases: [Record<string, unknown>, string][] = [
    [{ title: 'x', amount: 'ten' }, 'amount'],
    [{ title: 'x', paid: 'yes' }, 'paid'],
    [{ title: 'x', due: '2026-02-30' }, 'due'],
    [{ title: 'x', at: 'yesterday' }, 'at'],
    [{ title: 'x', status: 'maybe' }, 'status'],
    [{ title: 'x', tags: ['a', 'a'] }, 'tags'],
    [{ title: 'x', tags: ['z'] }, 'tags'],
    [{ title: 'x', tags: 'a' }, 'tags'],
    [{ title: 'x', customer: '00000000-0000-7000-8000-000000000000' }, 'customer'],
    [{ title: 'x', customer: 'not-a-uuid' }, 'customer'],
    [{ title: 'x', link: 'javascript:alert(1)' }, 'link'],
    [{ title: 'x', attachments: [1] }, 'attachments'],
    [{ title: 'x', nope: 1 }, 'nope'],
    [{ amount: 1 }, 'title'],
  ];
  for (const [bad, field] of cases) {
    const res = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ data: { title: 'ok' } }, { data: bad }] });
    t.equal(res.statusCode, 400, `${field}: ${res.body}`);
    t.ok(
      res.json().issues?.some((i: { path: unknown[] }) => i.path.join('.') === `rows.1.data.${field}`),
      `names rows.1.data.${field}: ${res.body}`,
    );
  }
  // a row of another workspace's customers is not a valid relationship target
  const theirs = await req('POST', `/data-definitions/${theirCustomers.id}/data/upsert-many`, other.auth, { rows: [{ data: {} }] });
  const cross = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ data: { title: 'x', customer: theirs.json().items[0].id } }] });
  t.equal(cross.statusCode, 400);
  t.equal(await count(), before, 'nothing written');
});

t.test('limits: batch size and row size', async (t) => {
  const many = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: Array.from({ length: 51 }, (_, i) => ({ data: { title: `r${i}` } })) });
  t.equal(many.statusCode, 400);
  t.equal(many.json().code, 'batch_too_large');
  const big = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ data: { title: 'ok' } }, { data: { title: 'x'.repeat(3000) } }] });
  t.equal(big.statusCode, 400);
  t.equal(big.json().code, 'row_too_large');
  t.equal(big.json().details.rowIndex, '1');
  const empty = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [] });
  t.equal(empty.statusCode, 400);
});

t.test('update by id (merge, null clears), by unique field, unique conflicts (409)', async (t) => {
  const first = (await req('GET', `/data-definitions/${orders.id}/query?filter.code=A1`, ws.auth)).json().items[0];
  seen.length = 0;
  const up = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ id: first.id, data: { amount: 11, link: null } }] });
  t.equal(up.statusCode, 200, up.body);
  t.equal(up.json().updated, 1);
  t.equal(up.json().items[0].data.amount, 11);
  t.equal(up.json().items[0].data.title, 'First', 'other fields kept');
  t.notOk('link' in up.json().items[0].data, 'null cleared the field');
  t.equal(up.json().items[0].createdAt, first.createdAt);
  const deadline = Date.now() + 5000;
  while (seen.length < 1 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  t.equal(seen[0]?.topic, 'data.row.updated');
  t.equal(seen[0]?.payload.previous?.data.amount, 10.5, 'previous row in the event');

  const byKey = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { matchBy: 'code', rows: [{ data: { code: 'A2', amount: 4 } }, { data: { code: 'A3', title: 'Fourth' } }] });
  t.equal(byKey.statusCode, 200, byKey.body);
  t.equal(byKey.json().updated, 1);
  t.equal(byKey.json().created, 1);
  t.equal(byKey.json().items[0].data.title, 'Second');

  const dupInBatch = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ data: { title: 'a', code: 'Z' } }, { data: { title: 'b', code: 'Z' } }] });
  t.equal(dupInBatch.statusCode, 409);
  t.equal(dupInBatch.json().code, 'conflict');
  const dupStored = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ data: { title: 'a' } }, { data: { title: 'b', code: 'A1' } }] });
  t.equal(dupStored.statusCode, 409);
  t.match(dupStored.json().details.path, 'rows.1.data.code');
  const notUnique = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { matchBy: 'title', rows: [{ data: { title: 'a' } }] });
  t.equal(notUnique.statusCode, 400);
  const otherId = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ id: alice, data: { title: 'steal' } }] });
  t.equal(otherId.statusCode, 409, 'an id of another definition cannot be taken');
  const myId = '01900000-0000-7000-8000-0000000000aa';
  const withId = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ id: myId, data: { title: 'chosen id' } }] });
  t.equal(withId.statusCode, 200);
  t.equal(withId.json().items[0].id, myId);
  t.equal(withId.json().created, 1);
});

t.test('query: pagination, filters, sort, search', async (t) => {
  const q = async (qs: string) => {
    const res = await req('GET', `/data-definitions/${orders.id}/query?${qs}`, ws.auth);
    t.equal(res.statusCode, 200, `${qs}: ${res.body}`);
    return res.json();
  };
  const all = await q('');
  t.equal(all.total, 5);
  t.equal(all.page, 1);
  t.equal(all.pageSize, 25, 'default page size');
  t.equal(all.pageCount, 1);
  t.equal(all.hasMore, false);
  t.same(all.items.map((r: { data: { title: string } }) => r.data.title), ['First', 'Second', 'Third', 'Fourth', 'chosen id'], 'default sort: oldest first');
  const p2 = await q('pageSize=2&page=2');
  t.same([p2.total, p2.page, p2.pageSize, p2.pageCount, p2.hasMore, p2.items.length], [5, 2, 2, 3, true, 2]);
  const p9 = await q('pageSize=2&page=9');
  t.same([p9.items.length, p9.hasMore], [0, false]);
  const titles = (r: { items: { data: { title: string } }[] }) => r.items.map((x) => x.data.title);
  t.same(titles(await q('sort=-amount')), ['Third', 'First', 'Second', 'Fourth', 'chosen id'], 'numbers numerically, missing last');
  t.same(titles(await q('filter.amount.gte=5&sort=amount')), ['First', 'Third']);
  t.same(titles(await q('filter.status=done')), ['Second']);
  t.same(titles(await q('filter.status.ne=done')), ['First', 'Third', 'Fourth', 'chosen id']);
  t.same(titles(await q('filter.tags=a')), ['First']);
  t.same(titles(await q('filter.tags.in=b,c')), ['First', 'Second']);
  t.same(titles(await q('filter.paid=false')), ['Third']);
  t.same(titles(await q('filter.amount.isNull=true')), ['Fourth', 'chosen id']);
  t.same(titles(await q('filter.title.contains=IR')), ['First', 'Third']);
  t.same(titles(await q('filter.title.in=First,Third')), ['First', 'Third']);
  t.same(titles(await q('filter.due.lt=2026-03-01')), ['First']);
  t.same(titles(await q(`filter.customer=${alice}`)), ['First']);
  t.same(titles(await q('filter.at.gte=2026-01-01T07:00:00Z')), ['First']);
  t.same(titles(await q('q=fourth')), ['Fourth']);
  t.same(titles(await q(`filter.createdAt.gte=${encodeURIComponent(all.items[4].createdAt)}`)), ['chosen id']);
  t.same(titles(await q('filter.title.contains=%25')), [], 'LIKE wildcards are literal');
  for (const bad of ['page=0', 'pageSize=0', 'pageSize=101', 'filter.nope=1', 'filter.amount=abc', 'filter.amount.like=1', 'sort=nope', 'bogus=1', 'filter.tags.gt=a']) {
    const res = await req('GET', `/data-definitions/${orders.id}/query?${bad}`, ws.auth);
    t.equal(res.statusCode, 400, `${bad}: ${res.body}`);
  }
});

t.test('patch-many, delete-many, select-all', async (t) => {
  const ids = (await req('GET', `/data-definitions/${orders.id}/data/select-all?filter.amount.isNull=true`, ws.auth)).json();
  t.equal(ids.total, 2);
  t.equal(ids.truncated, false);
  const p = await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, ws.auth, { ids: ids.ids, data: { status: 'done', amount: 1 } });
  t.equal(p.statusCode, 200, p.body);
  t.equal(p.json().updatedCount, 2);
  const byFilter = await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, ws.auth, { filter: { status: 'done', 'amount.lt': 2 }, data: { paid: true } });
  t.equal(byFilter.json().updatedCount, 2);
  t.equal((await req('GET', `/data-definitions/${orders.id}/query?filter.paid=true`, ws.auth)).json().total, 3);
  const bad = await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, ws.auth, { filter: { status: 'done' }, data: { amount: 'x' } });
  t.equal(bad.statusCode, 400);
  const uniq = await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, ws.auth, { filter: { status: 'done' }, data: { code: 'same' } });
  t.equal(uniq.statusCode, 409, 'setting a unique field on several rows');
  const none = await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, ws.auth, { data: { paid: true } });
  t.equal(none.statusCode, 400);
  t.equal(none.json().code, 'selection_required');

  seen.length = 0;
  const d = await req('POST', `/data-definitions/${orders.id}/data/delete-many`, ws.auth, { filter: { 'amount.lt': 2 } });
  t.equal(d.statusCode, 200, d.body);
  t.equal(d.json().deletedCount, 2);
  t.equal(await count(), 3);
  t.equal((await req('GET', `/data-definitions/${orders.id}/data/${d.json().ids[0]}`, ws.auth)).statusCode, 404, 'deleted row is gone');
  const deadline = Date.now() + 5000;
  while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  t.ok(seen.length === 2 && seen.every((e) => e.topic === 'data.row.deleted' && e.payload.row.deletedAt !== null && e.payload.previous?.deletedAt === null));
  const again = await req('POST', `/data-definitions/${orders.id}/data/delete-many`, ws.auth, { ids: d.json().ids });
  t.equal(again.json().deletedCount, 0);
});

t.test('DataService over the service ref', async (t) => {
  const res = await req('GET', `/probe/orders`, ws.auth);
  t.equal(res.statusCode, 200, res.body);
  t.equal(res.json().pageSize, 2);
  t.equal(res.json().items[0].data.title, 'Third');
});

t.test('tenant isolation and permissions on row routes', async (t) => {
  const row = (await req('GET', `/data-definitions/${orders.id}/query?pageSize=1`, ws.auth)).json().items[0];
  for (const seg of [orders.id, 'orders']) {
    t.equal((await req('GET', `/data-definitions/${seg}/query`, other.auth)).statusCode, 404);
    t.equal((await req('GET', `/data-definitions/${seg}/data/${row.id}`, other.auth)).statusCode, 404);
    t.equal((await req('GET', `/data-definitions/${seg}/data/select-all`, other.auth)).statusCode, 404);
    t.equal((await req('POST', `/data-definitions/${seg}/data/upsert-many`, other.auth, { rows: [{ id: row.id, data: { title: 'x' } }] })).statusCode, 404);
    t.equal((await req('PATCH', `/data-definitions/${seg}/data/patch-many`, other.auth, { ids: [row.id], data: { title: 'x' } })).statusCode, 404);
    t.equal((await req('POST', `/data-definitions/${seg}/data/delete-many`, other.auth, { ids: [row.id] })).statusCode, 404);
  }
  // their own definition with our row id: still not found
  t.equal((await req('GET', `/data-definitions/${theirCustomers.id}/data/${row.id}`, other.auth)).statusCode, 404);
  t.equal((await req('GET', `/data-definitions/${orders.id}/data/${row.id}`, ws.auth)).json().data.title, row.data.title, 'untouched');

  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const editor = await createApiKey(app, ws.user, ws.handle, { role: 'editor' });
  const v = { authorization: `Bearer ${viewer.key}` };
  const e = { authorization: `Bearer ${editor.key}` };
  t.equal((await req('GET', `/data-definitions/${orders.id}/query`, v)).statusCode, 200);
  t.equal((await req('GET', `/data-definitions/${orders.id}/data/${row.id}`, v)).statusCode, 200);
  for (const [m, u, b] of [
    ['POST', 'upsert-many', { rows: [{ data: { title: 'v' } }] }],
    ['PATCH', 'patch-many', { ids: [row.id], data: { title: 'v' } }],
    ['POST', 'delete-many', { ids: [row.id] }],
  ] as const) {
    const res = await req(m, `/data-definitions/${orders.id}/data/${u}`, v, b);
    t.equal(res.statusCode, 403, `viewer ${u}`);
    t.equal(res.json().details.requiredPermission, 'data.write');
  }
  t.equal((await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, e, { rows: [{ data: { title: 'by editor' } }] })).statusCode, 200);
  await idle();
});

t.test('odd query strings and bodies never answer 500', async (t) => {
  const qs = [
    'page=abc', 'page=1.5', 'page=-1', 'pageSize=1e3', 'sort=', 'sort=,,,', 'sort=--amount', 'sort=-', "sort=amount';DROP", 'q=%00', 'q=%25%25', "filter.title=%27", 'filter.title.in=', 'filter.title.in=,,,',
    'filter.amount.in=1,x', 'filter.amount.gt=', 'filter.at.gte=notadate', 'filter.due.lt=2026-13-45', 'filter.createdAt=yesterday', 'filter.id=nope', 'filter.id.in=a,b', 'filter.customer=xyz',
    'filter.meta={bad', 'filter.meta.contains={"k":1}', 'filter.tags.contains=', 'filter.paid.isNull=maybe', 'filter.title.isNull=true&filter.title.isNull=false', 'filter.=1', 'filter..eq=1', 'filter.title.eq.extra=1',
    `q=${'x'.repeat(600)}`, 'filter.amount=1&filter.amount=2',
  ];
  for (const q of qs) {
    const res = await req('GET', `/data-definitions/${orders.id}/query?${q}`, ws.auth);
    t.ok([200, 400].includes(res.statusCode), `${q.slice(0, 60)} -> ${res.statusCode} ${res.body.slice(0, 160)}`);
  }
  const bodies: unknown[] = [
    { rows: [{ data: null }] }, { rows: [{ data: [] }] }, { rows: [{ id: 5, data: {} }] }, { rows: [{ data: { title: { nested: true } } }] }, { rows: [{ data: { amount: 1e400 } }] },
    { rows: 'x' }, { rows: [{ data: { title: 'x', __proto__: { polluted: true } } }] }, { rows: [{ data: { title: 'x'.repeat(100) } }], matchBy: 'nope.field' }, { rows: [{ data: { title: 'nul\u0000' } }] }, { rows: [{ data: { title: 'x', meta: { 'k\u0000': 1 } } }] },
  ];
  for (const b of bodies) {
    const res = await app.inject({ method: 'POST', url: `/api/v1/data-definitions/${orders.id}/data/upsert-many`, headers: { ...ws.auth, 'content-type': 'application/json' }, payload: JSON.stringify(b) });
    t.ok([200, 400, 409].includes(res.statusCode), `${JSON.stringify(b).slice(0, 80)} -> ${res.statusCode} ${res.body.slice(0, 160)}`);
  }
  for (const b of [{ filter: { 'amount.gte': 'x' }, data: {} }, { filter: { nope: 1 }, data: {} }, { ids: ['x'], data: {} }, { filter: { 'title.in': 'notalist' }, data: {} }, { filter: {}, data: { amount: null } }]) {
    const res = await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, ws.auth, b);
    t.ok([200, 400, 409].includes(res.statusCode), `${JSON.stringify(b)} -> ${res.statusCode} ${res.body.slice(0, 160)}`);
  }
});
