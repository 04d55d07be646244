/**
 * bench/files-query: a file-source query (POST /api/v1/duckdb/query, source kind `local` by
 * fileId) over a Parquet file of BENCH_ROWS rows (default 1,000,000) uploaded to the workspace,
 * against DuckDB querying the same file directly (read_parquet on the stored file) in the same
 * run. Median of BENCH_RUNS (default 5) after one warm-up each. Prints both and the ratio.
 */
import { setupWorkspace } from '../core/testing/index.ts';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import duckdb from '../adapters/query/duckdb/index.ts';
import local from '../adapters/storage/local/index.ts';
import { buildApp } from '../core/app.ts';
import { loadConfig } from '../core/config/index.ts';
import data from '../plugins/data/index.ts';
import fileQuery from '../plugins/file-query/index.ts';
import files from '../plugins/files/index.ts';
import query from '../plugins/query/index.ts';
import workspaces from '../plugins/workspaces/index.ts';
import { benchDatabase, envInt } from './lib.ts';

const ROWS = envInt('BENCH_ROWS', 1_000_000);
const RUNS = envInt('BENCH_RUNS', 5);
const SQL = 'SELECT category, count(*) AS n, sum(amount) AS total, avg(amount) AS mean FROM events GROUP BY category ORDER BY category';
const dir = mkdtempSync(path.join(os.tmpdir(), 'trellis-bench-fq-'));
const parquet = path.join(dir, 'events.parquet');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const db = await benchDatabase();
try {
  {
    const inst = await DuckDBInstance.create(':memory:');
    const conn = await inst.connect();
    await conn.run(
      `COPY (SELECT range AS id, 'c' || (range % 20) AS category, (range % 1000) / 10.0 AS amount, TIMESTAMP '2024-01-01' + INTERVAL (range) SECOND AS at FROM range(${ROWS})) TO '${parquet}' (FORMAT parquet)`,
    );
    conn.disconnectSync();
    inst.closeSync();
  }
  console.log(`files-query: ${ROWS} rows of Parquet (${(statSync(parquet).size / 1048576).toFixed(1)} MiB), ${RUNS} runs, Node ${process.version}`);

  const config = loadConfig({ TRELLIS_DATA_DIR: path.join(dir, 'data'), TRELLIS_LOG_LEVEL: 'silent', TRELLIS_BODY_LIMIT: String(1024 * 1024) });
  config.plugins['file-query'] = { timeoutMs: 120_000 };
  config.plugins['query-duckdb'] = { memoryLimitMb: 2048, threads: 2 };
  const trellis = await buildApp({ config, plugins: [workspaces, files, query, data, fileQuery], adapters: [local, duckdb], databaseUrl: db.url, logger: false });
  try {
    const inject = trellis.app.inject.bind(trellis.app);
    const { key } = await setupWorkspace({ inject }, 'Bench');
    const auth = { authorization: `Bearer ${key}` };
    const created = (await inject({ method: 'POST', url: '/api/v1/files', headers: auth, payload: { mode: 'direct', name: 'events.parquet' } })).json();
    const u = new URL(created.upload.url);
    const put = await inject({ method: 'PUT', url: `${u.pathname}${u.search}`, headers: { 'content-type': 'application/octet-stream' }, payload: readFileSync(parquet) });
    if (put.statusCode !== 200) throw new Error(`upload: ${put.statusCode} ${put.body}`);
    const stored = path.join(dir, 'data', 'storage', 'objects', 'workspaces');

    const subject: number[] = [];
    let answer: unknown;
    for (let i = 0; i <= RUNS; i++) {
      const t0 = performance.now();
      const res = await inject({ method: 'POST', url: '/api/v1/duckdb/query', headers: auth, payload: { sql: SQL, sources: [{ kind: 'local', name: 'events', fileId: created.file.id, format: 'parquet' }] } });
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`query: ${res.statusCode} ${res.body}`);
      answer = res.json().table.rows;
      if (i > 0) subject.push(ms);
    }

    const baseline: number[] = [];
    let direct: unknown;
    const storedFile = path.join(stored, readdirSync(stored)[0], 'files', created.file.id);
    for (let i = 0; i <= RUNS; i++) {
      const t0 = performance.now();
      const inst = await DuckDBInstance.create(':memory:', { threads: '2', memory_limit: '2048MB' });
      const conn = await inst.connect();
      const reader = await conn.runAndReadAll(SQL.replace('FROM events', `FROM read_parquet('${storedFile}')`));
      direct = reader.getRowsJS();
      conn.disconnectSync();
      inst.closeSync();
      const ms = performance.now() - t0;
      if (i > 0) baseline.push(ms);
    }
    if (JSON.stringify(answer) !== JSON.stringify(JSON.parse(JSON.stringify(direct, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))))) {
      console.log('  note: results differ in representation', JSON.stringify(answer).slice(0, 200), '|', JSON.stringify(direct, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)).slice(0, 200));
    }
    const s = median(subject);
    const b = median(baseline);
    console.log(`  file-source query over HTTP (inject), median: ${s.toFixed(1)} ms`);
    console.log(`  DuckDB read_parquet on the same file (fresh instance), median: ${b.toFixed(1)} ms`);
    console.log(`  ratio (baseline / file-source query): ${(b / s).toFixed(2)}`);
  } finally {
    await trellis.close();
  }
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
