/**
 * bench/sql-groupby: `SELECT status, count(*), sum(amount) FROM orders GROUP BY 1` over
 * BENCH_ROWS rows (default 1,000,000) through POST /api/v1/data/sql-query, against the same
 * aggregate run directly in PostgreSQL over the stored rows (jsonb), in the same run.
 *
 * Reported: first query after boot (full load of the table into DuckDB); cold after a write
 * (one row upserted, so the table's version changed: incremental refresh of the DuckDB copy,
 * then the query); warm engine (data loaded, result cache missed by a varying comment); warm
 * result cache (the same SQL again); PostgreSQL median of BENCH_REPEAT (default 5) runs.
 * Goal: warm >= 5x faster than PostgreSQL; cold well under a few seconds.
 */
import { envInt } from './lib.ts';
import { api, createOrders, fillRows, median, ms, startDataBench } from './data-lib.ts';

const total = envInt('BENCH_ROWS', 1_000_000);
const repeat = envInt('BENCH_REPEAT', 5);
const SQL = 'SELECT status, count(*) AS n, sum(amount) AS total FROM orders GROUP BY 1 ORDER BY 1';

type Result = { records: { status: string; n: number; total: number }[]; cached: boolean; executionTimeMs: number };

const b = await startDataBench({ sql: true, pool: 10 });
try {
  const def = await createOrders(b);
  let t0 = performance.now();
  await fillRows(b, def.id, total);
  console.log(`sql-groupby: ${total} rows filled in ${((performance.now() - t0) / 1000).toFixed(1)} s; Node ${process.version}`);

  const timed = async (sql: string): Promise<{ ms: number; r: Result }> => {
    const s = performance.now();
    const r = await api<Result>(b, 'POST', '/data/sql-query', { sql });
    return { ms: performance.now() - s, r };
  };

  const boot = await timed(SQL);
  if (boot.r.records.reduce((a, x) => a + x.n, 0) !== total) throw new Error(`wrong count: ${JSON.stringify(boot.r.records)}`);
  const colds: number[] = [];
  const warms: number[] = [];
  const cacheds: number[] = [];
  for (let i = 0; i < repeat; i++) {
    await api(b, 'POST', `/data-definitions/${def.id}/data/upsert-many`, { rows: [{ data: { title: `write ${i}`, status: 'open', amount: 1 } }] });
    const cold = await timed(SQL);
    if (cold.r.cached) throw new Error('cold query was served from the cache');
    colds.push(cold.ms);
    const warm = await timed(`${SQL} /* ${i} */`);
    if (warm.r.cached) throw new Error('warm-engine query was served from the result cache');
    warms.push(warm.ms);
    const cached = await timed(SQL);
    if (!cached.r.cached) throw new Error('repeat was not cached');
    cacheds.push(cached.ms);
  }

  const pgTimes: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const s = performance.now();
    await b.trellis.db.query(
      `SELECT data->>'status' AS status, count(*) AS n, sum((data->>'amount')::float8) AS total FROM data_rows
       WHERE workspace_id = $1 AND definition_id = $2 AND deleted_at IS NULL GROUP BY 1 ORDER BY 1`,
      [b.workspaceId, def.id],
    );
    pgTimes.push(performance.now() - s);
  }
  const pg = median(pgTimes);
  const warm = median(warms);
  console.log(`first query after boot (full load)     ${ms(boot.ms)}`);
  console.log(`cold after a write (incremental)       ${ms(median(colds))}  (median of ${repeat})`);
  console.log(`warm engine (data loaded, new SQL)     ${ms(warm)}`);
  console.log(`warm result cache (same SQL)           ${ms(median(cacheds))}`);
  console.log(`baseline PostgreSQL over stored jsonb  ${ms(pg)}  (median of ${repeat}, direct on the pool)`);
  console.log(`ratio PostgreSQL / warm engine: ${(pg / warm).toFixed(1)}x (goal >= 5x);  PostgreSQL / cold after write: ${(pg / median(colds)).toFixed(1)}x;  PostgreSQL / cached: ${(pg / median(cacheds)).toFixed(1)}x`);
} finally {
  await b.close();
}
