/**
 * Shared setup of the channels benchmarks: a server with the channels plugin and the api and
 * webhook adapters on a fresh database, a user, a workspace and an admin API key made through the
 * API, listening on 127.0.0.1.
 */
import { buildApp, type Trellis } from '../core/app.ts';
import { loadConfig } from '../core/config/index.ts';
import apiAdapter from '../adapters/channels/api/index.ts';
import webhookAdapter from '../adapters/channels/webhook/index.ts';
import channels from '../plugins/channels/index.ts';
import workspaces from '../plugins/workspaces/index.ts';
import { benchDatabase, serveWithWorkspace, type BenchDatabase } from './lib.ts';

export interface ChannelsBench {
  trellis: Trellis;
  db: BenchDatabase;
  base: string;
  origin: string;
  key: string;
  close(): Promise<void>;
}

export async function startChannelsBench(): Promise<ChannelsBench> {
  const db = await benchDatabase();
  const config = loadConfig({ TRELLIS_DATA_DIR: `/tmp/trellis-bench-data-${process.pid}`, TRELLIS_LOG_LEVEL: 'silent', TRELLIS_DB_POOL_SIZE: '20' });
  const trellis = await buildApp({ config, plugins: [workspaces, channels], adapters: [apiAdapter, webhookAdapter], databaseUrl: db.url, logger: false });
  const { base, origin, key } = await serveWithWorkspace(trellis);
  return {
    trellis,
    db,
    base,
    origin,
    key,
    async close() {
      await trellis.close();
      await db.close();
    },
  };
}

export async function api<T = any>(b: ChannelsBench, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${b.base}${path}`, { method, headers: { authorization: `Bearer ${b.key}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}
