import t from 'tap';
import { DuckDBInstance } from '@duckdb/node-api';
import { DuckDbEngine } from '../../../adapters/query/duckdb/engine.ts';
import { queryEngineContract } from '../../contracts/query-engines.ts';

const engine = new DuckDbEngine({ name: 'duckdb', memoryLimitMb: 128, threads: 1, maxSandboxes: 2 });
t.teardown(() => engine.close());

queryEngineContract(t, {
  engine,
  async writeParquet(file) {
    const inst = await DuckDBInstance.create(':memory:');
    const c = await inst.connect();
    await c.run(`COPY (SELECT * FROM (VALUES (1, 'a'), (2, 'b')) v(id, name)) TO '${file.replace(/'/g, "''")}' (FORMAT parquet)`);
    c.disconnectSync();
    inst.closeSync();
  },
});

t.test('sandboxes are evicted beyond maxSandboxes and rebuilt on demand', async (t) => {
  const ds = (key: string) => ({
    key,
    names: ['t'],
    version: '1',
    columns: [{ name: 'id', type: 'VARCHAR' as const }],
    async *load() {
      yield [[key]];
    },
  });
  for (const scope of ['s1', 's2', 's3', 's1']) {
    const r = await engine.run({ sql: 'SELECT id FROM t', scope, datasets: [ds(scope)], maxRows: 10, timeoutMs: 2000 });
    t.same(r.rows, [[scope]]);
  }
});

t.test('bulk CSV loads through a private staging directory: exact values, nothing left behind', async (t) => {
  const { mkdtempSync, readdirSync, rmSync } = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const staging = mkdtempSync(path.join(os.tmpdir(), 'duck-staging-'));
  t.teardown(() => rmSync(staging, { recursive: true, force: true }));
  const e = new DuckDbEngine({ name: 'duckdb', memoryLimitMb: 128, threads: 1, maxSandboxes: 2, stagingDir: path.join(staging, 'x') });
  t.teardown(() => e.close());
  let rowLoads = 0;
  const ds = {
    key: 'k',
    names: ['t'],
    version: '1',
    columns: [
      { name: 'id', type: 'VARCHAR' as const },
      { name: 'at', type: 'TIMESTAMP' as const },
      { name: 'n', type: 'DOUBLE' as const },
      { name: 'b', type: 'BOOLEAN' as const },
      { name: 'd', type: 'DATE' as const },
      { name: 'tags', type: 'VARCHAR[]' as const },
      { name: 'j', type: 'JSON' as const },
    ],
    async *load() {
      rowLoads++;
      yield [];
    },
    async *csv() {
      yield 'c0,c1,c2,c3,c4,c5,c6\n';
      yield '"a, ""quoted""\nline",2026-01-31 12:00:00.5+00,1.5,true,2026-02-28,"[""x"", ""y,z""]","{""k"": 1}"\n';
      yield '"",,,,,,\n';
    },
  };
  const r = await e.run({ sql: 'SELECT id, "at", n, b, d, tags, j, id IS NULL AS idnull FROM t ORDER BY n NULLS LAST', scope: 's', datasets: [ds], maxRows: 10, timeoutMs: 5000 });
  t.same(r.rows, [
    ['a, "quoted"\nline', '2026-01-31T12:00:00.500Z', 1.5, true, '2026-02-28', ['x', 'y,z'], '{"k": 1}', false],
    ['', null, null, null, null, null, null, false],
  ]);
  t.equal(rowLoads, 0, 'the CSV path was used');
  const dirs = readdirSync(path.join(staging, 'x'));
  t.equal(dirs.length, 1, 'one sandbox directory');
  t.same(readdirSync(path.join(staging, 'x', dirs[0])), [], 'the staged file is removed after the load');
  await t.rejects(e.run({ sql: `SELECT * FROM read_csv('${path.join(staging, 'x', dirs[0])}/data_1.csv')`, scope: 's', datasets: [ds], maxRows: 10, timeoutMs: 5000 }), { code: 'sql_not_allowed' });
});

t.test('a dataset too large for the memory limit fails the query with query_resources_exceeded; the engine keeps working', async (t) => {
  const small = new DuckDbEngine({ name: 'duckdb', memoryLimitMb: 16, threads: 1, maxSandboxes: 2 });
  t.teardown(() => small.close());
  const big = {
    key: 'big',
    names: ['big'],
    version: '1',
    columns: [{ name: 'id', type: 'VARCHAR' as const }, { name: 's', type: 'VARCHAR' as const }],
    async *load() {
      const pad = 'x'.repeat(1000);
      for (let b = 0; b < 100; b++) yield Array.from({ length: 1000 }, (_, i) => [`${b}-${i}`, `${pad}${b}-${i}`]);
    },
  };
  await t.rejects(small.run({ sql: 'SELECT count(*) FROM big', scope: 's', datasets: [big], maxRows: 10, timeoutMs: 10_000 }), { code: 'query_resources_exceeded' });
  const ok = await small.run({ sql: 'SELECT 1 AS x', scope: 's', maxRows: 10, timeoutMs: 5000 });
  t.same(ok.rows, [[1]]);
});
