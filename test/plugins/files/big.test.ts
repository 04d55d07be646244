/**
 * A 1 GiB file (size: TRELLIS_BIG_FILE_BYTES) uploaded with one direct PUT and downloaded again
 * over a real socket, generated and hashed on the fly: the process's RSS stays flat (nothing
 * buffers the whole file), and the bytes come back identical.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import local from '../../../adapters/storage/local/index.ts';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import files from '../../../plugins/files/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import { generated } from '../../contracts/storage.ts';

const SIZE = Number(process.env.TRELLIS_BIG_FILE_BYTES ?? 1024 * 1024 * 1024);
const MAX_GROWTH = 64 * 1024 * 1024;

const app = await buildTestApp({ plugins: [workspaces, files], adapters: [local] });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
await app.trellis.app.listen({ port: 0, host: '127.0.0.1' });
const port = (app.trellis.app.server.address() as AddressInfo).port;

// Collect garbage while sampling, so RSS shows what is retained, not what awaits collection.
v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function sampler() {
  gc();
  const base = process.memoryUsage().rss;
  let peak = base;
  let buffers = 0;
  let n = 0;
  const timer = setInterval(() => {
    if (++n % 2 === 0) gc();
    const m = process.memoryUsage();
    peak = Math.max(peak, m.rss);
    buffers = Math.max(buffers, m.arrayBuffers);
  }, 25);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      return { base, peak, growth: peak - base, buffers };
    },
  };
}

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

t.test(`upload and download ${mib(SIZE)} with flat memory`, async (t) => {
  const created = await app.inject({ method: 'POST', url: '/api/v1/files', headers: ws.auth, payload: { mode: 'direct', name: 'big.bin', sizeBytes: SIZE } });
  t.equal(created.statusCode, 201);
  const { file, upload } = created.json();
  const u = new URL(upload.url);

  const up = sampler();
  const t0 = Date.now();
  const g = generated(SIZE, 1024 * 1024);
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'PUT', path: `${u.pathname}${u.search}`, headers: { 'content-length': String(SIZE), 'content-type': 'application/octet-stream' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    g.stream.pipe(req);
  });
  const upMem = up.stop();
  t.equal(status, 200);
  t.comment(`upload: ${mib(SIZE)} in ${Date.now() - t0} ms, RSS growth ${mib(upMem.growth)}, peak Buffer memory ${mib(upMem.buffers)}`);
  t.ok(upMem.growth < MAX_GROWTH, `upload RSS growth ${mib(upMem.growth)} < ${mib(MAX_GROWTH)}`);
  const expected = g.digest();
  const meta = await app.inject({ method: 'GET', url: `/api/v1/files/${file.id}`, headers: ws.auth });
  t.match(meta.json(), { status: 'uploaded', sizeBytes: SIZE, checksumSha256: expected });

  const down = sampler();
  const t1 = Date.now();
  const hash = createHash('sha256');
  let received = 0;
  await new Promise<void>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: `/api/v1/files/${file.id}/content`, headers: ws.auth }, (res) => {
        t.equal(res.statusCode, 200);
        t.equal(res.headers['content-length'], String(SIZE));
        pipeline(res, async function* (src) {
          for await (const c of src) {
            received += (c as Buffer).length;
            hash.update(c as Buffer);
          }
        }).then(resolve, reject);
      })
      .on('error', reject);
  });
  const downMem = down.stop();
  t.comment(`download: ${mib(SIZE)} in ${Date.now() - t1} ms, RSS growth ${mib(downMem.growth)}, peak Buffer memory ${mib(downMem.buffers)}`);
  t.equal(received, SIZE);
  t.equal(hash.digest('hex'), expected, 'identical bytes');
  t.ok(downMem.growth < MAX_GROWTH, `download RSS growth ${mib(downMem.growth)} < ${mib(MAX_GROWTH)}`);
});
