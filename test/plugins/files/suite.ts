/**
 * The files plugin's behaviour, run once per storage backend (local.test.ts, s3.test.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';
import type { AnyAdapter } from '../../../core/registry/index.ts';
import { buildTestApp, createApiKey, setupWorkspace, type TestApp, type WorkspaceFixture } from '../../../core/testing/index.ts';
import files from '../../../plugins/files/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

export interface Backend {
  name: string;
  adapter: AnyAdapter;
  pluginConfig: Record<string, Record<string, unknown>>;
  /** Smallest part size this backend accepts for non-last parts. */
  partSize: number;
  /** Whether wrong part ETags are detected (s3rver has no ListParts). */
  verifiesParts: boolean;
  /** Object keys left in storage (to check nothing leaks). */
  storedKeys(app: TestApp): Promise<string[]>;
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

export async function deadline<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startFilesApp(backend: Backend, extra: { env?: Record<string, string>; files?: Record<string, unknown> } = {}): Promise<TestApp> {
  return buildTestApp({
    plugins: [workspaces, files],
    adapters: [backend.adapter],
    env: extra.env,
    pluginConfig: { ...backend.pluginConfig, files: { ...(backend.pluginConfig.files ?? {}), minPartSizeBytes: backend.partSize, sweepIntervalMs: 100, ...extra.files } },
  });
}

/** PUT to an upload URL: the app's own signed URL through inject, a presigned S3 URL over HTTP. */
export async function putTo(app: TestApp, upload: { url: string; headers: Record<string, string> }, body: Buffer | string): Promise<{ status: number; etag: string | null; json: () => unknown }> {
  if (upload.url.startsWith(app.config.baseUrl)) {
    const u = new URL(upload.url);
    const res = await app.inject({ method: 'PUT', url: `${u.pathname}${u.search}`, headers: { 'content-type': 'application/octet-stream', ...upload.headers }, payload: body });
    return { status: res.statusCode, etag: (res.headers.etag as string) ?? null, json: () => res.json() };
  }
  const res = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body });
  const text = await res.text();
  return { status: res.status, etag: res.headers.get('etag'), json: () => JSON.parse(text) };
}

