/**
 * S3 (or S3-compatible) storage backend on `@aws-sdk/client-s3`.
 *
 * - Objects live at `<prefix><key>` in one bucket.
 * - `put` of a stream of unknown length uses PutObject when it fits in one part and a multipart
 *   upload otherwise, buffering at most one part (`partSizeBytes`) at a time.
 * - Clients upload directly: `presignPut` / `presignPart` give SigV4 query-signed URLs (signed
 *   here with node:crypto, the algorithm `@aws-sdk/s3-request-presigner` implements, so no extra
 *   dependency), unsigned payload, only the `host` header signed.
 * - Checksums: `requestChecksumCalculation: 'WHEN_REQUIRED'` (with the SDK default, streamed
 *   bodies are sent aws-chunked, which some S3-compatible servers store corrupted).
 */
import { createHash, createHmac } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import Type, { type Static } from 'typebox';
import { defineAdapter } from '../../../core/registry/index.ts';
import { StoragePartError, storageBackendsPoint, type ByteRange, type PresignedRequest, type StorageBackend, type StoredObject } from '../../../plugins/files/api.ts';

export const S3Config = Type.Object({
  bucket: Type.Optional(Type.String({ minLength: 1, description: 'Without a bucket the adapter stays idle (contributes no backend)' })),
  region: Type.String({ default: 'us-east-1' }),
  endpoint: Type.Optional(Type.String({ minLength: 1, description: 'For S3-compatible servers, e.g. http://127.0.0.1:9000' })),
  forcePathStyle: Type.Boolean({ default: false }),
  accessKeyId: Type.Optional(Type.String({ minLength: 1 })),
  secretAccessKey: Type.Optional(Type.String({ minLength: 1 })),
  sessionToken: Type.Optional(Type.String({ minLength: 1 })),
  prefix: Type.String({ default: '', description: 'Key prefix inside the bucket, e.g. `trellis/`' }),
  createBucket: Type.Boolean({ default: false, description: 'Create the bucket at start when it does not exist' }),
  partSizeBytes: Type.Integer({ minimum: 5 * 1024 * 1024, default: 8 * 1024 * 1024, description: 'Part size of server-side streamed uploads' }),
});
export type S3Config = Static<typeof S3Config>;

const status = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
const errName = (err: unknown) => (err as { name?: string; Code?: string }).name ?? (err as { Code?: string }).Code ?? '';
const isNotFound = (err: unknown) => status(err) === 404 || ['NotFound', 'NoSuchKey', 'NoSuchUpload'].includes(errName(err));

/** RFC 3986 encoding as SigV4 wants it. */
const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

async function readAtMost(it: AsyncIterator<Buffer>, carry: Buffer[], limit: number): Promise<{ chunks: Buffer[]; size: number; done: boolean; rest: Buffer[] }> {
  const chunks = [...carry];
  let size = chunks.reduce((n, c) => n + c.length, 0);
  let done = false;
  while (size < limit) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    const b = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
    chunks.push(b);
    size += b.length;
  }
  const all = Buffer.concat(chunks);
  if (all.length > limit) return { chunks: [all.subarray(0, limit)], size: limit, done: false, rest: [all.subarray(limit)] };
  return { chunks: [all], size: all.length, done, rest: [] };
}

export class S3Storage implements StorageBackend {
  readonly kind = 's3';
  readonly client: S3Client;
  readonly config: S3Config & { bucket: string };

  constructor(config: S3Config & { bucket: string }) {
    this.config = config;
    this.client = new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle,
      credentials: config.accessKeyId && config.secretAccessKey ? { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey, sessionToken: config.sessionToken } : undefined,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  #k(key: string): string {
    if (!key || key.startsWith('/') || key.split('/').some((s) => s === '..' || s === '.' || s === '')) throw new Error(`Invalid storage key '${key}'`);
    return `${this.config.prefix}${key}`;
  }

