import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import t from 'tap';
import duckdb from '../../../adapters/query/duckdb/index.ts';
import local from '../../../adapters/storage/local/index.ts';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import data from '../../../plugins/data/index.ts';
import fileQuery from '../../../plugins/file-query/index.ts';
import files from '../../../plugins/files/index.ts';
import query from '../../../plugins/query/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import { putTo } from '../files/suite.ts';

const app = await buildTestApp({ plugins: [workspaces, files, query, data, fileQuery], adapters: [local, duckdb] });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);
const wsId = (await app.trellis.db.query<{ id: string }>('SELECT id FROM core_workspaces WHERE handle = $1', [ws.handle]))[0].id;
const otherId = (await app.trellis.db.query<{ id: string }>('SELECT id FROM core_workspaces WHERE handle = $1', [other.handle]))[0].id;

const api = (method: string, url: string, payload?: unknown, headers: Record<string, string> = ws.auth) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers, payload: payload as string });
const q = (sql: string, sources: unknown[], headers?: Record<string, string>) => api('POST', '/duckdb/query', { sql, sources }, headers);

async function upload(name: string, body: Buffer | string, directory?: string, auth = ws.auth): Promise<{ id: string; path: string }> {
  const res = await api('POST', '/files', { mode: 'direct', name, directory }, auth);
  const r = await putTo(app, res.json().upload, body);
  if (r.status !== 200) throw new Error(`upload ${r.status}`);
  return res.json().file;
}

// A parquet file made by DuckDB itself.
const tmp = mkdtempSync(path.join(os.tmpdir(), 'trellis-fq-'));
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
const parquetPath = path.join(tmp, 'events.parquet');
{
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  await conn.run(`COPY (SELECT range::INTEGER AS id, (range % 3)::INTEGER AS g, 'e' || range AS label FROM range(1000)) TO '${parquetPath}' (FORMAT parquet)`);
  conn.disconnectSync();
  inst.closeSync();
}

const csv = await upload('sales.csv', 'region,amount\nnorth,10\nsouth,20\nnorth,5\n', 'reports');
const pq = await upload('events.parquet', readFileSync(parquetPath));
const json = (await api('POST', '/files', { mode: 'document', name: 'people.json', content: '[{"name":"ada","age":36},{"name":"alan","age":41}]' })).json().file;
const foreign = await upload('theirs.csv', 'a\n1\n', undefined, other.auth);

t.test('local sources by fileId and by path; the result has exactly the spec fields', async (t) => {
  const res = await q('SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region', [{ kind: 'local', name: 'sales', fileId: csv.id, format: 'csv' }]);
  t.equal(res.statusCode, 200, res.body);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['executionTimeMs', 'records', 'rowCount', 'sourceNames', 'sql', 'table']);
  t.same(body.sourceNames, ['sales']);
  t.same(body.table.columns, ['region', 'total']);
  t.same(body.table.rows, [['north', 15], ['south', 20]]);
  t.same(body.records, [{ region: 'north', total: 15 }, { region: 'south', total: 20 }]);
  t.equal(body.rowCount, 2);
  t.type(body.executionTimeMs, 'number');
  const byPath = await q('SELECT count(*) AS n FROM s', [{ kind: 'local', name: 's', path: 'reports/sales.csv', format: 'csv' }]);
  t.equal(byPath.statusCode, 200, byPath.body);
  t.same(byPath.json().records, [{ n: 3 }]);
  const joined = await q('SELECT g, count(*) AS n FROM events WHERE id < 9 GROUP BY g ORDER BY g', [
    { kind: 'local', name: 'events', fileId: pq.id, format: 'parquet' },
    { kind: 'local', name: 'people', fileId: json.id, format: 'json' },
  ]);
  t.equal(joined.statusCode, 200, joined.body);
  t.same(joined.json().table.rows, [[0, 3], [1, 3], [2, 3]]);
  t.same(joined.json().sourceNames, ['events', 'people']);
  const people = await q('SELECT name FROM people WHERE age > 40', [{ kind: 'local', name: 'people', fileId: json.id, format: 'json' }]);
  t.same(people.json().records, [{ name: 'alan' }], 'a JSON document');
});

t.test('s3 sources: keys inside the workspace prefix only', async (t) => {
  const rel = await q('SELECT count(*) AS n FROM e', [{ kind: 's3', name: 'e', key: `files/${pq.id}`, format: 'parquet' }]);
  t.equal(rel.statusCode, 200, rel.body);
  t.same(rel.json().records, [{ n: 1000 }]);
  const full = await q('SELECT count(*) AS n FROM e', [{ kind: 's3', name: 'e', key: `workspaces/${wsId}/files/${pq.id}`, format: 'parquet' }]);
  t.same(full.json().records, [{ n: 1000 }]);
  for (const key of [`workspaces/${otherId}/files/${foreign.id}`, `../${otherId}/files/${foreign.id}`, `files/../../${otherId}/files/${foreign.id}`, 'files/00000000-0000-7000-8000-000000000000']) {
    const r = await q('SELECT * FROM e', [{ kind: 's3', name: 'e', key, format: 'csv' }]);
    t.equal(r.statusCode, 400, key);
  }
});

