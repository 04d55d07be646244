import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import data from '../../../plugins/data/index.ts';
import query from '../../../plugins/query/index.ts';
import sqlQuery from '../../../plugins/sql-query/index.ts';
import duckdb from '../../../adapters/query/duckdb/index.ts';

const app = await buildTestApp({
  plugins: [workspaces, query, data, sqlQuery],
  adapters: [duckdb],
  pluginConfig: { 'sql-query': { maxRows: 50, timeoutMs: 1500 }, 'query-duckdb': { memoryLimitMb: 128 } },
});
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

const req = (method: string, url: string, auth: Record<string, string>, payload?: unknown) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: auth, payload: payload as object });
const sql = (s: string, auth: Record<string, string> = ws.auth) => req('POST', '/data/sql-query', auth, { sql: s });

const orders = (
  await req('POST', '/data-definitions', ws.auth, {
    name: 'Order Items',
    fields: {
      status: { name: 'Status', type: 'select', options: [{ value: 'open' }, { value: 'paid' }] },
      amount: { name: 'Amount', type: 'number' },
      paid: { name: 'Paid', type: 'boolean' },
      due: { name: 'Due', type: 'date' },
      at: { name: 'At', type: 'timestamp' },
      tags: { name: 'Tags', type: 'multi-select', options: [{ value: 'a' }, { value: 'b' }] },
      meta: { name: 'Meta', type: 'json' },
    },
  })
).json();
if (orders.handle !== 'order-items') throw new Error(JSON.stringify(orders));
const up = await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, {
  rows: [
    { data: { status: 'open', amount: 10, paid: false, due: '2026-01-31', at: '2026-01-01T00:00:00Z', tags: ['a'], meta: { k: 1 } } },
    { data: { status: 'paid', amount: 5.5, paid: true, tags: ['a', 'b'] } },
    { data: { status: 'paid', amount: 4.5 } },
  ],
});
if (up.statusCode !== 200) throw new Error(up.body);
const secret = (await req('POST', '/data-definitions', other.auth, { name: 'Secrets', fields: { v: { name: 'V', type: 'text' } } })).json();
await req('POST', `/data-definitions/${secret.id}/data/upsert-many`, other.auth, { rows: [{ data: { v: 'other workspace secret' } }] });

t.test('aggregate over a definition by handle and by alias; result has exactly the spec fields', async (t) => {
  const res = await sql('SELECT status, count(*) AS n, sum(amount) AS total FROM order_items GROUP BY 1 ORDER BY 1');
  t.equal(res.statusCode, 200, res.body);
  const b = res.json();
  t.same(Object.keys(b).sort(), ['ascii', 'cached', 'executionTimeMs', 'normalizedSql', 'records', 'rowCount', 'sql', 'table', 'truncated', 'usedTables', 'warnings']);
  t.same(b.table.columns, ['status', 'n', 'total']);
  t.same(b.table.rows, [
    ['open', 1, 10],
    ['paid', 2, 10],
  ]);
  t.same(b.records[1], { status: 'paid', n: 2, total: 10 }, 'count(*) is a JSON number');
  t.equal(b.rowCount, 2);
  t.same(b.usedTables, ['order-items']);
  t.equal(b.truncated, false);
  t.equal(b.cached, false);
  t.same(b.warnings, []);
  t.match(b.ascii, /\| status \| n +\| total \|/);
  t.match(b.normalizedSql, /SELECT/);
  t.equal(typeof b.executionTimeMs, 'number');
  const quoted = await sql('SELECT count(*) AS n FROM "order-items"');
  t.equal(quoted.json().records[0].n, 3);
});

