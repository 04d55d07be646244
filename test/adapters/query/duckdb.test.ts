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