export function filesSuite(t: Test, backend: Backend): void {
  let app: TestApp;
  let ws: WorkspaceFixture;
  let other: WorkspaceFixture;
  let remote: http.Server;
  let remoteUrl: string;

  t.before(async () => {
    app = await startFilesApp(backend, { env: { TRELLIS_OUTBOUND_ALLOW: '127.0.0.1' } });
    ws = await setupWorkspace(app);
    other = await setupWorkspace(app);
    remote = http.createServer((req, res) => {
      if (req.url === '/data.csv') {
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end('a,b\n1,2\n');
      } else if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' });
        res.end();
      } else {
        res.writeHead(404);
        res.end('nope');
      }
    });
    await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
    remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
  });
  t.teardown(async () => {
    await app?.close();
    remote?.close();
  });

  const api = (method: string, url: string, payload?: unknown, headers: Record<string, string> = ws.auth) =>
    app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers, payload: payload as string });

  t.test('document: created uploaded, read, replaced; checksum verified', async (t) => {
    const res = await api('POST', '/files', { mode: 'document', name: 'notes.md', content: '# Hello', directory: '/docs/', metadata: { team: 'a' } });
    t.equal(res.statusCode, 201, res.body);
    const { file, upload } = res.json();
    t.equal(upload, null);
    t.match(file, { name: 'notes.md', originalName: 'notes.md', directory: 'docs', path: 'docs/notes.md', contentType: 'text/markdown', extension: 'md', sizeBytes: 7, checksumSha256: sha('# Hello'), metadata: { team: 'a' }, source: 'document', status: 'uploaded', externalUrl: null, errorMessage: null });
    t.ok(file.completedAt);
    const content = await api('GET', `/files/${file.id}/content`);
    t.equal(content.statusCode, 200);
    t.equal(content.body, '# Hello');
    t.match(content.headers['content-type'], /^text\/markdown/);
    const put = await app.inject({ method: 'PUT', url: `/api/v1/files/${file.id}/content`, headers: { ...ws.auth, 'content-type': 'text/plain' }, payload: 'plain now' });
    t.equal(put.statusCode, 200, put.body);
    t.match(put.json(), { sizeBytes: 9, contentType: 'text/plain', checksumSha256: sha('plain now') });
    const putJson = await api('PUT', `/files/${file.id}/content`, { content: 'json body' });
    t.equal(putJson.statusCode, 200, putJson.body);
    t.equal((await api('GET', `/files/${file.id}/content`)).body, 'json body');
    const bad = await api('PUT', `/files/${file.id}/content`, { content: 1 });
    t.equal(bad.statusCode, 400);
    t.equal(bad.json()._tag, 'HttpApiDecodeError');

    const mismatch = await api('POST', '/files', { mode: 'document', name: 'x.txt', content: 'abc', checksumSha256: sha('abd') });
    t.equal(mismatch.statusCode, 201);
    const unicode = (await api('POST', '/files', { mode: 'document', name: 'Résumé "final".txt', content: 'x' })).json().file;
    const cd = (await api('GET', `/files/${unicode.id}/content`)).headers['content-disposition'];
    t.equal(cd, `attachment; filename="R_sum_ _final_.txt"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.txt`, 'non-ASCII and quotes are safe in Content-Disposition');
    t.match(mismatch.json().file, { status: 'failed', errorMessage: /Checksum mismatch/ });
  });

  t.test('direct: one PUT makes the file usable with no further call', async (t) => {
    const data = randomBytes(300_000);
    const res = await api('POST', '/files', { mode: 'direct', name: 'photo.png', sizeBytes: data.length, checksumSha256: sha(data) });
    t.equal(res.statusCode, 201, res.body);
    const { file, upload } = res.json();
    t.match(file, { status: 'pending_upload', source: 'direct', contentType: 'image/png', sizeBytes: 0, completedAt: null });
    t.match(upload, { type: 'direct', method: 'PUT' });
    t.ok(Date.parse(upload.expiresAt) > Date.now());
    const content409 = await api('GET', `/files/${file.id}/content`);
    t.equal(content409.statusCode, 409, 'no content before the upload');
    const put = await putTo(app, upload, data);
    t.equal(put.status, 200);
    const got = await api('GET', `/files/${file.id}`);
    t.match(got.json(), { status: 'uploaded', sizeBytes: data.length, checksumSha256: sha(data) });
    t.ok(got.json().etag);
    t.ok(got.json().completedAt);
    const content = await api('GET', `/files/${file.id}/content`);
    t.equal(content.statusCode, 200);
    t.equal(content.rawPayload.length, data.length);
    t.ok(content.rawPayload.equals(data), 'same bytes back');
    t.equal(content.headers['content-type'], 'image/png');
    t.equal(content.headers['content-disposition'], `attachment; filename="photo.png"; filename*=UTF-8''photo.png`);
    t.equal(content.headers['accept-ranges'], 'bytes');
    const range = await app.inject({ method: 'GET', url: `/api/v1/files/${file.id}/content?disposition=inline`, headers: { ...ws.auth, range: 'bytes=100-199' } });
    t.equal(range.statusCode, 206);
    t.equal(range.headers['content-range'], `bytes 100-199/${data.length}`);
    t.ok(range.rawPayload.equals(data.subarray(100, 200)));
    t.match(range.headers['content-disposition'], /^inline;/);
    const suffix = await app.inject({ method: 'GET', url: `/api/v1/files/${file.id}/content`, headers: { ...ws.auth, range: 'bytes=-10' } });
    t.ok(suffix.rawPayload.equals(data.subarray(data.length - 10)));
    const unsat = await app.inject({ method: 'GET', url: `/api/v1/files/${file.id}/content`, headers: { ...ws.auth, range: `bytes=${data.length}-` } });
    t.equal(unsat.statusCode, 416);
    t.equal(unsat.headers['content-range'], `bytes */${data.length}`);
    t.equal((await api('GET', '/files')).json().find((f: { id: string }) => f.id === file.id)?.status, 'uploaded', 'listed as uploaded');
    const head = await app.inject({ method: 'HEAD', url: `/api/v1/files/${file.id}/content`, headers: ws.auth });
    t.equal(head.statusCode, 200);
    t.equal(head.headers['content-length'], String(data.length), 'HEAD: the length, no body');
    t.equal(head.rawPayload.length, 0);
  });

  t.test('PUT content replaces the bytes of an uploaded file (streamed)', async (t) => {
    const { file, upload } = (await api('POST', '/files', { mode: 'direct', name: 'data.bin' })).json();
    t.equal((await app.inject({ method: 'PUT', url: `/api/v1/files/${file.id}/content`, headers: { ...ws.auth, 'content-type': 'application/octet-stream' }, payload: 'early' })).statusCode, 409, 'not before the upload');
    await putTo(app, upload, Buffer.from('version one'));
    t.equal((await api('GET', `/files/${file.id}`)).json().status, 'uploaded');
    const next = randomBytes(70_000);
    const put = await app.inject({ method: 'PUT', url: `/api/v1/files/${file.id}/content`, headers: { ...ws.auth, 'content-type': 'application/x-custom' }, payload: next });
    t.equal(put.statusCode, 200, put.body);
    t.match(put.json(), { id: file.id, status: 'uploaded', sizeBytes: next.length, checksumSha256: sha(next), contentType: 'application/x-custom' });
    const got = await api('GET', `/files/${file.id}/content`);
    t.ok(got.rawPayload.equals(next), 'new bytes served');
    t.equal(got.headers['content-type'], 'application/x-custom');
  });

  t.test('direct: checksum mismatch ends failed with a message', async (t) => {
    const res = await api('POST', '/files', { mode: 'direct', name: 'bad.bin', checksumSha256: sha('something else') });
    const { file, upload } = res.json();
    await putTo(app, upload, Buffer.from('actual content'));
    const got = await api('GET', `/files/${file.id}`);
    t.match(got.json(), { status: 'failed', errorMessage: /Checksum mismatch/ });
    t.equal((await api('GET', `/files/${file.id}/content`)).statusCode, 409);
  });

  if (backend.name === 'local') {
    t.test('direct (local): the signed URL is checked and used once', async (t) => {
      const { file, upload } = (await api('POST', '/files', { mode: 'direct', name: 'once.txt' })).json();
      const u = new URL(upload.url);
      const forged = new URL(upload.url);
      forged.searchParams.set('sig', 'f'.repeat(64));
      const f = await app.inject({ method: 'PUT', url: `${forged.pathname}${forged.search}`, payload: 'x', headers: { 'content-type': 'text/plain' } });
      t.equal(f.statusCode, 403);
      const expired = new URL(upload.url);
      expired.searchParams.set('expires', '1');
      t.equal((await app.inject({ method: 'PUT', url: `${expired.pathname}${expired.search}`, payload: 'x' })).statusCode, 403, 'changed expiry breaks the signature');
      const ok = await app.inject({ method: 'PUT', url: `${u.pathname}${u.search}`, payload: '{"json": "is just bytes here"}', headers: { 'content-type': 'application/json' } });
      t.equal(ok.statusCode, 200, ok.body);
      t.match(ok.json(), { id: file.id, status: 'uploaded', sizeBytes: 30 });
      const again = await app.inject({ method: 'PUT', url: `${u.pathname}${u.search}`, payload: 'x' });
      t.equal(again.statusCode, 409);

      // A node that died while receiving a PUT leaves the file `uploading` with a lease that
      // lapses; the same URL then works again.
      const crashed = (await api('POST', '/files', { mode: 'direct', name: 'retry.txt' })).json();
      await app.trellis.db.query(`UPDATE files_files SET status = 'uploading', busy_until = now() - interval '1 second' WHERE id = $1`, [crashed.file.id]);
      t.equal((await api('GET', `/files/${crashed.file.id}`)).json().status, 'uploading');
      const retried = await putTo(app, crashed.upload, 'second try');
      t.equal(retried.status, 200, 'the upload URL works again once the lease lapsed');
      const held = (await api('POST', '/files', { mode: 'direct', name: 'held.txt' })).json();
      await app.trellis.db.query(`UPDATE files_files SET status = 'uploading', busy_until = now() + interval '1 minute' WHERE id = $1`, [held.file.id]);
      t.equal((await putTo(app, held.upload, 'x')).status, 409, 'not while another upload holds the lease');
      const empty = (await api('POST', '/files', { mode: 'direct', name: 'empty.txt' })).json();
      const eu = new URL(empty.upload.url);
      const put0 = await app.inject({ method: 'PUT', url: `${eu.pathname}${eu.search}` });
      t.equal(put0.statusCode, 200, put0.body);
      t.match(put0.json(), { status: 'uploaded', sizeBytes: 0, checksumSha256: sha('') });
      t.equal((await api('GET', `/files/${empty.file.id}/content`)).body, '', 'an empty file reads back empty');
      const sized = (await api('POST', '/files', { mode: 'direct', name: 'sized.txt', sizeBytes: 5 })).json();
      const wrong = await putTo(app, sized.upload, 'too long body');
      t.equal(wrong.status, 400, 'a body of another size than declared is refused');
    });
  }

  t.test('multipart: parts, more part URLs, wrong and missing ETags, complete', async (t) => {
    const ps = backend.partSize;
    const data = randomBytes(ps * 2 + 1000);
    const res = await api('POST', '/files', { mode: 'multipart', name: 'big.bin', sizeBytes: data.length, partSizeBytes: ps, checksumSha256: sha(data) });
    t.equal(res.statusCode, 201, res.body);
    const { file, upload } = res.json();
    t.match(file, { status: 'uploading', source: 'multipart' });
    t.match(upload, { type: 'multipart', partSizeBytes: ps, partCount: 3 });
    t.ok(upload.uploadId);
    t.equal(upload.parts.length, 3);
    const more = await api('POST', `/files/${file.id}/parts`, { partNumbers: [3, 1] });
    t.equal(more.statusCode, 200, more.body);
    t.same(more.json().parts.map((p: { partNumber: number }) => p.partNumber), [1, 3]);
    t.equal((await api('POST', `/files/${file.id}/parts`, { partNumbers: [4] })).statusCode, 400, 'beyond the last part');
    const etags: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await putTo(app, more.json().parts.find((p: { partNumber: number }) => p.partNumber === i + 1) ?? upload.parts[i], data.subarray(i * ps, Math.min(data.length, (i + 1) * ps)));
      t.equal(r.status, 200);
      t.ok(r.etag);
      etags.push(r.etag!);
    }
    const missing = await api('POST', `/files/${file.id}/complete`, { parts: [{ partNumber: 1, etag: etags[0] }, { partNumber: 2, etag: etags[1] }] });
    t.equal(missing.statusCode, 400);
    t.match(missing.body, /missing/);
    if (backend.verifiesParts) {
      const wrong = await api('POST', `/files/${file.id}/complete`, { parts: [{ partNumber: 1, etag: etags[0] }, { partNumber: 2, etag: '"0000"' }, { partNumber: 3, etag: etags[2] }] });
      t.equal(wrong.statusCode, 400, wrong.body);
      t.equal(wrong.json().code, 'invalid_request');
    }
    const still = await api('GET', `/files/${file.id}`);
    t.equal(still.json().status, 'uploading', 'nothing written by refused completes');
    t.equal((await api('GET', `/files/${file.id}/content`)).statusCode, 409);
    const done = await api('POST', `/files/${file.id}/complete`, { parts: etags.map((etag, i) => ({ partNumber: i + 1, etag })) });
    t.equal(done.statusCode, 200, done.body);
    t.match(done.json().file, { status: 'uploaded', sizeBytes: data.length, checksumSha256: sha(data) });
    const content = await api('GET', `/files/${file.id}/content`);
    t.ok(content.rawPayload.equals(data), 'assembled in order');
    t.equal((await api('POST', `/files/${file.id}/complete`, { parts: etags.map((etag, i) => ({ partNumber: i + 1, etag })) })).statusCode, 409, 'completing twice');
  });

  t.test('multipart: request validation', async (t) => {
    const tooSmall = await api('POST', '/files', { mode: 'multipart', name: 'x.bin', sizeBytes: backend.partSize * 3, partSizeBytes: Math.floor(backend.partSize / 2) });
    t.equal(tooSmall.statusCode, 400);
    const noSize = await api('POST', '/files', { mode: 'multipart', name: 'x.bin' });
    t.equal(noSize.statusCode, 400);
    t.equal(noSize.json()._tag, 'HttpApiDecodeError');
    const unknownMode = await api('POST', '/files', { mode: 'ftp', name: 'x' });
    t.equal(unknownMode.statusCode, 400);
    const badName = await api('POST', '/files', { mode: 'document', name: '../etc', content: '' });
    t.equal(badName.statusCode, 400);
    const badDir = await api('POST', '/files', { mode: 'document', name: 'a.txt', directory: 'a/../b', content: '' });
    t.equal(badDir.statusCode, 400);
  });

  t.test('externalUrl: imported through the SSRF guard', async (t) => {
    const res = await api('POST', '/files', { mode: 'externalUrl', externalUrl: `${remoteUrl}/data.csv`, directory: 'imports' });
    t.equal(res.statusCode, 201, res.body);
    t.match(res.json(), { file: { status: 'importing', name: 'data.csv', path: 'imports/data.csv', externalUrl: `${remoteUrl}/data.csv` }, upload: null });
    const id = res.json().file.id;
    const done = await deadline('import', async () => {
      const f = (await api('GET', `/files/${id}`)).json();
      return f.status === 'importing' ? undefined : f;
    });
    t.match(done, { status: 'uploaded', sizeBytes: 8, contentType: 'text/csv', checksumSha256: sha('a,b\n1,2\n') });
    t.equal((await api('GET', `/files/${id}/content`)).body, 'a,b\n1,2\n');

    const notFound = (await api('POST', '/files', { mode: 'externalUrl', externalUrl: `${remoteUrl}/missing`, name: 'm.txt' })).json().file.id;
    const nf = await deadline('404 import', async () => {
      const f = (await api('GET', `/files/${notFound}`)).json();
      return f.status === 'importing' ? undefined : f;
    });
    t.match(nf, { status: 'failed', errorMessage: /404/ });

    // Documented: refused destinations end `failed` with errorMessage (the fetch runs after the 201).
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://localhost:1/x', `${remoteUrl}/redirect`, 'http://10.0.0.1/x']) {
      const r = await api('POST', '/files', { mode: 'externalUrl', externalUrl: url, name: 'ssrf.txt' });
      t.equal(r.statusCode, 201);
      const f = await deadline('refusal', async () => {
        const x = (await api('GET', `/files/${r.json().file.id}`)).json();
        return x.status === 'importing' ? undefined : x;
      });
      t.equal(f.status, 'failed', url);
      t.match(f.errorMessage, /not allowed/, url);
    }
    for (const url of ['file:///etc/passwd', 'gopher://127.0.0.1/x', 'not a url']) {
      const r = await api('POST', '/files', { mode: 'externalUrl', externalUrl: url });
      t.equal(r.statusCode, 400, url);
    }
  });

  t.test('names: collisions get a numbered suffix; list filters', async (t) => {
    const a = (await api('POST', '/files', { mode: 'document', name: 'report.txt', content: 'a', directory: 'dup' })).json().file;
    const b = (await api('POST', '/files', { mode: 'document', name: 'report.txt', content: 'b', directory: 'dup' })).json().file;
    const c = (await api('POST', '/files', { mode: 'document', name: 'report.txt', content: 'c', directory: 'dup' })).json().file;
    t.equal(a.name, 'report.txt');
    t.match(b, { name: 'report (1).txt', originalName: 'report.txt', path: 'dup/report (1).txt' });
    t.equal(c.name, 'report (2).txt');
    const list = await api('GET', '/files?directory=dup');
    t.equal(list.statusCode, 200);
    t.same(list.json().map((f: { name: string }) => f.name).sort(), ['report (1).txt', 'report (2).txt', 'report.txt']);
    const paged = await api('GET', '/files?directory=dup&limit=2&offset=2');
    t.equal(paged.json().length, 1);
    const docs = await api('GET', '/files?source=document&status=failed');
    t.ok(docs.json().every((f: { source: string; status: string }) => f.source === 'document' && f.status === 'failed'));
  });

  t.test('delete removes the file and its stored bytes', async (t) => {
    const { file, upload } = (await api('POST', '/files', { mode: 'direct', name: 'gone.bin' })).json();
    await putTo(app, upload, Buffer.from('bytes'));
    t.equal((await api('GET', `/files/${file.id}`)).json().status, 'uploaded');
    t.ok((await backend.storedKeys(app)).some((k) => k.endsWith(file.id)), 'stored');
    const del = await api('DELETE', `/files/${file.id}`);
    t.equal(del.statusCode, 204);
    t.equal((await api('GET', `/files/${file.id}`)).statusCode, 404);
    t.equal((await api('DELETE', `/files/${file.id}`)).statusCode, 404);
    t.notOk((await backend.storedKeys(app)).some((k) => k.endsWith(file.id)), 'bytes deleted');
    t.notOk((await api('GET', '/files')).json().some((f: { id: string }) => f.id === file.id));
    // The name is free again.
    const again = (await api('POST', '/files', { mode: 'document', name: 'gone.bin', content: 'x' })).json().file;
    t.equal(again.name, 'gone.bin');
  });

  t.test('tenant isolation: another workspace gets 404 on every path-id route', async (t) => {
    const { file } = (await api('POST', '/files', { mode: 'multipart', name: 'mine.bin', sizeBytes: 10 })).json();
    const doc = (await api('POST', '/files', { mode: 'document', name: 'mine.md', content: 'secret' })).json().file;
    for (const [method, url, body] of [
      ['GET', `/files/${doc.id}`],
      ['GET', `/files/${doc.id}/content`],
      ['PUT', `/files/${doc.id}/content`, { content: 'overwrite' }],
      ['DELETE', `/files/${doc.id}`],
      ['POST', `/files/${file.id}/parts`, { partNumbers: [1] }],
      ['POST', `/files/${file.id}/complete`, { parts: [{ partNumber: 1, etag: 'x' }] }],
    ] as const) {
      const r = await api(method, url, body, other.auth);
      t.equal(r.statusCode, 404, `${method} ${url}`);
      t.equal(r.json().code, 'not_found');
    }
    t.notOk((await api('GET', '/files', undefined, other.auth)).json().some((f: { id: string }) => f.id === doc.id), 'not listed');
    t.equal((await api('GET', `/files/${doc.id}/content`)).body, 'secret', 'untouched');
    t.equal((await api('GET', '/files/not-a-uuid')).statusCode, 404);
  });

  t.test('permissions: viewers read, editors write', async (t) => {
    const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
    const editor = await createApiKey(app, ws.user, ws.handle, { role: 'editor' });
    const v = { authorization: `Bearer ${viewer.key}` };
    const e = { authorization: `Bearer ${editor.key}` };
    t.equal((await api('GET', '/files', undefined, v)).statusCode, 200);
    const denied = await api('POST', '/files', { mode: 'document', name: 'v.txt', content: 'x' }, v);
    t.equal(denied.statusCode, 403);
    t.equal(denied.json().details.requiredPermission, 'files.write');
    const created = await api('POST', '/files', { mode: 'document', name: 'e.txt', content: 'x' }, e);
    t.equal(created.statusCode, 201);
    t.equal((await api('GET', `/files/${created.json().file.id}/content`, undefined, v)).statusCode, 200);
    t.equal((await api('DELETE', `/files/${created.json().file.id}`, undefined, v)).statusCode, 403);
    t.equal((await api('PUT', `/files/${created.json().file.id}/content`, { content: 'y' }, v)).statusCode, 403);
    t.equal((await api('GET', '/files')).statusCode, 200);
    t.equal((await app.inject({ method: 'GET', url: '/api/v1/files' })).statusCode, 401);
  });
}

