/**
 * The storage backend contract: every adapter of the `files.storage` extension point passes it.
 * Call `storageContract(t, backend)` from a test file that builds the backend.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Test } from 'tap';
import { StoragePartError, type StorageBackend } from '../../plugins/files/api.ts';

async function readAll(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks);
}

/** A stream of `size` pseudo-random bytes produced on the fly, and its sha256 when finished. */
export function generated(size: number, chunk = 1024 * 1024): { stream: Readable; digest: () => string } {
  const hash = createHash('sha256');
  const block = randomBytes(chunk);
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent >= size) return void this.push(null);
      const n = Math.min(chunk, size - sent);
      const b = n === chunk ? block : block.subarray(0, n);
      sent += n;
      hash.update(b);
      this.push(b);
    },
  });
  return { stream, digest: () => hash.digest('hex') };
}

export function storageContract(t: Test, backend: StorageBackend, opts: { partSize: number }): void {
  const prefix = `contract/${randomBytes(4).toString('hex')}/`;
  const key = (n: string) => `${prefix}${n}`;

  t.test('put, head, get, list, delete', async (t) => {
    const body = Buffer.from('hello, storage');
    const put = await backend.put(key('a.txt'), Readable.from([body]), { contentType: 'text/plain' });
    t.equal(put.sizeBytes, body.length);
    t.ok(put.etag, 'an etag');
    const head = await backend.head(key('a.txt'));
    t.equal(head?.sizeBytes, body.length);
    const got = await backend.get(key('a.txt'));
    t.ok(got);
    t.same(await readAll(got!.body), body);
    t.same(await backend.list(prefix), [key('a.txt')]);
    await backend.delete(key('a.txt'));
    t.equal(await backend.head(key('a.txt')), null);
    t.equal(await backend.get(key('a.txt')), null);
    await backend.delete(key('a.txt'));
    t.pass('deleting a missing object is not an error');
  });

  t.test('byte ranges', async (t) => {
    const body = Buffer.from('0123456789abcdef');
    await backend.put(key('r.bin'), Readable.from([body]));
    const r = await backend.get(key('r.bin'), { start: 3, end: 7 });
    t.equal(r?.sizeBytes, 5);
    t.equal((await readAll(r!.body)).toString(), '34567');
    const tail = await backend.get(key('r.bin'), { start: 15, end: 15 });
    t.equal((await readAll(tail!.body)).toString(), 'f');
    await backend.delete(key('r.bin'));
  });

  t.test('an empty object and a large streamed object (bigger than one part)', async (t) => {
    await backend.put(key('empty'), Readable.from([]));
    t.equal((await backend.head(key('empty')))?.sizeBytes, 0);
    const size = opts.partSize * 2 + 12345;
    const g = generated(size, 256 * 1024);
    const put = await backend.put(key('big'), g.stream);
    t.equal(put.sizeBytes, size);
    const got = await backend.get(key('big'));
    const h = createHash('sha256');
    for await (const c of got!.body) h.update(c as Buffer);
    t.equal(h.digest('hex'), g.digest(), 'same bytes back');
    await backend.delete(key('empty'));
    await backend.delete(key('big'));
  });

  t.test('a failed put leaves no object', async (t) => {
    const failing = new Readable({
      read() {
        this.push(Buffer.alloc(1024));
        this.destroy(new Error('client went away'));
      },
    });
    await t.rejects(backend.put(key('broken'), failing));
    t.equal(await backend.head(key('broken')), null);
    t.same(await backend.list(key('broken')), []);
  });

  t.test('replacing an object', async (t) => {
    await backend.put(key('x'), Readable.from([Buffer.from('one')]));
    await backend.put(key('x'), Readable.from([Buffer.from('two!')]));
    t.equal((await readAll((await backend.get(key('x')))!.body)).toString(), 'two!');
    await backend.delete(key('x'));
  });

  t.test('multipart: parts assemble in order', async (t) => {
    const k = key('mp.bin');
    const id = await backend.createMultipart(k, { contentType: 'application/octet-stream' });
    const p1 = Buffer.alloc(opts.partSize, 1);
    const p2 = Buffer.from('tail');
    // Out of upload order on purpose: part 2 first.
    const e2 = await backend.uploadPart(k, id, 2, Readable.from([p2]));
    const e1 = await backend.uploadPart(k, id, 1, Readable.from([p1]));
    t.ok(e1 && e2);
    t.equal(await backend.head(k), null, 'nothing visible before complete');
    const done = await backend.completeMultipart(k, id, [
      { partNumber: 1, etag: e1 },
      { partNumber: 2, etag: e2 },
    ]);
    t.equal(done.sizeBytes, p1.length + p2.length);
    if (done.sha256) t.equal(done.sha256, createHash('sha256').update(Buffer.concat([p1, p2])).digest('hex'), 'a reported sha256 is right');
    const all = await readAll((await backend.get(k))!.body);
    t.same(all, Buffer.concat([p1, p2]));
    await backend.delete(k);
  });

  t.test('multipart: wrong or missing ETags are refused and nothing is written', async (t) => {
    if (backend.verifiesParts && !(await backend.verifiesParts())) {
      t.comment('skipped: this server has no ListParts, so the adapter relies on the server to check parts');
      t.pass('skipped (no ListParts)');
      return;
    }
    const k = key('bad.bin');
    const id = await backend.createMultipart(k);
    const e1 = await backend.uploadPart(k, id, 1, Readable.from([Buffer.alloc(opts.partSize, 2)]));
    const e2 = await backend.uploadPart(k, id, 2, Readable.from([Buffer.from('end')]));
    await t.rejects(backend.completeMultipart(k, id, [{ partNumber: 1, etag: e1 }, { partNumber: 2, etag: 'nope' }]), StoragePartError);
    await t.rejects(backend.completeMultipart(k, id, [{ partNumber: 1, etag: e1 }, { partNumber: 3, etag: e2 }]), StoragePartError);
    await t.rejects(backend.completeMultipart(k, id, [{ partNumber: 2, etag: e2 }, { partNumber: 1, etag: e1 }]), StoragePartError);
    t.equal(await backend.head(k), null, 'no object after refused completes');
    const done = await backend.completeMultipart(k, id, [{ partNumber: 1, etag: e1 }, { partNumber: 2, etag: e2 }]);
    t.equal(done.sizeBytes, opts.partSize + 3, 'the upload stays usable after a refused complete');
    await backend.delete(k);
  });

  t.test('multipart: abort discards the upload', async (t) => {
    const k = key('aborted.bin');
    const id = await backend.createMultipart(k);
    await backend.uploadPart(k, id, 1, Readable.from([Buffer.from('x')]));
    await backend.abortMultipart(k, id);
    await backend.abortMultipart(k, id);
    t.pass('aborting twice is not an error');
    t.equal(await backend.head(k), null);
  });

  t.test('presigned PUT (backends that offer it)', async (t) => {
    if (!backend.presignPut) {
      t.pass('skipped: no presigning, clients upload through the files plugin');
      return;
    }
    const k = key('presigned.txt');
    const req = await backend.presignPut(k, { expiresInSeconds: 60 });
    const res = await fetch(req.url, { method: 'PUT', headers: req.headers, body: 'via presigned url' });
    t.equal(res.status, 200);
    t.equal((await readAll((await backend.get(k))!.body)).toString(), 'via presigned url');
    const mk = key('presigned-mp.bin');
    const id = await backend.createMultipart(mk);
    const part = await backend.presignPart!(mk, id, 1, { expiresInSeconds: 60 });
    const pr = await fetch(part.url, { method: 'PUT', headers: part.headers, body: 'part one' });
    t.equal(pr.status, 200);
    const etag = pr.headers.get('etag');
    t.ok(etag);
    await backend.completeMultipart(mk, id, [{ partNumber: 1, etag: etag! }]);
    t.equal((await readAll((await backend.get(mk))!.body)).toString(), 'part one');
    await backend.delete(k);
    await backend.delete(mk);
  });

  t.test('keys that escape are refused', async (t) => {
    for (const bad of ['../x', 'a/../../b', '/abs', '']) {
      await t.rejects(backend.put(bad, Readable.from([Buffer.from('x')])), Error, bad);
    }
  });
}
