/**
 * Contract suite for query engines (the `query.engines` extension point): every engine adapter
 * runs it against its own engine instance.
 */
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import type { Dataset, QueryEngine } from '../../plugins/query/api.ts';

export interface EngineHarness {
  engine: QueryEngine;
  /** Writes a parquet file with columns (id INTEGER, name VARCHAR) and rows (1,'a'),(2,'b'). */
  writeParquet(file: string): Promise<void>;
}

function dataset(key: string, names: string[], version: string, rows: unknown[][], counter: { loads: number; changes: number }, changes?: { upserts: unknown[][]; deletedKeys: string[] }): Dataset {
  return {
    key,
    names,
    version,
    columns: [
      { name: 'id', type: 'VARCHAR' },
      { name: 'amount', type: 'DOUBLE' },
      { name: 'at', type: 'TIMESTAMP' },
      { name: 'tags', type: 'VARCHAR[]' },
    ],
    keyColumn: 'id',
    async *load() {
      counter.loads++;
      yield rows;
    },
    changesSince: changes
      ? async () => {
          counter.changes++;
          return {
            deletedKeys: changes.deletedKeys,
            upserts: (async function* () {
              yield changes.upserts;
            })(),
          };
        }
      : undefined,
  };
}

export function queryEngineContract(t: Test, h: EngineHarness): void {
  const run = (sql: string, extra: Partial<Parameters<QueryEngine['run']>[0]> = {}) => h.engine.run({ sql, scope: 'ws-1', maxRows: 100, timeoutMs: 2000, ...extra });

  t.test('analyze: one SELECT, used tables without CTE names, refusals', async (t) => {
    const a = await h.engine.analyze('WITH x AS (SELECT * FROM orders) SELECT * FROM x JOIN customers c ON true');
    t.same(a.tables, ['orders', 'customers']);
    t.ok(a.normalizedSql.length > 0);
    await t.rejects(h.engine.analyze('SELECT 1; SELECT 2'), { code: 'sql_not_allowed' });
    await t.rejects(h.engine.analyze('DELETE FROM orders'), { code: 'sql_not_allowed' });
    await t.rejects(h.engine.analyze("SELECT * FROM read_csv('/etc/passwd')"), { code: 'sql_not_allowed' });
    await t.rejects(h.engine.analyze('SELEC'), { code: 'invalid_sql' });
  });

  t.test('datasets: loaded once per version, refreshed incrementally, isolated per scope', async (t) => {
    const counter = { loads: 0, changes: 0 };
    const rows = [
      ['r1', 10, new Date('2026-01-01T00:00:00Z'), ['a']],
      ['r2', 5, '2026-01-02T00:00:00.000Z', null],
    ];
    const v1 = dataset('k1', ['orders', 'orders_alias'], '1', rows, counter);
    const a = await run('SELECT sum(amount) AS s, count(*) AS n FROM orders', { datasets: [v1] });
    t.same(a.rows, [[15, 2]]);
    t.equal(a.warm, false);
    const b = await run('SELECT id, "at", tags FROM orders_alias ORDER BY id', { datasets: [v1] });
    t.equal(b.warm, true);
    t.equal(counter.loads, 1, 'not reloaded at the same version');
    t.same(b.rows, [
      ['r1', '2026-01-01T00:00:00.000Z', ['a']],
      ['r2', '2026-01-02T00:00:00.000Z', null],
    ]);
    const v2 = dataset('k1', ['orders', 'orders_alias'], '2', rows, counter, { upserts: [['r3', 1, null, null], ['r1', 20, null, null]], deletedKeys: ['r2'] });
    const c = await run('SELECT id, amount FROM orders ORDER BY id', { datasets: [v2] });
    t.same(c.rows, [
      ['r1', 20],
      ['r3', 1],
    ]);
    t.equal(counter.loads, 1, 'incremental, no full reload');
    t.equal(counter.changes, 1);
    await t.rejects(run('SELECT * FROM orders', { scope: 'ws-2', datasets: [] }), { code: 'unknown_table' }, 'another scope has no such table');
    const other = dataset('k9', ['orders'], '1', [['x', 1, null, null]], { loads: 0, changes: 0 });
    const d = await run('SELECT id FROM orders', { scope: 'ws-2', datasets: [other] });
    t.same(d.rows, [['x']], 'same name, other scope, other data');
    t.same((await run('SELECT count(*) AS n FROM orders', { datasets: [v2] })).rows, [[2]], 'first scope unchanged');
  });

  t.test('row cap, timeout', async (t) => {
    const r = await run('SELECT * FROM range(500)', { maxRows: 10 });
    t.equal(r.rows.length, 10);
    t.equal(r.truncated, true);
    await t.rejects(run('SELECT count(*) FROM range(1000000000000)', { timeoutMs: 200 }), { code: 'query_timeout' });
  });

  t.test('file sources: csv, json, parquet as named tables; nothing else readable', async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-contract-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(path.join(dir, 'a.csv'), 'id,name\n1,a\n2,b\n');
    writeFileSync(path.join(dir, 'b.json'), '[{"id":1,"score":3.5},{"id":2,"score":1}]');
    await h.writeParquet(path.join(dir, 'c.parquet'));
    const files = [
      { name: 'people', path: path.join(dir, 'a.csv'), format: 'csv' as const },
      { name: 'scores', path: path.join(dir, 'b.json'), format: 'json' as const },
      { name: 'pq', path: path.join(dir, 'c.parquet'), format: 'parquet' as const },
    ];
    const r = await run('SELECT p.name, s.score, q.name AS qn FROM people p JOIN scores s ON s.id = p.id JOIN pq q ON q.id = p.id ORDER BY p.id', { files });
    t.same(r.rows, [
      ['a', 3.5, 'a'],
      ['b', 1, 'b'],
    ]);
    await t.rejects(run("SELECT * FROM read_csv('/etc/passwd')", { files }), { code: 'sql_not_allowed' });
    await t.rejects(run(`SELECT * FROM read_csv('${path.join(dir, 'a.csv')}')`, { files }), { code: 'sql_not_allowed' }, 'not even the registered path by name');
    await t.rejects(run('SELECT * FROM nope', { files }), { code: 'unknown_table' });
    await t.rejects(run('SELECT * FROM broken', { files: [{ name: 'broken', path: path.join(dir, 'missing.csv'), format: 'csv' }] }), { code: 'query_failed' });
  });
}
