/**
 * bench/files-transfer: upload and download of one large file (BENCH_FILE_BYTES, default 1 GiB)
 * through Trellis, against baselines measured in the same run on the same disk / server.
 *
 * - local backend: a direct upload (one PUT of the file, streamed from disk over HTTP, hashed and
 *   written by the server) and a download (GET content streamed to a file) against a plain
 *   streamed file copy (read + write) of the same file on the same disk. Goal: ratio >= 0.7.
 * - s3 backend (s3rver on 127.0.0.1): a direct upload to the presigned URL plus the completion
 *   Trellis does (HeadObject, hash of the object), and a download proxied by Trellis, against a
 *   direct SDK PutObject / GetObject of the same file to the same server.
 * Peak RSS growth of this process (server and client) is reported for the Trellis legs.
 *
 * BENCH_BACKENDS=local,s3 (default both).
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import local from '../adapters/storage/local/index.ts';
import s3adapter, { S3Config, S3Storage } from '../adapters/storage/s3/index.ts';
import { buildApp, type Trellis } from '../core/app.ts';
import { loadConfig, validateConfig } from '../core/config/index.ts';
import files from '../plugins/files/index.ts';
import workspaces from '../plugins/workspaces/index.ts';
import { startS3 } from '../test/adapters/storage/s3rver.ts';
import { benchDatabase, envInt } from './lib.ts';

const SIZE = envInt('BENCH_FILE_BYTES', 1024 * 1024 * 1024);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'local,s3').split(',').map((s) => s.trim());
const dir = mkdtempSync(path.join(os.tmpdir(), 'trellis-bench-files-'));
const src = path.join(dir, 'source.bin');
const mib = (n: number) => n / 1048576;
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s (${(mib(SIZE) / (ms / 1000)).toFixed(0)} MiB/s)`;

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Runs `fn`, returning wall time and the peak RSS growth while it ran (garbage collected as it goes). */
async function measure(fn: () => Promise<void>): Promise<{ ms: number; rssGrowth: number }> {
  gc();
  const base = process.memoryUsage().rss;
  let peak = base;
  let n = 0;
  const timer = setInterval(() => {
    if (++n % 2 === 0) gc();
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  const t0 = performance.now();
  try {
    await fn();
  } finally {
    clearInterval(timer);
  }
  const ms = performance.now() - t0;
  return { ms, rssGrowth: Math.max(0, Math.max(peak, process.memoryUsage().rss) - base) };
}

async function writeSource(): Promise<void> {
  const block = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = (i * 2654435761) >>> 24;
  let left = SIZE;
  await pipeline(
    Readable.from(
      (function* () {
        while (left > 0) {
          const n = Math.min(left, block.length);
          left -= n;
          yield n === block.length ? block : block.subarray(0, n);
        }
      })(),
    ),
    createWriteStream(src),
  );
}

async function streamCopy(from: string, to: string): Promise<void> {
  await pipeline(createReadStream(from, { highWaterMark: 1024 * 1024 }), createWriteStream(to));
}

function put(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, method: 'PUT', path: `${u.pathname}${u.search}`, headers: { ...headers, 'content-length': String(SIZE) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    createReadStream(src, { highWaterMark: 1024 * 1024 }).pipe(req);
  });
}

function download(url: string, headers: Record<string, string>, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: ${res.statusCode}`));
        pipeline(res, createWriteStream(to)).then(resolve, reject);
      })
      .on('error', reject);
  });
}

interface Server {
  trellis: Trellis;
  base: string;
  /** The configured base URL (in the server's own upload URLs), which may differ from where it listens. */
  configured: string;
  headers: Record<string, string>;
}

async function startServer(dbUrl: string, dataDir: string, pluginConfig: Record<string, Record<string, unknown>>, adapter: typeof local): Promise<Server> {
  const config = loadConfig({ TRELLIS_DATA_DIR: dataDir, TRELLIS_LOG_LEVEL: 'silent' });
  Object.assign(config.plugins, pluginConfig);
  const trellis = await buildApp({ config, plugins: [workspaces, files], adapters: [adapter], databaseUrl: dbUrl, logger: false });
  await trellis.app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(trellis.app.server.address() as { port: number }).port}`;
  const base = `${origin}/api/v1`;
  const signUp = await fetch(`${base}/auth/sign-up`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `bench${Date.now()}@example.test`, password: 'bench password' }) });
  const cookie = signUp.headers.get('set-cookie')!.split(';')[0];
  const ws = (await (await fetch(`${base}/workspaces`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, origin }, body: JSON.stringify({ name: `Bench ${Date.now()}` }) })).json()) as { handle: string };
  const key = (await (await fetch(`${base}/workspaces/${ws.handle}/api-keys`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, origin }, body: JSON.stringify({ name: 'bench' }) })).json()) as { apiKey: { key: string } };
  return { trellis, base, configured: config.baseUrl, headers: { authorization: `Bearer ${key.apiKey.key}` } };
}

