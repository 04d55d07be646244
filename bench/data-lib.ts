/**
 * Shared setup of the data benchmarks: the app with the data plugins on a fresh database,
 * listening on 127.0.0.1, a workspace and an admin API key made through the API, and a fast
 * generator of rows stored directly in PostgreSQL (for sizes the API would take long to fill).
 */
import { buildApp, type Trellis } from '../core/app.ts';
import { loadConfig } from '../core/config/index.ts';
import { adapters } from '../adapters/index.ts';
import workspaces from '../plugins/workspaces/index.ts';
import data from '../plugins/data/index.ts';
import query from '../plugins/query/index.ts';
import sqlQuery from '../plugins/sql-query/index.ts';
import { benchDatabase, serveWithWorkspace, type BenchDatabase } from './lib.ts';

export interface DataBench {
  trellis: Trellis;
  db: BenchDatabase;
  base: string;
  headers: Record<string, string>;
  workspaceId: string;
  close(): Promise<void>;
}

export async function startDataBench(opts: { sql?: boolean; pool?: number } = {}): Promise<DataBench> {
  const db = await benchDatabase();
  const config = loadConfig({
    TRELLIS_DATA_DIR: `/tmp/trellis-bench-data-${process.pid}`,
    TRELLIS_LOG_LEVEL: 'silent',
    TRELLIS_DB_POOL_SIZE: String(opts.pool ?? 20),
    TRELLIS_BODY_LIMIT: String(64 * 1024 * 1024),
  });
  config.plugins['sql-query'] = { ...(config.plugins['sql-query'] ?? {}), timeoutMs: 60_000 };
  config.plugins['query-duckdb'] = { ...(config.plugins['query-duckdb'] ?? {}), memoryLimitMb: 2048, threads: 2 };
  const duck = adapters.filter((a) => a.id === 'query-duckdb');
  const trellis = await buildApp({ config, plugins: opts.sql ? [workspaces, query, data, sqlQuery] : [workspaces, data], adapters: opts.sql ? duck : [], databaseUrl: db.url, logger: false });
  const { base, key, workspaceId } = await serveWithWorkspace(trellis);
  return {
    trellis,
    db,
    base,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    workspaceId,
    async close() {
      await trellis.close();
      await db.close();
    },
  };
}

export async function api<T = unknown>(b: DataBench, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${b.base}${path}`, { method, headers: b.headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** The orders definition used by the benchmarks. */
export async function createOrders(b: DataBench): Promise<{ id: string; handle: string }> {
  return api(b, 'POST', '/data-definitions', {
    name: 'Orders',
    handle: 'orders',
    fields: {
      title: { name: 'Title', type: 'text' },
      status: { name: 'Status', type: 'select', options: [{ value: 'open' }, { value: 'paid' }, { value: 'shipped' }, { value: 'cancelled' }] },
      amount: { name: 'Amount', type: 'number' },
      at: { name: 'At', type: 'timestamp' },
    },
  });
}

export const STATUSES = ['open', 'paid', 'shipped', 'cancelled'];

export function orderData(i: number): Record<string, unknown> {
  return { title: `Order ${i}`, status: STATUSES[i % 4], amount: (i % 1000) + 0.5, at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() };
}

/** Fills `n` rows straight into data_rows (same shape the API stores), in chunks, then ANALYZE. */
export async function fillRows(b: DataBench, definitionId: string, n: number): Promise<void> {
  const chunk = 200_000;
  for (let from = 0; from < n; from += chunk) {
    const to = Math.min(n, from + chunk);
    await b.trellis.db.query(
      `INSERT INTO data_rows (id, workspace_id, definition_id, data, version, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2,
              jsonb_build_object('title', 'Order ' || i, 'status', (ARRAY['open','paid','shipped','cancelled'])[1 + i % 4],
                                 'amount', (i % 1000) + 0.5, 'at', to_char((timestamptz '2026-01-01' + i * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
              1, timestamptz '2026-01-01' + i * interval '1 millisecond', timestamptz '2026-01-01' + i * interval '1 millisecond'
       FROM generate_series($3::int, $4::int - 1) AS i`,
      [b.workspaceId, definitionId, from, to],
    );
  }
  await b.trellis.db.query(`UPDATE data_definitions SET data_version = data_version + 1 WHERE id = $1`, [definitionId]);
  await b.trellis.db.query('VACUUM ANALYZE data_rows');
}

export function ms(n: number): string {
  return `${n.toFixed(1)} ms`;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