t.test('relational sources: not supported yet', async (t) => {
  const r = await q('SELECT 1', [{ kind: 'relational', name: 'db', connection: 'postgres://x', table: 't' }]);
  t.equal(r.statusCode, 400);
  t.equal(r.json().code, 'not_supported');
  t.match(r.json().message, /not supported yet/);
});

t.test('bad requests answer 400', async (t) => {
  const src = [{ kind: 'local', name: 'sales', fileId: csv.id, format: 'csv' }];
  for (const sql of [
    'DROP TABLE sales',
    'SELECT 1; SELECT 2',
    "COPY sales TO '/tmp/x.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    'SELECT * FROM nowhere',
    "ATTACH '/tmp/evil.db'",
    'SET enable_external_access = true',
    'SELEC nonsense',
  ]) {
    const r = await q(sql, src);
    t.equal(r.statusCode, 400, sql);
  }
  t.equal((await q('SELECT 1', [{ kind: 'local', name: 'x', format: 'csv' }])).statusCode, 400, 'neither fileId nor path');
  t.equal((await q('SELECT 1', [{ kind: 'local', name: 'x', fileId: csv.id, path: 'a', format: 'csv' }])).statusCode, 400, 'both');
  t.equal((await q('SELECT 1', [{ kind: 's3', name: 'x', format: 'csv' }])).statusCode, 400, 'no key');
  t.equal((await q('SELECT 1', [{ kind: 'local', name: 'x', fileId: csv.id }])).statusCode, 400, 'no format');
  t.equal((await q('SELECT 1', [{ kind: 'local', name: 'bad name', fileId: csv.id, format: 'csv' }])).statusCode, 400, 'bad name');
  t.equal((await q('SELECT 1', [{ kind: 'local', name: 'a', fileId: csv.id, format: 'csv' }, { kind: 'local', name: 'A', fileId: csv.id, format: 'csv' }])).statusCode, 400, 'duplicate names');
  t.equal((await q('SELECT * FROM x', [{ kind: 'local', name: 'x', fileId: foreign.id, format: 'csv' }])).statusCode, 400, "another workspace's file is not a source");
  t.equal((await q('SELECT * FROM x', [{ kind: 'local', name: 'x', path: 'theirs.csv', format: 'csv' }])).statusCode, 400, "another workspace's path");
  const wrongFormat = await q('SELECT * FROM x', [{ kind: 'local', name: 'x', fileId: csv.id, format: 'parquet' }]);
  t.equal(wrongFormat.statusCode, 400, 'csv read as parquet');
});

t.test('permissions: data.read', async (t) => {
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const r = await q('SELECT count(*) AS n FROM s', [{ kind: 'local', name: 's', fileId: csv.id, format: 'csv' }], { authorization: `Bearer ${viewer.key}` });
  t.equal(r.statusCode, 200);
  const none = await createApiKey(app, ws.user, ws.handle, { permissions: { files: ['read'] } });
  const d = await q('SELECT 1', [], { authorization: `Bearer ${none.key}` });
  t.equal(d.statusCode, 403);
  t.equal(d.json().details.requiredPermission, 'data.read');
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/duckdb/query', payload: { sql: 'SELECT 1', sources: [] } })).statusCode, 401);
});

t.test('on the S3 backend: objects are copied to a temp file for the run and removed after', async (t) => {
  const { startS3 } = await import('../../adapters/storage/s3rver.ts');
  const s3adapter = (await import('../../../adapters/storage/s3/index.ts')).default;
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const s3app = await buildTestApp({
    plugins: [workspaces, files, query, data, fileQuery],
    adapters: [s3adapter, duckdb],
    pluginConfig: { 'storage-s3': s3.config('fq-test'), files: { backend: 's3' } },
  });
  t.teardown(() => s3app.close());
  const w = await setupWorkspace(s3app);
  const created = await s3app.inject({ method: 'POST', url: '/api/v1/files', headers: w.auth, payload: { mode: 'direct', name: 'pq.parquet' } });
  t.equal((await putTo(s3app, created.json().upload, readFileSync(parquetPath))).status, 200);
  const id = created.json().file.id;
  for (const source of [
    { kind: 'local', name: 'e', fileId: id, format: 'parquet' },
    { kind: 's3', name: 'e', key: `files/${id}`, format: 'parquet' },
  ]) {
    const r = await s3app.inject({ method: 'POST', url: '/api/v1/duckdb/query', headers: w.auth, payload: { sql: 'SELECT max(id) AS m FROM e', sources: [source] } });
    t.equal(r.statusCode, 200, r.body);
    t.same(r.json().records, [{ m: 999 }], source.kind);
  }
  const { readdir } = await import('node:fs/promises');
  const tmpFiles = await readdir(path.join(s3app.config.dataDir, 'tmp', 'files')).catch(() => []);
  t.same(tmpFiles, [], 'temp copies released');
});
