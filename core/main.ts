/**
 * `npm start`: load config, start (embedded PostgreSQL unless DATABASE_URL is set), listen, and
 * shut down gracefully on SIGTERM/SIGINT (exit 0, no process left behind).
 */
import { adapters } from '../adapters/index.ts';
import { plugins } from '../plugins/index.ts';
import { ConfigError, loadConfig } from './config/index.ts';
import { BootError } from './registry/index.ts';
import { startServer } from './server.ts';

const say = (msg: string) => process.stderr.write(`[trellis] ${msg}\n`);

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  say(`starting (data dir ${config.dataDir}${config.DATABASE_URL ? ', DATABASE_URL set' : ', embedded PostgreSQL'})`);
  const server = await startServer({ config, plugins, adapters, log: say });
  const base = config.TRELLIS_BASE_URL ? config.baseUrl : server.url;
  say(`listening on ${server.url}`);
  say(`API docs: ${base}/docs  (OpenAPI: ${base}/api/v1/openapi.json)`);
  say(`first user: POST ${base}/api/v1/auth/sign-up {"email","password"}; see README.md`);
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    say(`${signal}: finishing in-flight requests and stopping`);
    server
      .stop()
      .then(() => {
        say('stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        say(`error during shutdown: ${(err as Error).stack ?? String(err)}`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof BootError) say(err.message);
  else say(`failed to start: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
