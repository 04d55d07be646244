/**
 * `npm test`: starts one embedded PostgreSQL for the whole run (unless DATABASE_URL names a
 * server), runs tap, stops the database and exits with tap's code. Each test app creates and
 * drops a database of its own on that server, so test files stay isolated and can run in
 * parallel.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../core/db/embedded.ts';


/** Directory arguments expand to the test files below them (tap's include filter wants files). */
function expand(arg: string): string[] {
  let st;
  try {
    st = statSync(arg);
  } catch {
    return [arg];
  }
  if (!st.isDirectory()) return [arg];
  return (readdirSync(arg, { recursive: true }) as string[]).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(arg, f)).sort();
}
const args = process.argv.slice(2).flatMap((a) => (a.startsWith('-') ? [a] : expand(a)));
let embedded: EmbeddedPostgres | undefined;
let dir: string | undefined;
// tap spawns `node` from PATH: make it this Node (24), not an older system one.
const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}` };

if (!process.env.DATABASE_URL) {
  dir = mkdtempSync(path.join(os.tmpdir(), 'trellis-test-pg-'));
  const t0 = Date.now();
  embedded = await startEmbeddedPostgres(dir, () => {}, { durable: false });
  process.stderr.write(`# embedded PostgreSQL for tests on port ${embedded.port} (${Date.now() - t0} ms)\n`);
  env.TRELLIS_TEST_ADMIN_URL = embedded.url;
}

const cleanup = async () => {
  await embedded?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
};

// tap's TypeScript plugin (a ts-node fork) cannot run this code base; `.taprc` removes it, but a
// fresh install still has the default build, so rebuild tap's test class once when needed.
const built = path.resolve('node_modules/@tapjs/test/test-built/dist/esm/index.js');
if (!existsSync(built) || readFileSync(built, 'utf8').includes('@tapjs/typescript')) {
  process.stderr.write('# building tap without its TypeScript plugin (once after install)\n');
  const b = spawnSync(path.resolve('node_modules/.bin/tap'), ['build'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  if (b.status !== 0) process.exit(b.status ?? 1);
}

const tap = spawn(path.resolve('node_modules/.bin/tap'), args, { stdio: 'inherit', env });
const forward = (sig: NodeJS.Signals) => tap.kill(sig);
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
const code = await new Promise<number>((resolve) => tap.on('close', (c, s) => resolve(c ?? (s ? 1 : 0))));
await cleanup();
process.exit(code);