  async init(): Promise<void> {
    if (!this.config.createBucket) return;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.config.bucket }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.client.send(new CreateBucketCommand({ Bucket: this.config.bucket }));
    }
  }

  async put(key: string, body: Readable, opts: { contentType?: string } = {}): Promise<StoredObject> {
    const Key = this.#k(key);
    const Bucket = this.config.bucket;
    const partSize = this.config.partSizeBytes;
    const it = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const first = await readAtMost(it, [], partSize);
    if (first.done) {
      const r = await this.client.send(new PutObjectCommand({ Bucket, Key, Body: first.chunks[0], ContentLength: first.size, ContentType: opts.contentType }));
      return { sizeBytes: first.size, etag: r.ETag ?? '' };
    }
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType: opts.contentType }));
    const parts: { PartNumber: number; ETag: string }[] = [];
    let total = 0;
    try {
      let chunk = first;
      for (let n = 1; ; n++) {
        const r = await this.client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: n, Body: chunk.chunks[0], ContentLength: chunk.size }));
        parts.push({ PartNumber: n, ETag: r.ETag ?? '' });
        total += chunk.size;
        if (chunk.done) break;
        chunk = await readAtMost(it, chunk.rest, partSize);
        if (chunk.size === 0 && chunk.done) break;
      }
      const done = await this.client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
      return { sizeBytes: total, etag: done.ETag ?? '' };
    } catch (err) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => undefined);
      body.destroy();
      throw err;
    }
  }

  async get(key: string, range?: ByteRange): Promise<{ body: Readable; sizeBytes: number } | null> {
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.#k(key), Range: range ? `bytes=${range.start}-${range.end}` : undefined }));
      return { body: r.Body as Readable, sizeBytes: Number(r.ContentLength ?? 0) };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async head(key: string): Promise<StoredObject | null> {
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.config.bucket, Key: this.#k(key) }));
      return { sizeBytes: Number(r.ContentLength ?? 0), etag: r.ETag ?? '' };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.#k(key) }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    let ContinuationToken: string | undefined;
    do {
      const r = await this.client.send(new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: `${this.config.prefix}${prefix}`, ContinuationToken }));
      for (const o of r.Contents ?? []) if (o.Key) out.push(o.Key.slice(this.config.prefix.length));
      ContinuationToken = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return out.sort();
  }

  async createMultipart(key: string, opts: { contentType?: string } = {}): Promise<string> {
    const r = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.config.bucket, Key: this.#k(key), ContentType: opts.contentType }));
    return r.UploadId!;
  }

  /** Server-side part upload: buffers the one part (the files plugin has clients upload parts straight to S3 instead). */
  async uploadPart(key: string, uploadId: string, partNumber: number, body: Readable): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
    const Body = Buffer.concat(chunks);
    try {
      const r = await this.client.send(new UploadPartCommand({ Bucket: this.config.bucket, Key: this.#k(key), UploadId: uploadId, PartNumber: partNumber, Body, ContentLength: Body.length }));
      return r.ETag ?? '';
    } catch (err) {
      if (isNotFound(err)) throw new StoragePartError(`Unknown upload '${uploadId}'`);
      throw err;
    }
  }

  async completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<StoredObject> {
    if (parts.length === 0) throw new StoragePartError('No parts given');
    for (let i = 1; i < parts.length; i++) {
      if (parts[i].partNumber <= parts[i - 1].partNumber) throw new StoragePartError('Parts must be in ascending order of partNumber, each once');
    }
    await this.#verifyParts(key, uploadId, parts);
    try {
      const r = await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.config.bucket,
          Key: this.#k(key),
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag.startsWith('"') ? p.etag : `"${p.etag}"` })) },
        }),
      );
      const head = await this.head(key);
      return { sizeBytes: head?.sizeBytes ?? 0, etag: r.ETag ?? head?.etag ?? '' };
    } catch (err) {
      const name = errName(err);
      if (['InvalidPart', 'InvalidPartOrder', 'EntityTooSmall', 'NoSuchUpload'].includes(name) || status(err) === 400) {
        throw new StoragePartError(`The parts were refused (${name || 'invalid part'}): ${(err as Error).message}`);
      }
      throw err;
    }
  }

  /** Whether the server answers ListParts (s3rver does not: 405); `null` until first asked. */
  #listParts: boolean | null = null;

  /**
   * Checks every given part exists with the given ETag before completing, so a wrong or missing
   * ETag is refused with nothing written, whatever the server's own checks. Servers without
   * ListParts (some S3 emulators) fall back to the server's CompleteMultipartUpload validation.
   */
  async #verifyParts(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    if (this.#listParts === false) return;
    const actual = new Map<number, string>();
    let PartNumberMarker: string | undefined;
    try {
      do {
        const r = await this.client.send(new ListPartsCommand({ Bucket: this.config.bucket, Key: this.#k(key), UploadId: uploadId, PartNumberMarker }));
        for (const p of r.Parts ?? []) if (p.PartNumber) actual.set(p.PartNumber, (p.ETag ?? '').replace(/"/g, ''));
        PartNumberMarker = r.IsTruncated ? String(r.NextPartNumberMarker) : undefined;
      } while (PartNumberMarker);
      this.#listParts = true;
    } catch (err) {
      if (status(err) === 405 || status(err) === 501 || ['MethodNotAllowed', 'NotImplemented'].includes(errName(err))) {
        this.#listParts = false;
        return;
      }
      if (isNotFound(err)) throw new StoragePartError(`Unknown upload '${uploadId}'`);
      throw err;
    }
    for (const p of parts) {
      const etag = actual.get(p.partNumber);
      if (etag === undefined) throw new StoragePartError(`Part ${p.partNumber} was not uploaded`);
      if (etag !== p.etag.replace(/"/g, '')) throw new StoragePartError(`Part ${p.partNumber}: the ETag does not match the uploaded part`);
    }
  }

  /** Whether part ETags are checked before completing (false on servers without ListParts). */
  async verifiesParts(): Promise<boolean> {
    if (this.#listParts === null) {
      try {
        await this.client.send(new ListPartsCommand({ Bucket: this.config.bucket, Key: this.#k('trellis-probe'), UploadId: 'probe' }));
        this.#listParts = true;
      } catch (err) {
        this.#listParts = !(status(err) === 405 || status(err) === 501 || ['MethodNotAllowed', 'NotImplemented'].includes(errName(err)));
      }
    }
    return this.#listParts;
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.config.bucket, Key: this.#k(key), UploadId: uploadId }));
    } catch (err) {
      // Some emulators (s3rver) cannot abort (405): the bucket's lifecycle rule for incomplete
      // multipart uploads is then what reclaims the parts.
      if (!isNotFound(err) && status(err) !== 405 && status(err) !== 501) throw err;
    }
  }

  async #presign(key: string, query: Record<string, string>, expiresInSeconds: number): Promise<PresignedRequest> {
    const creds = await this.client.config.credentials();
    const region = this.config.region;
    const fullKey = this.#k(key).split('/').map(enc).join('/');
    let base: URL;
    let path: string;
    if (this.config.endpoint) {
      base = new URL(this.config.endpoint);
      if (this.config.forcePathStyle) path = `${base.pathname.replace(/\/$/, '')}/${enc(this.config.bucket)}/${fullKey}`;
      else {
        base = new URL(this.config.endpoint);
        base.hostname = `${this.config.bucket}.${base.hostname}`;
        path = `${base.pathname.replace(/\/$/, '')}/${fullKey}`;
      }
    } else {
      base = new URL(this.config.forcePathStyle ? `https://s3.${region}.amazonaws.com` : `https://${this.config.bucket}.s3.${region}.amazonaws.com`);
      path = this.config.forcePathStyle ? `/${enc(this.config.bucket)}/${fullKey}` : `/${fullKey}`;
    }
    const now = new Date();
    const datetime = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    const date = datetime.slice(0, 8);
    const scope = `${date}/${region}/s3/aws4_request`;
    const params: Record<string, string> = {
      ...query,
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD',
      'X-Amz-Credential': `${creds.accessKeyId}/${scope}`,
      'X-Amz-Date': datetime,
      'X-Amz-Expires': String(Math.max(1, Math.min(604800, Math.floor(expiresInSeconds)))),
      'X-Amz-SignedHeaders': 'host',
    };
    if (creds.sessionToken) params['X-Amz-Security-Token'] = creds.sessionToken;
    const canonicalQuery = Object.keys(params)
      .sort()
      .map((k) => `${enc(k)}=${enc(params[k])}`)
      .join('&');
    const host = base.host;
    const canonicalRequest = ['PUT', path, canonicalQuery, `host:${host}\n`, 'host', 'UNSIGNED-PAYLOAD'].join('\n');
    const stringToSign = ['AWS4-HMAC-SHA256', datetime, scope, createHash('sha256').update(canonicalRequest).digest('hex')].join('\n');
    const kSigning = hmac(hmac(hmac(hmac(`AWS4${creds.secretAccessKey}`, date), region), 's3'), 'aws4_request');
    const signature = createHmac('sha256', kSigning).update(stringToSign).digest('hex');
    return { method: 'PUT', url: `${base.protocol}//${host}${path}?${canonicalQuery}&X-Amz-Signature=${signature}`, headers: {} };
  }

  presignPut(key: string, opts: { expiresInSeconds: number }): Promise<PresignedRequest> {
    return this.#presign(key, {}, opts.expiresInSeconds);
  }

  presignPart(key: string, uploadId: string, partNumber: number, opts: { expiresInSeconds: number }): Promise<PresignedRequest> {
    return this.#presign(key, { partNumber: String(partNumber), uploadId }, opts.expiresInSeconds);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

export default defineAdapter({
  id: 'storage-s3',
  description: 'File storage in an S3 (or S3-compatible) bucket',
  extends: storageBackendsPoint,
  config: S3Config,
  async setup(ctx) {
    if (!ctx.config.bucket) return;
    const storage = new S3Storage(ctx.config as S3Config & { bucket: string });
    await storage.init();
    ctx.extend(storageBackendsPoint, storage);
    ctx.onStop(() => storage.close());
  },
});