/** Expired uploads are aborted and disappear (run with a short upload expiry). */
export function expirySuite(t: Test, backend: Backend, leftovers: (app: TestApp) => Promise<string[]>): void {
  t.test('abandoned uploads are aborted after the expiry and leave nothing', async (t) => {
    const app = await startFilesApp(backend, { files: { uploadExpirySeconds: 4 } });
    t.teardown(() => app.close());
    const ws = await setupWorkspace(app);
    const api = (method: string, url: string, payload?: unknown) => app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: ws.auth, payload: payload as string });
    const before = new Set(await backend.storedKeys(app));
    const openBefore = new Set(await leftovers(app));
    const mp = (await api('POST', '/files', { mode: 'multipart', name: 'abandoned.bin', sizeBytes: backend.partSize * 2, partSizeBytes: backend.partSize })).json();
    t.equal((await putTo(app, mp.upload.parts[0], randomBytes(backend.partSize))).status, 200);
    const direct = (await api('POST', '/files', { mode: 'direct', name: 'never.bin' })).json();
    t.equal((await api('GET', `/files/${mp.file.id}`)).statusCode, 200);
    for (const id of [mp.file.id, direct.file.id]) {
      await deadline('expiry', async () => ((await api('GET', `/files/${id}`)).statusCode === 404 ? true : undefined), 15_000);
    }
    t.pass('both gone (404)');
    t.same((await api('GET', '/files')).json(), [], 'nothing listed');
    t.same((await backend.storedKeys(app)).filter((k) => !before.has(k)), [], 'no stored objects');
    await deadline('abort', async () => ((await leftovers(app)).every((x) => openBefore.has(x)) ? true : undefined), 5000).catch(() => undefined);
    t.same((await leftovers(app)).filter((x) => !openBefore.has(x)), [], 'no open uploads or parts');
  });
}

