/**
 * The process as an operator runs it (`node core/main.ts`, what `npm start` runs): embedded
 * PostgreSQL, restart reusing data, recovery after `kill -9`, graceful SIGTERM leaving no
 * process behind, and in-flight requests finishing during shutdown.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { definePlugin } from '../../core/registry/index.ts';
import { buildTestApp } from '../../core/testing/index.ts';

const root = path.resolve(import.meta.dirname, '../..');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'trellis-life-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

interface Started {
  proc: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

async function start(): Promise<Started> {
  const proc = spawn(process.execPath, ['core/main.ts'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '', TRELLIS_DATA_DIR: dataDir, PORT: '0', TRELLIS_LOG_LEVEL: 'warn', TRELLIS_PLUGINS: 'workspaces,openapi' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no 'listening' line within 60 s:\n${out}`)), 60_000);
    proc.stderr!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m && out.includes('first user:')) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before listening:\n${out}`)));
  });
  return { proc, url, output: () => out, exited };
}

function postmasterPid(): number {
  return Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function signUp(url: string, email: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/auth/sign-up`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'long enough password' }) });
  return res.status;
}

async function signIn(url: string, email: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'long enough password' }) });
  return res.status;
}

t.test('npm start: serves, SIGTERM exits 0 and stops PostgreSQL', async (t) => {
  const s = await start();
  t.match(s.output(), /API docs: http:\/\/127\.0\.0\.1:\d+\/docs/);
  t.equal((await fetch(`${s.url}/healthz`)).status, 200);
  t.same(await (await fetch(`${s.url}/readyz`)).json(), { status: 'ready' });
  t.equal(await signUp(s.url, 'first@example.test'), 201);
  const pg = postmasterPid();
  t.ok(alive(pg), 'embedded PostgreSQL is running');
  s.proc.kill('SIGTERM');
  t.equal(await s.exited, 0, 'exit code 0');
  t.notOk(alive(pg), 'no PostgreSQL process left behind');
});

t.test('a restart reuses the data; kill -9 leaves a stale postmaster that the next start stops', async (t) => {
  const s = await start();
  t.equal(await signIn(s.url, 'first@example.test'), 200, 'the user from the previous run is still there');
  const stale = postmasterPid();
  s.proc.kill('SIGKILL');
  await s.exited;
  t.ok(alive(stale), 'after kill -9 the postmaster is orphaned');
  const again = await start();
  t.match(again.output(), /stopping stale PostgreSQL/);
  t.notOk(alive(stale), 'the stale postmaster was stopped');
  t.equal(await signIn(again.url, 'first@example.test'), 200);
  const pg = postmasterPid();
  again.proc.kill('SIGINT');
  t.equal(await again.exited, 0);
  t.notOk(alive(pg));
});

t.test('a bad config value stops the boot with a message naming the key', async (t) => {
  const proc = spawn(process.execPath, ['core/main.ts'], { cwd: root, env: { ...process.env, PORT: 'http', TRELLIS_DATA_DIR: dataDir }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((r) => proc.on('exit', r));
  t.equal(code, 1);
  t.match(err, /PORT: must be integer/);
});

t.test('in-flight requests finish during shutdown', async (t) => {
  let release!: () => void;
  const entered = new Promise<void>((r) => (release = r));
  const slow = definePlugin({
    id: 'slow',
    description: 'a slow route',
    setup(ctx) {
      ctx.routes((app) => {
        app.get('/slow', { config: { auth: 'public' } }, async () => {
          release();
          await new Promise((r) => setTimeout(r, 300));
          return { finished: true };
        });
      });
    },
  });
  const app = await buildTestApp({ plugins: [slow] });
  await app.trellis.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.trellis.app.server.address() as { port: number };
  const pending = fetch(`http://127.0.0.1:${port}/api/v1/slow`).then(async (r) => ({ status: r.status, body: await r.json() }));
  await entered;
  await app.close();
  t.same(await pending, { status: 200, body: { finished: true } });
  await t.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'no longer accepting');
});
