/**
 * startServer: resolves the database (DATABASE_URL, or embedded PostgreSQL in the data dir),
 * builds the app and listens. `stop()` is the graceful path used on SIGTERM/SIGINT: stop
 * accepting, finish in-flight requests, stop jobs and plugins, then stop the embedded database.
 */
import { buildApp, type Trellis } from './app.ts';
import type { CoreConfig } from './config/index.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.ts';
import type { AnyAdapter, AnyPlugin } from './registry/index.ts';
import pg from 'pg';

export interface RunningServer {
  trellis: Trellis;
  url: string;
  stop(): Promise<void>;
}

async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function startServer(opts: {
  config: CoreConfig;
  plugins: AnyPlugin[];
  adapters: AnyAdapter[];
  log?: (msg: string) => void;
}): Promise<RunningServer> {
  const { config } = opts;
  const say = opts.log ?? (() => {});
  let embedded: EmbeddedPostgres | undefined;
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(config.dataDir, say);
    say(`embedded PostgreSQL running on 127.0.0.1:${embedded.port} (data in ${config.dataDir}/postgres)`);
    databaseUrl = await ensureDatabase(embedded.url, 'trellis');
  }
  let trellis: Trellis;
  try {
    trellis = await buildApp({ config, plugins: opts.plugins, adapters: opts.adapters, databaseUrl });
    await trellis.app.listen({ host: config.HOST, port: config.PORT });
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  const addr = trellis.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  let stopping: Promise<void> | undefined;
  return {
    trellis,
    url: `http://${host}:${port}`,
    stop() {
      stopping ??= (async () => {
        try {
          await trellis.close();
        } finally {
          await embedded?.stop();
        }
      })();
      return stopping;
    },
  };
}
