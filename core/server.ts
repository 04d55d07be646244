/**
 * startServer: resolves the database (DATABASE_URL, or embedded PostgreSQL in the data dir),
 * builds the app and listens. `stop()` is the graceful path used on SIGTERM/SIGINT: stop
 * accepting, finish in-flight requests, stop jobs and plugins, then stop the embedded database.
 */
import { buildApp, type Trellis } from './app.ts';
import type { CoreConfig } from './config/index.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.ts';
import { createDatabase } from './db/index.ts';
import type { AnyAdapter, AnyPlugin } from './registry/index.ts';

export interface RunningServer {
  trellis: Trellis;
  url: string;
  stop(): Promise<void>;
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
    databaseUrl = (await createDatabase(embedded.url, 'trellis', { ifMissing: true })).url;
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