/** Without the operator allow-list, loopback is refused: the file ends `failed` with the reason. */
export function loopbackSuite(t: Test, backend: Backend): void {
  t.test('externalUrl: 127.0.0.1 is refused unless allow-listed', async (t) => {
    const app = await startFilesApp(backend);
    t.teardown(() => app.close());
    const remote = http.createServer((_req, res) => res.end('secret'));
    await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
    t.teardown(() => remote.close());
    const ws = await setupWorkspace(app);
    const url = `http://127.0.0.1:${(remote.address() as AddressInfo).port}/internal.txt`;
    const res = await app.inject({ method: 'POST', url: '/api/v1/files', headers: ws.auth, payload: { mode: 'externalUrl', externalUrl: url } });
    t.equal(res.statusCode, 201, 'accepted; the fetch runs after the response');
    const id = res.json().file.id;
    const f = await deadline('refusal', async () => {
      const x = (await app.inject({ method: 'GET', url: `/api/v1/files/${id}`, headers: ws.auth })).json();
      return x.status === 'importing' ? undefined : x;
    });
    t.equal(f.status, 'failed');
    t.match(f.errorMessage, /not allowed/);
    t.equal((await app.inject({ method: 'GET', url: `/api/v1/files/${id}/content`, headers: ws.auth })).statusCode, 409, 'nothing fetched');
  });
}
