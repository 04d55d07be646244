import t from 'tap';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import data from '../../../plugins/data/index.ts';
import query from '../../../plugins/query/index.ts';
import duckdb from '../../../adapters/query/duckdb/index.ts';

// csvStaging on here, so both load paths run over HTTP (sql-query tests use the row path).
const app = await buildTestApp({ plugins: [workspaces, query, data], adapters: [duckdb], pluginConfig: { 'query-duckdb': { csvStaging: true } } });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const req = (method: string, url: string, payload?: unknown) => app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: ws.auth, payload: payload as object });

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  let v = await fn();
  while (!ok(v)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 20));
    v = await fn();
  }
  return v;
}

const customers = (await req('POST', '/data-definitions', { name: 'Customers', fields: { name: { name: 'Name', type: 'text' } } })).json();
const orders = (
  await req('POST', '/data-definitions', {
    name: 'Orders',
    fields: {
      customer: { name: 'Customer', type: 'relationship', dataDefinitionId: customers.id },
      amount: { name: 'Amount', type: 'number' },
      doubled: { name: 'Doubled', type: 'number', materialized: { sql: 'SELECT $amount * 2' } },
    },
  })
).json();

t.test('a materialized field is computed on write from the row parameters and cannot be written', async (t) => {
  const c = await req('POST', `/data-definitions/${customers.id}/data/upsert-many`, { rows: [{ data: { name: 'Alice' } }] });
  const alice = c.json().items[0].id;
  const o = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, { rows: [{ data: { customer: alice, amount: 21 } }, { data: { customer: alice, amount: 4 } }] });
  t.equal(o.statusCode, 200, o.body);
  t.same(o.json().items.map((r: { data: { doubled: number } }) => r.data.doubled), [42, 8]);
  const p = await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, { ids: [o.json().items[1].id], data: { amount: 5 } });
  t.equal(p.statusCode, 200);
  t.equal((await req('GET', `/data-definitions/${orders.id}/data/${o.json().items[1].id}`)).json().data.doubled, 10, 'recomputed on update');
  const w = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, { rows: [{ data: { doubled: 1 } }] });
  t.equal(w.statusCode, 400);
  t.same(w.json().issues[0].path, ['rows', 0, 'data', 'doubled']);
});

t.test('a materialized aggregate over another table refreshes when that table changes', async (t) => {
  const p = await req('PATCH', `/data-definitions/${customers.id}`, {
    fields: {
      name: { name: 'Name', type: 'text' },
      total: { name: 'Total', type: 'number', materialized: { sql: 'SELECT coalesce(sum(amount), 0) FROM orders WHERE customer = $id' } },
    },
  });
  t.equal(p.statusCode, 200, p.body);
  const alice = (await req('GET', `/data-definitions/${customers.id}/query`)).json().items[0];
  await until(async () => (await req('GET', `/data-definitions/${customers.id}/data/${alice.id}`)).json().data.total, (v) => v === 26, 'total after the field was added');
  await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, { rows: [{ data: { customer: alice.id, amount: 100 } }] });
  await until(async () => (await req('GET', `/data-definitions/${customers.id}/data/${alice.id}`)).json().data.total, (v) => v === 126, 'total after an order was added');
  const ids = (await req('GET', `/data-definitions/${orders.id}/data/select-all?filter.amount=100`)).json().ids;
  await req('POST', `/data-definitions/${orders.id}/data/delete-many`, { ids });
  await until(async () => (await req('GET', `/data-definitions/${customers.id}/data/${alice.id}`)).json().data.total, (v) => v === 26, 'total after an order was deleted');
  const bob = (await req('POST', `/data-definitions/${customers.id}/data/upsert-many`, { rows: [{ data: { name: 'Bob' } }] })).json().items[0];
  t.equal(bob.data.total, 0, 'computed on create');
});

t.test('materialized SQL is validated', async (t) => {
  for (const sql of ['DELETE FROM orders', 'SELECT * FROM nope', "SELECT * FROM read_csv('/etc/passwd')", 'SELEC']) {
    const res = await req('POST', '/data-definitions', { name: `Bad ${Math.random()}`, fields: { x: { name: 'X', type: 'number', materialized: { sql } } } });
    t.equal(res.statusCode, 400, sql);
    t.same(res.json().issues?.[0]?.path, ['fields', 'x', 'materialized', 'sql'], res.body);
  }
  const self = await req('POST', '/data-definitions', { name: 'Selfish', fields: { n: { name: 'N', type: 'number' }, rank: { name: 'Rank', type: 'number', materialized: { sql: 'SELECT count(*) FROM selfish WHERE n > $n' } } } });
  t.equal(self.statusCode, 201, `may read its own table: ${self.body}`);
});