t.test('typed columns', async (t) => {
  const res = await sql(`SELECT id, "createdAt", amount, paid, due, "at", tags, meta, status FROM order_items WHERE due IS NOT NULL`);
  t.equal(res.statusCode, 200, res.body);
  const r = res.json().records[0];
  t.match(r.id, /^[0-9a-f-]{36}$/);
  t.match(r.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.equal(r.amount, 10);
  t.equal(r.paid, false);
  t.equal(r.due, '2026-01-31');
  t.equal(r.at, '2026-01-01T00:00:00.000Z');
  t.same(r.tags, ['a']);
  t.equal(r.status, 'open');
  const types = await sql(`SELECT typeof(amount) a, typeof(paid) b, typeof(due) c, typeof("at") d, typeof(tags) e, typeof(meta) f FROM order_items LIMIT 1`);
  t.same(types.json().table.rows[0], ['DOUBLE', 'BOOLEAN', 'DATE', 'TIMESTAMP', 'VARCHAR[]', 'JSON']);
  const big = await sql(`SELECT 9007199254740993::BIGINT AS big, 1::BIGINT AS small, 12.34::DECIMAL(10,2) AS d, 1.5::DECIMAL(30,2) AS wide`);
  t.same(big.json().records[0], { big: '9007199254740993', small: 1, d: 12.34, wide: '1.50' });
  t.ok(big.json().warnings.some((w: string) => /big/.test(w)));
});

t.test('cache: a repeat is cached; any write to a used table invalidates it', async (t) => {
  const q = 'SELECT sum(amount) AS s FROM order_items';
  const a = (await sql(q)).json();
  const b = (await sql(q)).json();
  t.equal(b.cached, true);
  t.same(b.records, a.records);
  await req('POST', `/data-definitions/${orders.id}/data/upsert-many`, ws.auth, { rows: [{ data: { status: 'open', amount: 100 } }] });
  const cr = await sql(q);
  t.equal(cr.statusCode, 200, cr.body);
  const c = cr.json();
  t.equal(c.cached, false);
  t.equal(c.records[0].s, a.records[0].s + 100, 'sees the write (incremental refresh)');
  const rows = (await req('GET', `/data-definitions/${orders.id}/query?filter.amount=100`, ws.auth)).json().items;
  await req('POST', `/data-definitions/${orders.id}/data/delete-many`, ws.auth, { ids: [rows[0].id] });
  const d = (await sql(q)).json();
  t.equal(d.cached, false);
  t.equal(d.records[0].s, a.records[0].s, 'sees the delete');
  await req('PATCH', `/data-definitions/${orders.id}/data/patch-many`, ws.auth, { filter: { status: 'open' }, data: { amount: 11 } });
  t.equal((await sql(q)).json().records[0].s, a.records[0].s + 1, 'sees the patch');
  // changing the fields changes the columns
  const p = await req('PATCH', `/data-definitions/${orders.id}`, ws.auth, { fields: { ...orders.fields, extra: { name: 'Extra', type: 'number' } } });
  t.equal(p.statusCode, 200, p.body);
  const e = await sql('SELECT count(extra) AS n FROM order_items');
  t.equal(e.statusCode, 200, e.body);
  t.equal(e.json().records[0].n, 0);
});

t.test('rows are capped with truncated and a warning', async (t) => {
  const res = (await sql('SELECT * FROM range(1000)')).json();
  t.equal(res.rowCount, 50);
  t.equal(res.truncated, true);
  t.ok(res.warnings.some((w: string) => /truncated/.test(w)));
});

t.test('escape suite: every attempt is a clean 400 and reveals nothing', async (t) => {
  const attempts: [string, string[]][] = [
    ["SELECT * FROM read_csv('/etc/passwd')", ['sql_not_allowed']],
    ["SELECT * FROM read_csv_auto('/etc/passwd')", ['sql_not_allowed']],
    ["SELECT * FROM read_text('/etc/passwd')", ['sql_not_allowed']],
    ["SELECT content FROM read_blob('/etc/passwd')", ['sql_not_allowed']],
    ["SELECT * FROM sniff_csv('/etc/passwd')", ['sql_not_allowed']],
    ["SELECT * FROM glob('/etc/*')", ['sql_not_allowed']],
    ["SELECT * FROM '/etc/passwd'", ['sql_not_allowed', 'unknown_table']],
    ["SELECT * FROM read_parquet('http://127.0.0.1:1/x.parquet')", ['sql_not_allowed']],
    ["COPY (SELECT 1) TO '/tmp/trellis-escape.csv'", ['sql_not_allowed']],
    ["COPY order_items TO '/tmp/trellis-escape.csv'", ['sql_not_allowed']],
    ["ATTACH '/tmp/trellis-escape.db' AS x", ['sql_not_allowed']],
    ["ATTACH ':memory:' AS x", ['sql_not_allowed']],
    ['INSTALL httpfs', ['sql_not_allowed']],
    ['LOAD httpfs', ['sql_not_allowed']],
    ["SELECT getenv('HOME')", ['sql_not_allowed']],
    ["SELECT current_setting('memory_limit')", ['sql_not_allowed']],
    ['SET memory_limit = \'10GB\'', ['sql_not_allowed']],
    ['SET enable_external_access = true', ['sql_not_allowed']],
    ['PRAGMA version', ['sql_not_allowed']],
    ['PRAGMA enable_profiling', ['sql_not_allowed']],
    ["CALL pragma_version()", ['sql_not_allowed']],
    ['SELECT * FROM pragma_version()', ['sql_not_allowed']],
    ['SELECT * FROM duckdb_settings()', ['sql_not_allowed']],
    ['SELECT * FROM duckdb_tables()', ['sql_not_allowed']],
    ['SELECT * FROM information_schema.tables', ['sql_not_allowed']],
    ["SELECT * FROM query('SELECT 42')", ['sql_not_allowed']],
    ["SELECT * FROM query_table('order_items')", ['sql_not_allowed']],
    ['DESCRIBE order_items', ['sql_not_allowed']],
    ['SHOW TABLES', ['sql_not_allowed']],
    ['CREATE TABLE x AS SELECT 1', ['sql_not_allowed']],
    ['INSERT INTO order_items (id) VALUES (\'x\')', ['sql_not_allowed']],
    ['DELETE FROM order_items', ['sql_not_allowed']],
    ['DROP TABLE order_items', ['sql_not_allowed']],
    ['EXPLAIN SELECT 1', ['sql_not_allowed']],
    ['SELECT 1; SELECT 2', ['sql_not_allowed']],
    ['SELECT 1; DROP TABLE order_items', ['sql_not_allowed']],
    ['SELECT * FROM secrets', ['unknown_table']],
    ['SELECT * FROM memory.main.secrets', ['sql_not_allowed']],
    ['SELECT * FROM data_1', ['unknown_table']],
    ['SELEC 1', ['invalid_sql']],
  ];
  for (const [s, codes] of attempts) {
    const res = await sql(s);
    t.equal(res.statusCode, 400, `${s}: ${res.body}`);
    t.ok(codes.includes(res.json().code), `${s}: code ${res.json().code}`);
    t.notMatch(res.body, /root:|other workspace secret/, 'nothing leaks');
  }
  // another workspace cannot see ours either
  const theirs = await sql('SELECT * FROM order_items', other.auth);
  t.equal(theirs.statusCode, 400);
  t.equal(theirs.json().code, 'unknown_table');
  const mine = await sql('SELECT v FROM secrets', other.auth);
  t.equal(mine.json().records[0].v, 'other workspace secret', 'their own data works for them');
});

t.test('a never-ending query times out; a memory-hungry one fails cleanly; the server keeps serving', async (t) => {
  const started = Date.now();
  const slow = await sql('SELECT count(*) FROM range(1000000000000) a');
  t.equal(slow.statusCode, 400, slow.body);
  t.equal(slow.json().code, 'query_timeout');
  t.ok(Date.now() - started < 10_000, 'stopped near the deadline');
  const hog = await sql('SELECT a.range AS x, b.range AS y FROM range(100000) a, range(100000) b ORDER BY x DESC, y DESC LIMIT 1');
  t.equal(hog.statusCode, 400, hog.body);
  t.ok(['query_resources_exceeded', 'query_timeout'].includes(hog.json().code), hog.body);
  const agg = await sql('SELECT list(range) FROM range(100000000)');
  t.equal(agg.statusCode, 400, agg.body);
  t.ok(['query_resources_exceeded', 'query_timeout'].includes(agg.json().code), agg.body);
  const ok = await sql('SELECT count(*) AS n FROM order_items');
  t.equal(ok.statusCode, 200, 'still serving');
  t.equal((await req('GET', '/data-definitions', ws.auth)).statusCode, 200);
});

t.test('permissions and validation', async (t) => {
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  t.equal((await sql('SELECT 1 AS x', { authorization: `Bearer ${viewer.key}` })).statusCode, 200, 'viewer may query');
  const custom = await createApiKey(app, ws.user, ws.handle, { role: 'custom' as 'viewer', permissions: { files: ['read'] } }).catch(() => null);
  if (custom) {
    const r = await sql('SELECT 1', { authorization: `Bearer ${custom.key}` });
    t.equal(r.statusCode, 403);
  }
  t.equal((await sql('SELECT 1', {})).statusCode, 401);
  t.equal((await req('POST', '/data/sql-query', ws.auth, { sql: '' })).statusCode, 400);
  t.equal((await req('POST', '/data/sql-query', ws.auth, { sql: 'SELECT 1', extra: 1 })).statusCode, 400);
  t.equal((await req('POST', '/data/sql-query', ws.auth, {})).statusCode, 400);
});

t.test('after a field type change, stored values convert or read as NULL', async (t) => {
  const d = (await req('POST', '/data-definitions', ws.auth, { name: 'Changing', fields: { v: { name: 'V', type: 'text' }, flag: { name: 'F', type: 'text' } } })).json();
  await req('POST', `/data-definitions/${d.id}/data/upsert-many`, ws.auth, { rows: [{ data: { v: 'abc', flag: 'maybe' } }, { data: { v: '12', flag: 'true' } }] });
  t.same((await sql('SELECT v FROM changing ORDER BY v')).json().table.rows, [['12'], ['abc']]);
  const p = await req('PATCH', `/data-definitions/${d.id}`, ws.auth, { fields: { v: { name: 'V', type: 'number' }, flag: { name: 'F', type: 'boolean' } } });
  t.equal(p.statusCode, 200);
  const res = await sql('SELECT v, flag FROM changing ORDER BY v NULLS FIRST');
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json().table.rows, [
    [null, null],
    [12, true],
  ]);
});

t.test('malformed SQL never answers 500', async (t) => {
  const inputs = [';', ';;', '/*', '--', 'SELECT', "SELECT '", 'WITH', 'WITH x AS (SELECT 1)', 'SELECT * FROM (', '\u0000', 'SELECT \u0000', 'SELECT 1 /* unterminated', '🙂', 'SELECT $1', 'SELECT ?', 'SELECT * FROM order_items WHERE', 'SELECT 1/0', "SELECT 'a'::INTEGER", 'SELECT * FROM range(-1)', 'VALUES (1)', 'FROM order_items', 'SELECT ' + 'x, '.repeat(3000) + '1', '('.repeat(500) + 'SELECT 1' + ')'.repeat(500)];
  for (const s of inputs) {
    const res = await req('POST', '/data/sql-query', ws.auth, { sql: s });
    t.ok([200, 400].includes(res.statusCode), `${JSON.stringify(s).slice(0, 60)} -> ${res.statusCode} ${res.body.slice(0, 200)}`);
  }
});
