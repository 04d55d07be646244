import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createSafeFetch, type Resolver } from '../../core/net/index.ts';

async function serve(host: string, handler: http.RequestListener): Promise<{ url: string; close: () => Promise<void> }> {
  const srv = http.createServer(handler);
  await new Promise<void>((r) => srv.listen(0, host, r));
  const { port } = srv.address() as AddressInfo;
  return { url: `http://${host}:${port}`, close: () => new Promise((r) => srv.close(() => r())) };
}

let hits = 0;
const target = await serve('127.0.0.1', (_req, res) => {
  hits++;
  res.end('secret from loopback');
});
t.teardown(target.close);
const port = new URL(target.url).port;

// A name server stand-in: public-looking names that answer private addresses.
const resolver: Resolver = (hostname, _o, cb) => {
  const table: Record<string, string> = { 'internal.example.test': '10.0.0.7', 'loop.example.test': '127.0.0.1', 'public.example.test': '93.184.216.34' };
  const a = table[hostname];
  if (!a) return cb(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  cb(null, [{ address: a, family: 4 }]);
};

const guarded = createSafeFetch({ resolver });

t.test('the SSRF matrix is refused before any byte reaches the target', async (t) => {
  const urls = [
    `http://127.0.0.1:${port}/`,
    `http://localhost:${port}/`,
    `http://[::1]:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://[::ffff:7f00:1]:${port}/`,
    `http://0x7f.1:${port}/`,
    `http://2130706433:${port}/`,
    `http://0177.0.0.1:${port}/`,
    `http://127.1:${port}/`,
    'http://169.254.169.254/latest/meta-data/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://10.0.0.1/',
    'http://172.16.0.1/',
    'http://172.31.255.255/',
    'http://192.168.1.1/',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://[fc00::1]/',
    'http://[fd12:3456::1]/',
    'http://[fe80::1]/',
    'http://[64:ff9b::7f00:1]/',
    'file:///etc/passwd',
    'gopher://127.0.0.1:70/_x',
    'ftp://example.test/',
    `http://internal.example.test:${port}/`,
    `http://loop.example.test:${port}/`,
    `http://user:pw@public.example.test/`,
  ];
  for (const u of urls) {
    await t.rejects(guarded(u, { timeoutMs: 2000 }), { code: 'ssrf_blocked', statusCode: 400 }, u);
  }
  t.equal(hits, 0, 'the loopback server never saw a request');
});

t.test('a redirect to loopback is refused at the hop', async (t) => {
  const redirector = await serve('127.0.0.2', (_req, res) => {
    res.writeHead(302, { location: `http://127.0.0.1:${port}/` });
    res.end();
  });
  t.teardown(redirector.close);
  const f = createSafeFetch({ allow: ['127.0.0.2/32'], resolver });
  await t.rejects(f(redirector.url), { code: 'ssrf_blocked' });
  t.equal(hits, 0);
});

t.test('allow-listed destinations work; limits hold', async (t) => {
  const f = createSafeFetch({ allow: ['127.0.0.1'] });
  const res = await f(`${target.url}/x`);
  t.equal(res.status, 200);
  t.equal(await res.text(), 'secret from loopback');

  const big = await serve('127.0.0.1', (_req, res) => res.end(Buffer.alloc(64 * 1024, 1)));
  t.teardown(big.close);
  const r2 = await f(big.url, { maxBytes: 1024 });
  await t.rejects(r2.arrayBuffer(), /larger than 1024 bytes/);

  const slow = await serve('127.0.0.1', () => {
    /* never answers */
  });
  t.teardown(() => {
    slow.close();
  });
  await t.rejects(f(slow.url, { timeoutMs: 200 }), { code: 'outbound_request_failed', details: { reason: 'timeout' } });

  const hopper = await serve('127.0.0.1', (req, res) => {
    if (req.url === '/done') return res.end(`method=${req.method}`);
    res.writeHead(303, { location: '/done' });
    res.end();
  });
  t.teardown(hopper.close);
  const r3 = await f(hopper.url, { method: 'POST', body: 'x' });
  t.equal(await r3.text(), 'method=GET', '303 turns POST into GET');

  const loop = await serve('127.0.0.1', (_req, res) => {
    res.writeHead(302, { location: '/again' });
    res.end();
  });
  t.teardown(loop.close);
  await t.rejects(f(loop.url, { maxRedirects: 3 }), { code: 'outbound_request_failed', details: { reason: 'redirects' } });
});
