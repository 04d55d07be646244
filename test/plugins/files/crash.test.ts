/**
 * A server process killed (SIGKILL) in the middle of a multipart upload: after a restart nothing
 * half-written is visible (the file is an open upload, its content 409), and once the upload
 * expires the file is gone and no part, temp file or object is left on disk.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import t from 'tap';
import local, { LocalStorage } from '../../../adapters/storage/local/index.ts';
import { buildApp } from '../../../core/app.ts';
import { loadConfig } from '../../../core/config/index.ts';
import { createTestDatabase, setupWorkspace } from '../../../core/testing/index.ts';
import files from '../../../plugins/files/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import { deadline } from './suite.ts';

const EXPIRY_S = 6;
const PART = 64 * 1024;
const db = await createTestDatabase();
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'trellis-crash-'));
t.teardown(async () => {
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const boot = () => {
  const config = loadConfig({ TRELLIS_DATA_DIR: dataDir, TRELLIS_LOG_LEVEL: 'silent', PORT: '0' });
  config.plugins.files = { uploadExpirySeconds: EXPIRY_S, sweepIntervalMs: 100, minPartSizeBytes: 1024 };
  return buildApp({ config, plugins: [workspaces, files], adapters: [local], databaseUrl: db.url, logger: false });
};

t.test('a server killed mid-multipart-upload', async (t) => {
  // 1. A workspace and key, made through the API of an in-process server on the same database.
  const first = await boot();
  const ws = await setupWorkspace({ inject: first.app.inject.bind(first.app) });
  await first.close();

  // 2. The server in a child process; a multipart upload; part 1 complete, part 2 cut by SIGKILL.
  const child: ChildProcess = spawn(process.execPath, [path.join(import.meta.dirname, 'crash-server.ts'), db.url, dataDir, String(EXPIRY_S)], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void child.kill('SIGKILL'));
  child.on('exit', (code, signal) => process.env.CRASH_DEBUG && process.stderr.write(`crash server exit ${code} ${signal}\n`));
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on('line', (l) => {
      if (l.startsWith('PORT ')) resolve(l);
      else if (process.env.CRASH_DEBUG) process.stderr.write(`${l}\n`);
    });
    child.once('exit', (code) => reject(new Error(`crash server exited early (${code})`)));
  });
  const origin = `http://127.0.0.1:${line.slice(5)}`;
  const at = (url: string) => `${origin}${new URL(url).pathname}${new URL(url).search}`;
  const created = await fetch(`${origin}/api/v1/files`, {
    method: 'POST',
    headers: { ...ws.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'multipart', name: 'crash.bin', sizeBytes: PART * 3, partSizeBytes: PART }),
  });
  t.equal(created.status, 201);
  const { file, upload } = (await created.json()) as { file: { id: string }; upload: { parts: { url: string }[] } };
  const p1 = await fetch(at(upload.parts[0].url), { method: 'PUT', body: Buffer.alloc(PART, 1) });
  t.equal(p1.status, 200, 'part 1 stored');

  // Part 2: send half the bytes, then kill the server while it is receiving.
  const half = await new Promise<void>((resolve) => {
    const u = new URL(at(upload.parts[1].url));
    const req = http.request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: 'PUT', headers: { 'content-length': String(PART) } });
    req.on('error', () => undefined);
    req.write(Buffer.alloc(PART / 2, 2), () => setTimeout(resolve, 200));
  });
  void half;
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  t.pass('server killed mid-part');
  t.ok((await readdir(path.join(dataDir, 'storage', 'tmp'))).length > 0, 'the crash left a partial part write behind');

  // 3. Restart in-process on the same database and data dir.
  const again = await boot();
  t.teardown(() => again.close());
  const api = (method: string, url: string) => again.app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: ws.auth });
  const storage = new LocalStorage(path.join(dataDir, 'storage'));

  await t.test('after the restart nothing half-written is visible', async (t) => {
    const res = await api('GET', `/files/${file.id}`);
    if (res.statusCode === 200) {
      t.equal(res.json().status, 'uploading', 'still an open upload, not a file');
      t.equal((await api('GET', `/files/${file.id}/content`)).statusCode, 409, 'no content to read');
    } else t.equal(res.statusCode, 404, 'already expired');
    t.same(await storage.list(''), [], 'no object under any key');
    t.same(await readdir(path.join(dataDir, 'storage', 'tmp')), [], 'the interrupted part write was cleaned at start');
  });

  await t.test('after the expiry the upload is aborted and nothing is left', async (t) => {
    await deadline('expiry', async () => ((await api('GET', `/files/${file.id}`)).statusCode === 404 ? true : undefined), (EXPIRY_S + 10) * 1000);
    t.same((await api('GET', '/files')).json(), [], 'not listed');
    // The sweep deletes the row, then aborts the upload: give it the moment that takes.
    await deadline('abort', async () => ((await storage.openUploads()).length === 0 ? true : undefined), 5000).catch(() => undefined);
    t.same(await storage.openUploads(), [], 'no multipart upload (parts) left');
    t.same(await storage.list(''), [], 'no objects');
    t.same(await readdir(path.join(dataDir, 'storage', 'tmp')), [], 'no temp files');
  });
});
