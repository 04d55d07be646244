/**
 * Local-disk storage backend (the default): objects are files under `<dir>/objects/<key>`.
 *
 * - Writes stream into `<dir>/tmp/` and are renamed into place only once complete, so a crash
 *   or a failed upload never leaves a partial object under a key.
 * - Multipart uploads keep their parts in `<dir>/multipart/<uploadId>/`; each part's ETag is a
 *   random token recorded next to it (no hashing cost on the hot path). Completing checks every
 *   ETag before writing anything, then concatenates the parts into a temp file and renames it.
 * - Clients cannot reach the disk, so there is no `presignPut`: the files plugin hands out its own
 *   signed upload URLs and streams those bodies here.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Type from 'typebox';
import { defineAdapter } from '../../../core/registry/index.ts';
import { StoragePartError, storageBackendsPoint, type ByteRange, type StorageBackend, type StoredObject } from '../../../plugins/files/api.ts';

const KEY_SEGMENT = /^[A-Za-z0-9._=-]+$/;
const UPLOAD_ID = /^[a-f0-9]{32}$/;

function checkKey(key: string): string[] {
  const segments = key.split('/');
  if (!key || segments.some((s) => !KEY_SEGMENT.test(s) || s === '.' || s === '..')) throw new Error(`Invalid storage key '${key}'`);
  return segments;
}

const token = () => randomBytes(16).toString('hex');
const isMissing = (err: unknown) => (err as { code?: string }).code === 'ENOENT';

export class LocalStorage implements StorageBackend {
  readonly kind = 'local';
  readonly root: string;
  readonly #objects: string;
  readonly #tmp: string;
  readonly #multipart: string;

  constructor(root: string) {
    this.root = path.resolve(root);
    this.#objects = path.join(this.root, 'objects');
    this.#tmp = path.join(this.root, 'tmp');
    this.#multipart = path.join(this.root, 'multipart');
  }

  async init(): Promise<void> {
    await Promise.all([this.#objects, this.#tmp, this.#multipart].map((d) => mkdir(d, { recursive: true })));
    // Leftovers of writes interrupted by a crash: never visible under a key, removed at start.
    for (const name of await readdir(this.#tmp)) await rm(path.join(this.#tmp, name), { force: true, recursive: true });
  }

  #path(key: string): string {
    return path.join(this.#objects, ...checkKey(key));
  }

  #uploadDir(uploadId: string): string {
    if (!UPLOAD_ID.test(uploadId)) throw new StoragePartError(`Unknown upload '${uploadId}'`);
    return path.join(this.#multipart, uploadId);
  }

  /** Streams into a temp file; returns its path and size. Removes it on failure. */
  async #spool(body: Readable): Promise<{ tmp: string; size: number }> {
    const tmp = path.join(this.#tmp, token());
    try {
      await pipeline(body, createWriteStream(tmp, { flags: 'wx' }));
      return { tmp, size: (await stat(tmp)).size };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async #etag(file: string): Promise<string> {
    try {
      return (await readFile(`${file}.etag`, 'utf8')).trim();
    } catch (err) {
      if (isMissing(err)) return '';
      throw err;
    }
  }

  async put(key: string, body: Readable): Promise<StoredObject> {
    const dest = this.#path(key);
    const { tmp, size } = await this.#spool(body);
    const etag = token();
    await mkdir(path.dirname(dest), { recursive: true });
    await writeFile(`${tmp}.etag`, etag);
    await rename(`${tmp}.etag`, `${dest}.etag`);
    await rename(tmp, dest);
    return { sizeBytes: size, etag };
  }

  async get(key: string, range?: ByteRange): Promise<{ body: Readable; sizeBytes: number } | null> {
    const file = this.#path(key);
    try {
      const s = await stat(file);
      if (!s.isFile()) return null;
      const body = createReadStream(file, range ? { start: range.start, end: range.end, highWaterMark: 256 * 1024 } : { highWaterMark: 256 * 1024 });
      return { body, sizeBytes: range ? range.end - range.start + 1 : s.size };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async head(key: string): Promise<StoredObject | null> {
    const file = this.#path(key);
    try {
      const s = await stat(file);
      return s.isFile() ? { sizeBytes: s.size, etag: await this.#etag(file) } : null;
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.#path(key);
    await rm(file, { force: true });
    await rm(`${file}.etag`, { force: true });
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string, rel: string) => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (isMissing(err)) return;
        throw err;
      }
      for (const e of entries) {
        const k = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) await walk(path.join(dir, e.name), k);
        else if (!e.name.endsWith('.etag') && k.startsWith(prefix)) out.push(k);
      }
    };
    const base = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    if (base) checkKey(base);
    await walk(base ? path.join(this.#objects, ...base.split('/')) : this.#objects, base);
    return out.sort();
  }

  async createMultipart(key: string): Promise<string> {
    checkKey(key);
    const uploadId = token();
    const dir = path.join(this.#multipart, uploadId);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'key'), key);
    return uploadId;
  }

  async #checkUpload(key: string, uploadId: string): Promise<string> {
    const dir = this.#uploadDir(uploadId);
    let owner: string;
    try {
      owner = await readFile(path.join(dir, 'key'), 'utf8');
    } catch (err) {
      if (isMissing(err)) throw new StoragePartError(`Unknown upload '${uploadId}'`);
      throw err;
    }
    if (owner !== key) throw new StoragePartError(`Upload '${uploadId}' is not an upload of '${key}'`);
    return dir;
  }

  async uploadPart(key: string, uploadId: string, partNumber: number, body: Readable): Promise<string> {
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > 10_000) throw new StoragePartError(`Invalid part number ${partNumber}`);
    const dir = await this.#checkUpload(key, uploadId);
    const { tmp } = await this.#spool(body);
    const etag = token();
    // The ETag file is written first: a part file without one is never accepted.
    await writeFile(path.join(dir, `${partNumber}.part.etag`), etag);
    await rename(tmp, path.join(dir, `${partNumber}.part`));
    return etag;
  }

  async completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<StoredObject> {
    const dir = await this.#checkUpload(key, uploadId);
    if (parts.length === 0) throw new StoragePartError('No parts given');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i > 0 && p.partNumber <= parts[i - 1].partNumber) throw new StoragePartError('Parts must be in ascending order of partNumber, each once');
      const actual = await this.#etag(path.join(dir, `${p.partNumber}.part`));
      const given = p.etag.replace(/^"|"$/g, '');
      if (!actual) throw new StoragePartError(`Part ${p.partNumber} was not uploaded`);
      if (actual !== given) throw new StoragePartError(`Part ${p.partNumber}: the ETag does not match the uploaded part`);
      try {
        await stat(path.join(dir, `${p.partNumber}.part`));
      } catch (err) {
        if (isMissing(err)) throw new StoragePartError(`Part ${p.partNumber} was not uploaded`);
        throw err;
      }
    }
    const tmp = path.join(this.#tmp, token());
    try {
      const out = createWriteStream(tmp, { flags: 'wx' });
      const hash = createHash('sha256');
      for (const p of parts) {
        await pipeline(
          createReadStream(path.join(dir, `${p.partNumber}.part`), { highWaterMark: 1024 * 1024 }),
          async function* (src) {
            for await (const chunk of src) {
              hash.update(chunk as Buffer);
              yield chunk;
            }
          },
          out,
          { end: false },
        );
      }
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      const size = (await stat(tmp)).size;
      const dest = this.#path(key);
      const etag = `${token()}-${parts.length}`;
      await mkdir(path.dirname(dest), { recursive: true });
      await writeFile(`${dest}.etag`, etag);
      await rename(tmp, dest);
      await rm(dir, { recursive: true, force: true });
      return { sizeBytes: size, etag, sha256: hash.digest('hex') };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async abortMultipart(_key: string, uploadId: string): Promise<void> {
    if (!UPLOAD_ID.test(uploadId)) return;
    await rm(path.join(this.#multipart, uploadId), { recursive: true, force: true });
  }

  /** Open multipart uploads (for leak checks). */
  async openUploads(): Promise<string[]> {
    return (await readdir(this.#multipart)).sort();
  }

  localPath(key: string): string {
    return this.#path(key);
  }
}

export default defineAdapter({
  id: 'storage-local',
  description: 'File storage on the local disk (default: <data dir>/storage)',
  extends: storageBackendsPoint,
  config: Type.Object({
    dir: Type.Optional(Type.String({ minLength: 1, description: 'Directory for stored objects; default <TRELLIS_DATA_DIR>/storage' })),
  }),
  async setup(ctx) {
    const storage = new LocalStorage(ctx.config.dir ?? path.join(ctx.core.dataDir, 'storage'));
    await storage.init();
    ctx.extend(storageBackendsPoint, storage);
  },
});
