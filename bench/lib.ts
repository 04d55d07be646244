/**
 * Shared benchmark helpers: a PostgreSQL to run against (DATABASE_URL or an embedded one in a
 * temp dir), autocannon in a child process (so the load generator does not share the server's
 * event loop), and one way of printing results.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startEmbeddedPostgres } from '../core/db/embedded.ts';
import type { Trellis } from '../core/app.ts';
import { createDatabase } from '../core/db/index.ts';
import { setupWorkspace } from '../core/testing/index.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..');

export interface BenchDatabase {
  url: string;
  close(): Promise<void>;
}

/** A fresh database for one benchmark run. */
export async function benchDatabase(): Promise<BenchDatabase> {
  let admin = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!admin) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'trellis-bench-'));
    const pgServer = await startEmbeddedPostgres(dir);
    admin = pgServer.url;
    stop = async () => {
      await pgServer.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const db = await createDatabase(admin, `trellis_bench_${Date.now().toString(36)}`);
  return {
    url: db.url,
    async close() {
      await db.drop();
      await stop();
    },
  };
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Runs autocannon as a child process against `url`. */
export async function load(url: string, opts: { connections: number; seconds: number; headers?: Record<string, string>; method?: string; body?: string }): Promise<LoadResult> {
  const args = ['-c', String(opts.connections), '-d', String(opts.seconds), '--json'];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}=${v}`);
  if (opts.method) args.push('-m', opts.method);
  if (opts.body) args.push('-b', opts.body);
  args.push(url);
  const { stdout } = await run(path.join(root, 'node_modules/.bin/autocannon'), args, { maxBuffer: 64 * 1024 * 1024 });
  const r = JSON.parse(stdout) as {
    requests: { total: number; average: number };
    latency: { p50: number; p99: number };
    errors: number;
    non2xx: number;
  };
  return { requests: r.requests.total, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  return v && Number.isFinite(Number(v)) ? Number(v) : fallback;
}

export function row(label: string, r: LoadResult): string {
  return `${label.padEnd(34)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   (${r.requests} requests, ${r.errors} errors, ${r.non2xx} non-2xx)`;
}

export interface BenchServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** `${origin}/api/v1` */
  base: string;
  handle: string;
  workspaceId: string;
  /** An admin API key of the workspace. */
  key: string;
}

/** Listens on a free port and creates a user, a workspace and an admin key (through the API). */
export async function serveWithWorkspace(trellis: Trellis): Promise<BenchServer> {
  await trellis.app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(trellis.app.server.address() as { port: number }).port}`;
  const ws = await setupWorkspace({ inject: trellis.app.inject.bind(trellis.app) }, 'Bench');
  const [{ id }] = await trellis.db.query<{ id: string }>('SELECT id FROM core_workspaces WHERE handle = $1', [ws.handle]);
  return { origin, base: `${origin}/api/v1`, handle: ws.handle, workspaceId: id, key: ws.key };
}