async function createDirect(s: Server, name: string): Promise<{ id: string; url: string; headers: Record<string, string> }> {
  const res = await fetch(`${s.base}/files`, { method: 'POST', headers: { ...s.headers, 'content-type': 'application/json' }, body: JSON.stringify({ mode: 'direct', name, sizeBytes: SIZE }) });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { file: { id: string }; upload: { url: string; headers: Record<string, string> } };
  const url = body.upload.url.startsWith(s.configured) ? `${s.base.slice(0, -'/api/v1'.length)}${body.upload.url.slice(s.configured.length)}` : body.upload.url;
  return { id: body.file.id, url, headers: body.upload.headers };
}

async function fileStatus(s: Server, id: string): Promise<{ status: string; sizeBytes: number }> {
  return (await (await fetch(`${s.base}/files/${id}`, { headers: s.headers })).json()) as { status: string; sizeBytes: number };
}

function report(label: string, subject: { ms: number; rssGrowth: number }, baselineLabel: string, baselineMs: number): void {
  console.log(`  ${label}: ${fmt(subject.ms)}, peak RSS growth ${mib(subject.rssGrowth).toFixed(1)} MiB`);
  console.log(`  ${baselineLabel}: ${fmt(baselineMs)}`);
  console.log(`  ratio (baseline time / Trellis time): ${(baselineMs / subject.ms).toFixed(2)}`);
}

const db = await benchDatabase();
try {
  console.log(`files-transfer: ${mib(SIZE).toFixed(0)} MiB, Node ${process.version}, ${os.cpus().length} CPUs`);
  await writeSource();

  if (BACKENDS.includes('local')) {
    console.log('local backend');
    const dataDir = path.join(dir, 'data');
    const s = await startServer(db.url, dataDir, {}, local);
    try {
      const copy = await measure(() => streamCopy(src, path.join(dir, 'copy.bin')));
      rmSync(path.join(dir, 'copy.bin'));
      const f = await createDirect(s, 'big.bin');
      const up = await measure(async () => {
        const status = await put(f.url, { ...f.headers, 'content-type': 'application/octet-stream' });
        if (status !== 200) throw new Error(`upload: ${status}`);
      });
      const st = await fileStatus(s, f.id);
      if (st.status !== 'uploaded' || st.sizeBytes !== SIZE) throw new Error(`after upload: ${JSON.stringify(st)}`);
      report('upload (direct PUT, hashed)', up, 'plain file copy (stream)', copy.ms);
      const down = await measure(() => download(`${s.base}/files/${f.id}/content`, s.headers, path.join(dir, 'down.bin')));
      if ((await stat(path.join(dir, 'down.bin'))).size !== SIZE) throw new Error('download size');
      rmSync(path.join(dir, 'down.bin'));
      report('download (GET content to a file)', down, 'plain file copy (stream)', copy.ms);
    } finally {
      await s.trellis.close();
    }
  }

  if (BACKENDS.includes('s3')) {
    console.log('s3 backend (s3rver on 127.0.0.1)');
    const s3 = await startS3();
    const cfg = s3.config('bench-files');
    const direct = new S3Storage(validateConfig(S3Config, cfg, '') as never);
    await direct.init();
    const s = await startServer(db.url, path.join(dir, 'data-s3'), { 'storage-s3': cfg, files: { backend: 's3' } }, s3adapter);
    try {
      const sdkPut = await measure(async () => {
        await direct.client.send(new PutObjectCommand({ Bucket: 'bench-files', Key: 'baseline.bin', Body: createReadStream(src, { highWaterMark: 1024 * 1024 }), ContentLength: SIZE }));
      });
      const f = await createDirect(s, 'big.bin');
      const up = await measure(async () => {
        const status = await put(f.url, f.headers);
        if (status !== 200) throw new Error(`presigned upload: ${status}`);
        const st = await fileStatus(s, f.id); // completes the file: HeadObject + hash of the object
        if (st.status !== 'uploaded' || st.sizeBytes !== SIZE) throw new Error(`after upload: ${JSON.stringify(st)}`);
      });
      report('upload (presigned PUT + completion on next GET)', up, 'SDK PutObject', sdkPut.ms);
      const sdkGet = await measure(async () => {
        const r = await direct.client.send(new GetObjectCommand({ Bucket: 'bench-files', Key: 'baseline.bin' }));
        await pipeline(r.Body as Readable, createWriteStream(path.join(dir, 'sdk.bin')));
      });
      rmSync(path.join(dir, 'sdk.bin'));
      const down = await measure(() => download(`${s.base}/files/${f.id}/content`, s.headers, path.join(dir, 'down-s3.bin')));
      if ((await stat(path.join(dir, 'down-s3.bin'))).size !== SIZE) throw new Error('download size');
      rmSync(path.join(dir, 'down-s3.bin'));
      report('download (GET content, proxied from S3)', down, 'SDK GetObject', sdkGet.ms);
    } finally {
      await s.trellis.close();
      await direct.close();
      await s3.close();
    }
  }
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
