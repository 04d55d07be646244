/**
 * Files: rows in `files_files`, bytes in the configured storage backend under
 * `workspaces/<workspaceId>/files/<fileId>`, documents' text in the row.
 *
 * Status moves (the spec's "File status", and the ones it leaves open):
 * - document: created `uploaded`.
 * - direct: `pending_upload` -> (local: `uploading` while the server receives the PUT) ->
 *   `uploaded` | `failed` (size or checksum mismatch). On a presigning backend (S3) nothing calls
 *   back after the PUT, so the next read of the file (GET one, GET content, list) and the periodic
 *   sweep look for the object (HeadObject) and complete the file: hash, size check, `uploaded`.
 * - multipart: `uploading` from creation -> POST complete -> `uploaded` | `failed`.
 * - externalUrl: `importing` -> `uploaded` | `failed`.
 * - Uploads not finished before their expiry are aborted by the sweep and the file is deleted
 *   (not listed, 404), so an abandoned or crashed upload leaves nothing visible and no parts.
 */
import { isUuid } from '../../core/tenancy/index.ts';
import { createHash } from 'node:crypto';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../core/db/index.ts';
import { safeEqual, uuidv7 } from '../../core/crypto/index.ts';
import { Conflict, DecodeError, InvalidRequest, NotFound, PayloadTooLarge, defineError } from '../../core/errors/index.ts';
import type { SecretBox } from '../../core/crypto/index.ts';
import type { SafeFetch } from '../../core/net/index.ts';
import { createWriteStream } from 'node:fs';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { StoragePartError, workspacePrefix, type ByteRange, type LocalCopy, type PresignedRequest, type StorageBackend } from './api.ts';

export const UploadForbidden = defineError('forbidden', 403, 'The upload URL is invalid or has expired.');
export const RangeNotSatisfiable = defineError('range_not_satisfiable', 416, 'The requested range is not satisfiable.');

export interface FilesConfig {
  backend: string;
  uploadExpirySeconds: number;
  defaultPartSizeBytes: number;
  minPartSizeBytes: number;
  maxPartSizeBytes: number;
  maxFileSizeBytes: number;
  maxDocumentBytes: number;
  initialPartUrls: number;
  externalUrlMaxBytes: number;
  externalUrlTimeoutMs: number;
  sweepIntervalMs: number;
}

export type FileStatus = 'pending_upload' | 'uploading' | 'importing' | 'uploaded' | 'failed';
export type FileSource = 'document' | 'direct' | 'multipart' | 'externalUrl';

export interface FileRow {
  id: string;
  workspace_id: string;
  name: string;
  original_name: string;
  directory: string | null;
  path: string;
  content_type: string | null;
  extension: string | null;
  size_bytes: string | number;
  checksum_sha256: string | null;
  expected_sha256: string | null;
  declared_size_bytes: string | number | null;
  metadata: Record<string, string> | null;
  source: FileSource;
  status: FileStatus;
  external_url: string | null;
  etag: string | null;
  error_message: string | null;
  storage_key: string | null;
  upload_id: string | null;
  part_size_bytes: string | number | null;
  part_count: number | null;
  upload_expires_at: Date | null;
  busy_until: Date | null;
  content: string | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  deleted_at: Date | null;
}

export interface FileView {
  id: string;
  name: string;
  originalName: string;
  directory: string | null;
  path: string;
  contentType: string | null;
  extension: string | null;
  sizeBytes: number;
  checksumSha256: string | null;
  metadata: Record<string, string> | null;
  source: FileSource;
  status: FileStatus;
  externalUrl: string | null;
  etag: string | null;
  errorMessage: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export function fileView(r: FileRow): FileView {
  return {
    id: r.id,
    name: r.name,
    originalName: r.original_name,
    directory: r.directory,
    path: r.path,
    contentType: r.content_type,
    extension: r.extension,
    sizeBytes: Number(r.size_bytes),
    checksumSha256: r.checksum_sha256,
    metadata: r.metadata,
    source: r.source,
    status: r.status,
    externalUrl: r.external_url,
    etag: r.etag,
    errorMessage: r.error_message,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    completedAt: r.completed_at ? r.completed_at.toISOString() : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Names, directories, content types

const CONTROL = /[\u0000-\u001f\u007f]/;

function checkSegment(s: string, field: string, what: string): void {
  if (s === '.' || s === '..' || s.includes('/') || s.includes('\\') || CONTROL.test(s) || s.trim() !== s || s.length === 0 || s.length > 255) {
    throw new DecodeError([{ _tag: 'Refinement', path: [field], message: `${what} '${s}' is not allowed (no '/', '\\', control characters, surrounding spaces, '.' or '..')` }]);
  }
}

export function normalizeName(name: string, field = 'name'): string {
  const n = name.trim();
  checkSegment(n, field, 'The name');
  return n;
}

export function normalizeDirectory(dir: string | undefined | null): string | null {
  if (dir === undefined || dir === null) return null;
  const trimmed = dir.trim().replace(/^\/+|\/+$/g, '');
  if (!trimmed) return null;
  const segments = trimmed.split('/');
  if (segments.length > 32) throw new DecodeError([{ _tag: 'Refinement', path: ['directory'], message: 'at most 32 segments' }]);
  for (const s of segments) checkSegment(s, 'directory', 'The directory segment');
  return segments.join('/');
}

export function extensionOf(name: string): string | null {
  const i = name.lastIndexOf('.');
  if (i <= 0 || i === name.length - 1) return null;
  return name.slice(i + 1).toLowerCase();
}

const TYPES: Record<string, string> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  txt: 'text/plain',
  csv: 'text/csv',
  json: 'application/json',
  parquet: 'application/vnd.apache.parquet',
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  html: 'text/html',
  zip: 'application/zip',
  gz: 'application/gzip',
  bin: 'application/octet-stream',
};

export function guessContentType(name: string): string | null {
  const ext = extensionOf(name);
  return ext ? (TYPES[ext] ?? null) : null;
}

/** `name (n).ext` for the n-th collision. */
function suffixed(name: string, n: number): string {
  const ext = extensionOf(name);
  if (!ext) return `${name} (${n})`;
  return `${name.slice(0, name.length - ext.length - 1)} (${n}).${name.slice(name.length - ext.length)}`;
}

/** Counts and hashes bytes flowing through; errors past `limit`. */
export class Meter extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  readonly limit: number;
  constructor(limit = Number.MAX_SAFE_INTEGER) {
    super();
    this.limit = limit;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return cb(new PayloadTooLarge(`The content is larger than the limit of ${this.limit} bytes.`));
    this.hash.update(chunk);
    cb(null, chunk);
  }
}

/** Parses a single `bytes=` range against `size`; `null` means serve the whole body. */
export function parseRange(header: string | undefined, size: number): ByteRange | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null; // several ranges or malformed: whole body (RFC 9110 allows ignoring)
  let start: number;
  let end: number;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) throw new RangeNotSatisfiable(undefined, undefined, { 'content-range': `bytes */${size}` });
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return null;
  }
  if (start >= size) throw new RangeNotSatisfiable(undefined, undefined, { 'content-range': `bytes */${size}` });
  return { start, end };
}


export type CreateBody =
  | { mode: 'document'; name: string; content: string; directory?: string; contentType?: string; checksumSha256?: string; metadata?: Record<string, string> }
  | { mode: 'direct'; name: string; sizeBytes?: number; directory?: string; contentType?: string; checksumSha256?: string; metadata?: Record<string, string> }
  | { mode: 'multipart'; name: string; sizeBytes: number; partSizeBytes?: number; directory?: string; contentType?: string; checksumSha256?: string; metadata?: Record<string, string> }
  | { mode: 'externalUrl'; externalUrl: string; name?: string; directory?: string; contentType?: string; checksumSha256?: string; metadata?: Record<string, string> };

export interface PartUrl extends PresignedRequest {
  partNumber: number;
  expiresAt: string;
}

export type UploadDescriptor =
  | { type: 'direct'; method: 'PUT'; url: string; headers: Record<string, string>; expiresAt: string }
  | { type: 'multipart'; uploadId: string; partSizeBytes: number; partCount: number; parts: PartUrl[]; expiresAt: string };

export class FilesService {
  readonly #db: Database;
  readonly #storage: StorageBackend;
  readonly #config: FilesConfig;
  readonly #secrets: SecretBox;
  readonly #fetch: SafeFetch;
  readonly #log: FastifyBaseLogger;
  readonly #baseUrl: string;
  /** Background work (imports, completions) so shutdown can wait for it. */
  readonly #inflight = new Set<Promise<unknown>>();

  readonly #tmpDir: string;

  constructor(opts: { db: Database; storage: StorageBackend; config: FilesConfig; secrets: SecretBox; fetch: SafeFetch; log: FastifyBaseLogger; baseUrl: string; tmpDir: string }) {
    this.#tmpDir = opts.tmpDir;
    this.#db = opts.db;
    this.#storage = opts.storage;
    this.#config = opts.config;
    this.#secrets = opts.secrets;
    this.#fetch = opts.fetch;
    this.#log = opts.log;
    this.#baseUrl = opts.baseUrl;
  }

  get storage(): StorageBackend {
    return this.#storage;
  }

  static key(workspaceId: string, fileId: string): string {
    return `${workspacePrefix(workspaceId)}files/${fileId}`;
  }

  #track<T>(p: Promise<T>): void {
    const q = p.catch((err: unknown) => this.#log.error({ err }, 'files background task failed')).finally(() => this.#inflight.delete(q));
    this.#inflight.add(q);
  }

  async idle(): Promise<void> {
    while (this.#inflight.size) await Promise.allSettled([...this.#inflight]);
  }

  // --- reads ---------------------------------------------------------------------------------

  async #row(workspaceId: string, id: string): Promise<FileRow> {
    if (!isUuid(id)) throw new NotFound('File was not found.');
    const rows = await this.#db.query<FileRow>('SELECT * FROM files_files WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL', [workspaceId, id]);
    if (!rows[0]) throw new NotFound('File was not found.');
    return rows[0];
  }

  /** One file; a pending direct upload on a presigning backend is completed first if its object arrived. */
  async get(workspaceId: string, id: string): Promise<FileRow> {
    const row = await this.#row(workspaceId, id);
    return this.#settle(row);
  }

  async #settle(row: FileRow): Promise<FileRow> {
    if (row.source === 'direct' && row.status === 'pending_upload' && this.#storage.presignPut) {
      return (await this.completeDirectFromStorage(row)) ?? row;
    }
    return row;
  }

  async list(workspaceId: string, q: { directory?: string; status?: FileStatus; source?: FileSource; limit: number; offset: number }): Promise<FileRow[]> {
    const params: unknown[] = [workspaceId];
    const where = ['workspace_id = $1', 'deleted_at IS NULL'];
    if (q.directory !== undefined) {
      const d = normalizeDirectory(q.directory);
      if (d === null) where.push('directory IS NULL');
      else {
        params.push(d);
        where.push(`directory = $${params.length}`);
      }
    }
    if (q.status) {
      params.push(q.status);
      where.push(`status = $${params.length}`);
    }
    if (q.source) {
      params.push(q.source);
      where.push(`source = $${params.length}`);
    }
    params.push(q.limit, q.offset);
    const rows = await this.#db.query<FileRow>(
      `SELECT * FROM files_files WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    // Complete S3 direct uploads whose object has arrived (a few per request; the sweep does the rest).
    let budget = 10;
    const out: FileRow[] = [];
    for (const r of rows) {
      if (budget > 0 && r.source === 'direct' && r.status === 'pending_upload' && this.#storage.presignPut) {
        budget--;
        const settled = await this.#settle(r);
        if (q.status && settled.status !== q.status) continue;
        out.push(settled);
      } else out.push(r);
    }
    return out;
  }

  async existing(workspaceId: string, ids: string[]): Promise<Set<string>> {
    const valid = ids.filter((i) => isUuid(i));
    if (valid.length === 0) return new Set();
    const rows = await this.#db.query<{ id: string }>(
      'SELECT id FROM files_files WHERE workspace_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL',
      [workspaceId, valid],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Uploaded files of a workspace (for the explorer). */
  async uploaded(workspaceId: string): Promise<FileRow[]> {
    return this.#db.query<FileRow>(
      `SELECT * FROM files_files WHERE workspace_id = $1 AND deleted_at IS NULL AND status = 'uploaded' ORDER BY created_at`,
      [workspaceId],
    );
  }

  /** The content of an uploaded file, whole or one range. */
  async content(workspaceId: string, id: string, rangeHeader: string | undefined): Promise<{ row: FileRow; body: Readable; size: number; total: number; range: ByteRange | null }> {
    const row = await this.get(workspaceId, id);
    if (row.status !== 'uploaded') throw new Conflict(`The file is not uploaded yet (status '${row.status}').`, { status: row.status });
    const total = Number(row.size_bytes);
    const range = total > 0 ? parseRange(rangeHeader, total) : null;
    if (row.source === 'document') {
      const buf = Buffer.from(row.content ?? '', 'utf8');
      const slice = range ? buf.subarray(range.start, range.end + 1) : buf;
      return { row, body: Readable.from([slice]), size: slice.length, total: buf.length, range };
    }
    const got = await this.#storage.get(row.storage_key!, range ?? undefined);
    if (!got) throw new Conflict('The stored content of this file is missing.');
    return { row, body: got.body, size: range ? range.end - range.start + 1 : total, total, range };
  }

  // --- local copies (file-source queries) ----------------------------------------------------

  async openLocal(workspaceId: string, ref: { fileId: string } | { path: string } | { key: string }): Promise<LocalCopy> {
    const noop = async () => {};
    let key: string;
    let name: string;
    if ('key' in ref) {
      const prefix = workspacePrefix(workspaceId);
      const raw = ref.key.replace(/^\/+/, '');
      key = raw.startsWith('workspaces/') ? raw : `${prefix}${raw}`;
      const segments = key.split('/');
      if (!key.startsWith(prefix) || segments.some((x) => x === '' || x === '.' || x === '..' || CONTROL.test(x))) {
        throw new InvalidRequest(`The key '${ref.key}' is outside this workspace's storage (keys are relative to, or start with, '${prefix}').`);
      }
      name = segments[segments.length - 1];
    } else {
      let row: FileRow | undefined;
      if ('fileId' in ref) row = await this.#row(workspaceId, ref.fileId);
      else {
        const dir = ref.path.includes('/') ? normalizeDirectory(ref.path.slice(0, ref.path.lastIndexOf('/'))) : null;
        const p = dir ? `${dir}/${ref.path.slice(ref.path.lastIndexOf('/') + 1)}` : ref.path.replace(/^\/+/, '');
        row = (await this.#db.query<FileRow>('SELECT * FROM files_files WHERE workspace_id = $1 AND path = $2 AND deleted_at IS NULL', [workspaceId, p]))[0];
        if (!row) throw new NotFound(`No file at path '${ref.path}'.`);
      }
      row = await this.#settle(row);
      if (row.status !== 'uploaded') throw new InvalidRequest(`The file '${row.path}' is not uploaded (status '${row.status}').`);
      name = row.name;
      if (row.source === 'document') {
        await mkdir(this.#tmpDir, { recursive: true });
        const tmp = path.join(this.#tmpDir, `doc-${randomBytes(8).toString('hex')}`);
        await writeFile(tmp, row.content ?? '');
        return { path: tmp, name, sizeBytes: Number(row.size_bytes), release: () => rm(tmp, { force: true }) };
      }
      key = row.storage_key!;
    }
    const direct = this.#storage.localPath?.(key);
    if (direct) {
      const s = await stat(direct).catch(() => null);
      if (!s?.isFile()) throw new NotFound(`No stored object '${key}'.`);
      return { path: direct, name, sizeBytes: s.size, release: noop };
    }
    const got = await this.#storage.get(key);
    if (!got) throw new NotFound(`No stored object '${key}'.`);
    await mkdir(this.#tmpDir, { recursive: true });
    const tmp = path.join(this.#tmpDir, `obj-${randomBytes(8).toString('hex')}`);
    try {
      await pipeline(got.body, createWriteStream(tmp));
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    return { path: tmp, name, sizeBytes: got.sizeBytes, release: () => rm(tmp, { force: true }) };
  }

  // --- create --------------------------------------------------------------------------------

  /** Inserts a row, renaming `name (n).ext` while the path is taken. */
  async #insert(workspaceId: string, name: string, directory: string | null, fields: Record<string, unknown>): Promise<FileRow> {
    const id = (fields.id as string | undefined) ?? uuidv7();
    for (let n = 0; n < 1000; n++) {
      const candidate = n === 0 ? name : suffixed(name, n);
      const path = directory ? `${directory}/${candidate}` : candidate;
      const cols: Record<string, unknown> = {
        ...fields,
        id,
        workspace_id: workspaceId,
        name: candidate,
        original_name: name,
        directory,
        path,
        extension: extensionOf(candidate),
      };
      const keys = Object.keys(cols);
      try {
        const rows = await this.#db.query<FileRow>(
          `INSERT INTO files_files (${keys.join(', ')}) VALUES (${keys.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING *`,
          keys.map((k) => (k === 'metadata' && cols[k] != null ? JSON.stringify(cols[k]) : cols[k])),
        );
        return rows[0];
      } catch (err) {
        if ((err as { code?: string; constraint?: string }).code === '23505' && (err as { constraint?: string }).constraint === 'files_files_path_uq') continue;
        throw err;
      }
    }
    throw new Conflict(`Too many files named '${name}' in this directory.`);
  }

  #signUrl(fileId: string, partNumber: number | undefined, expires: number): string {
    const sig = this.#secrets.digest(`files.upload:${fileId}:${partNumber ?? 0}:${expires}`);
    const q = new URLSearchParams({ expires: String(expires), sig });
    if (partNumber !== undefined) q.set('partNumber', String(partNumber));
    return `${this.#baseUrl}/api/v1/files/${fileId}/upload?${q.toString()}`;
  }

  verifyUploadSignature(fileId: string, partNumber: number | undefined, expires: number, sig: string): void {
    if (!isUuid(fileId)) throw new UploadForbidden();
    const expected = this.#secrets.digest(`files.upload:${fileId}:${partNumber ?? 0}:${expires}`);
    if (!safeEqual(expected, sig)) throw new UploadForbidden();
    if (expires * 1000 < Date.now()) throw new UploadForbidden('The upload URL has expired.');
  }

  async #partUrls(row: FileRow, partNumbers: number[]): Promise<PartUrl[]> {
    const expiresAtMs = row.upload_expires_at!.getTime();
    const expiresIn = Math.max(1, Math.floor((expiresAtMs - Date.now()) / 1000));
    const expiresAt = new Date(expiresAtMs).toISOString();
    const out: PartUrl[] = [];
    for (const n of partNumbers) {
      if (this.#storage.presignPart) {
        const p = await this.#storage.presignPart(row.storage_key!, row.upload_id!, n, { expiresInSeconds: expiresIn });
        out.push({ partNumber: n, ...p, expiresAt });
      } else {
        out.push({ partNumber: n, method: 'PUT', url: this.#signUrl(row.id, n, Math.floor(expiresAtMs / 1000)), headers: {}, expiresAt });
      }
    }
    return out;
  }

  async create(workspaceId: string, createdBy: string | null, body: CreateBody): Promise<{ file: FileRow; upload: UploadDescriptor | null }> {
    const directory = normalizeDirectory(body.directory);
    const metadata = body.metadata ?? null;
    const expected = body.checksumSha256?.toLowerCase() ?? null;
    const common = { metadata, expected_sha256: expected, created_by: createdBy };
    const expiresAt = new Date(Date.now() + this.#config.uploadExpirySeconds * 1000);

    if (body.mode === 'document') {
      const name = normalizeName(body.name);
      const buf = Buffer.from(body.content, 'utf8');
      if (buf.length > this.#config.maxDocumentBytes) throw new PayloadTooLarge(`A document holds at most ${this.#config.maxDocumentBytes} bytes.`);
      const sha = createHash('sha256').update(buf).digest('hex');
      const contentType = body.contentType ?? (extensionOf(name) === 'md' || extensionOf(name) === 'markdown' ? 'text/markdown' : 'text/plain');
      const failed = expected !== null && expected !== sha;
      const file = await this.#insert(workspaceId, name, directory, {
        ...common,
        source: 'document',
        status: failed ? 'failed' : 'uploaded',
        content_type: contentType,
        content: failed ? null : body.content,
        size_bytes: failed ? 0 : buf.length,
        checksum_sha256: failed ? null : sha,
        etag: failed ? null : sha.slice(0, 32),
        error_message: failed ? `Checksum mismatch: the content's SHA-256 is ${sha}, not ${expected}.` : null,
        completed_at: failed ? null : new Date(),
      });
      return { file, upload: null };
    }

    if (body.mode === 'direct') {
      const name = normalizeName(body.name);
      if (body.sizeBytes !== undefined && body.sizeBytes > this.#config.maxFileSizeBytes) throw new PayloadTooLarge(`A file holds at most ${this.#config.maxFileSizeBytes} bytes.`);
      const id = uuidv7();
      const key = FilesService.key(workspaceId, id);
      const file = await this.#insert(workspaceId, name, directory, {
        ...common,
        id,
        source: 'direct',
        status: 'pending_upload',
        content_type: body.contentType ?? guessContentType(name),
        declared_size_bytes: body.sizeBytes ?? null,
        storage_key: key,
        upload_expires_at: expiresAt,
      });
      let req: PresignedRequest;
      if (this.#storage.presignPut) req = await this.#storage.presignPut(key, { expiresInSeconds: this.#config.uploadExpirySeconds, contentType: file.content_type ?? undefined });
      else req = { method: 'PUT', url: this.#signUrl(id, undefined, Math.floor(expiresAt.getTime() / 1000)), headers: {} };
      return { file, upload: { type: 'direct', method: 'PUT', url: req.url, headers: req.headers, expiresAt: expiresAt.toISOString() } };
    }

    if (body.mode === 'multipart') {
      const name = normalizeName(body.name);
      const c = this.#config;
      if (body.sizeBytes > c.maxFileSizeBytes) throw new PayloadTooLarge(`A file holds at most ${c.maxFileSizeBytes} bytes.`);
      const partSize = body.partSizeBytes ?? Math.max(c.defaultPartSizeBytes, Math.ceil(body.sizeBytes / 10_000));
      const partCount = Math.ceil(body.sizeBytes / partSize);
      if (partCount > 10_000) throw new DecodeError([{ _tag: 'Refinement', path: ['partSizeBytes'], message: `gives ${partCount} parts; at most 10000 are allowed` }]);
      if (partSize > c.maxPartSizeBytes) throw new DecodeError([{ _tag: 'Refinement', path: ['partSizeBytes'], message: `must be at most ${c.maxPartSizeBytes}` }]);
      if (partCount > 1 && partSize < c.minPartSizeBytes) throw new DecodeError([{ _tag: 'Refinement', path: ['partSizeBytes'], message: `must be at least ${c.minPartSizeBytes} when there is more than one part` }]);
      const id = uuidv7();
      const key = FilesService.key(workspaceId, id);
      const contentType = body.contentType ?? guessContentType(name);
      const uploadId = await this.#storage.createMultipart(key, { contentType: contentType ?? undefined });
      let file: FileRow;
      try {
        file = await this.#insert(workspaceId, name, directory, {
          ...common,
          id,
          source: 'multipart',
          status: 'uploading',
          content_type: contentType,
          declared_size_bytes: body.sizeBytes,
          storage_key: key,
          upload_id: uploadId,
          part_size_bytes: partSize,
          part_count: partCount,
          upload_expires_at: expiresAt,
        });
      } catch (err) {
        await this.#storage.abortMultipart(key, uploadId).catch(() => undefined);
        throw err;
      }
      const first = Array.from({ length: Math.min(partCount, c.initialPartUrls) }, (_, i) => i + 1);
      return {
        file,
        upload: { type: 'multipart', uploadId, partSizeBytes: partSize, partCount, parts: await this.#partUrls(file, first), expiresAt: expiresAt.toISOString() },
      };
    }

    // externalUrl
    let url: URL;
    try {
      url = new URL(body.externalUrl);
    } catch {
      throw new DecodeError([{ _tag: 'Refinement', path: ['externalUrl'], message: 'must be an absolute http(s) URL' }]);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new DecodeError([{ _tag: 'Refinement', path: ['externalUrl'], message: `scheme '${url.protocol.replace(/:$/, '')}' is not allowed; only http and https` }]);
    }
    const fromUrl = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '').replace(/[\u0000-\u001f\u007f/\\]/g, '').trim();
    const name = normalizeName(body.name ?? (fromUrl && fromUrl !== '.' && fromUrl !== '..' ? fromUrl.slice(0, 255) : 'download'));
    const id = uuidv7();
    const file = await this.#insert(workspaceId, name, directory, {
      ...common,
      id,
      source: 'externalUrl',
      status: 'importing',
      content_type: body.contentType ?? null,
      external_url: url.toString(),
      storage_key: FilesService.key(workspaceId, id),
      upload_expires_at: new Date(Date.now() + this.#config.externalUrlTimeoutMs * 2 + 60_000),
    });
    this.#track(this.#import(file, url, body.contentType === undefined));
    return { file, upload: null };
  }

  async #import(file: FileRow, url: URL, takeContentType: boolean): Promise<void> {
    try {
      const res = await this.#fetch(url, { timeoutMs: this.#config.externalUrlTimeoutMs, maxBytes: this.#config.externalUrlMaxBytes });
      if (!res.ok || !res.body) {
        await res.body?.cancel().catch(() => undefined);
        throw new Error(`The remote server answered HTTP ${res.status}.`);
      }
      const meter = new Meter(this.#config.externalUrlMaxBytes);
      const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
      const contentType = takeContentType ? (res.headers.get('content-type')?.split(';')[0].trim() || guessContentType(file.name)) : file.content_type;
      const stored = await this.#storage.put(file.storage_key!, body.pipe(meter), { contentType: contentType ?? undefined });
      await this.#finish(file, { sizeBytes: meter.bytes, sha: meter.hash.digest('hex'), etag: stored.etag, contentType, fromStatus: 'importing' });
    } catch (err) {
      const message = (err as Error).message || 'The import failed.';
      await this.#storage.delete(file.storage_key!).catch(() => undefined);
      await this.#db.query(
        `UPDATE files_files SET status = 'failed', error_message = $2, updated_at = now() WHERE id = $1 AND status = 'importing'`,
        [file.id, `Import failed: ${message}`],
      );
    }
  }

  /** Marks a file uploaded after its bytes are stored, or failed on a size or checksum mismatch (the object is then deleted). */
  async #finish(
    file: FileRow,
    r: { sizeBytes: number; sha: string; etag: string; contentType?: string | null; fromStatus: FileStatus },
  ): Promise<FileRow> {
    const declared = file.declared_size_bytes === null ? null : Number(file.declared_size_bytes);
    let error: string | null = null;
    if (declared !== null && declared !== r.sizeBytes) error = `Size mismatch: ${r.sizeBytes} bytes were uploaded, ${declared} were declared.`;
    else if (file.expected_sha256 && file.expected_sha256 !== r.sha) error = `Checksum mismatch: the content's SHA-256 is ${r.sha}, not ${file.expected_sha256}.`;
    if (error) {
      await this.#storage.delete(file.storage_key!).catch(() => undefined);
      const rows = await this.#db.query<FileRow>(
        `UPDATE files_files SET status = 'failed', error_message = $2, upload_id = NULL, busy_until = NULL, updated_at = now() WHERE id = $1 AND status = $3 AND deleted_at IS NULL RETURNING *`,
        [file.id, error, r.fromStatus],
      );
      return rows[0] ?? file;
    }
    const rows = await this.#db.query<FileRow>(
      `UPDATE files_files SET status = 'uploaded', size_bytes = $2, checksum_sha256 = $3, etag = $4, content_type = COALESCE($5, content_type),
         error_message = NULL, upload_id = NULL, busy_until = NULL, upload_expires_at = NULL, completed_at = now(), updated_at = now()
       WHERE id = $1 AND status = $6 AND deleted_at IS NULL RETURNING *`,
      [file.id, r.sizeBytes, r.sha, r.etag.replace(/"/g, ''), r.contentType ?? null, r.fromStatus],
    );
    if (!rows[0]) {
      // Deleted (or completed by someone else) meanwhile: do not leave our object behind if deleted.
      const now = await this.#db.query<FileRow>('SELECT * FROM files_files WHERE id = $1', [file.id]);
      if (!now[0] || now[0].deleted_at) await this.#storage.delete(file.storage_key!).catch(() => undefined);
      return now[0] ?? file;
    }
    return rows[0];
  }

  // --- direct uploads ------------------------------------------------------------------------

  /** The body of a signed direct upload (local backend): streams it to storage, then `uploaded` or `failed`. */
  async receiveDirect(fileId: string, body: Readable, contentLength: number | undefined): Promise<FileRow> {
    const rows = await this.#db.query<FileRow>('SELECT * FROM files_files WHERE id = $1 AND deleted_at IS NULL', [fileId]);
    const row = rows[0];
    if (!row || row.source !== 'direct') throw new NotFound('File was not found.');
    const stale = row.status === 'uploading' && (!row.busy_until || row.busy_until < new Date());
    if (row.status !== 'pending_upload' && !stale) throw new Conflict(`This upload URL was already used (status '${row.status}').`, { status: row.status });
    const declared = row.declared_size_bytes === null ? null : Number(row.declared_size_bytes);
    if (declared !== null && contentLength !== undefined && contentLength !== declared) {
      throw new InvalidRequest(`The body has ${contentLength} bytes; ${declared} were declared.`);
    }
    // A lease, renewed while the body streams: if this node dies mid-upload the lease lapses and
    // the same URL can be used again (until it expires).
    const claimed = await this.#db.query<FileRow>(
      `UPDATE files_files SET status = 'uploading', busy_until = now() + interval '2 minutes', updated_at = now()
       WHERE id = $1 AND deleted_at IS NULL AND (status = 'pending_upload' OR (status = 'uploading' AND (busy_until IS NULL OR busy_until < now())))
       RETURNING *`,
      [fileId],
    );
    if (!claimed[0]) throw new Conflict('This upload URL is in use or was already used.');
    const renew = setInterval(() => {
      void this.#db
        .query(`UPDATE files_files SET busy_until = now() + interval '2 minutes' WHERE id = $1 AND status = 'uploading'`, [fileId])
        .catch((err: unknown) => this.#log.warn({ err, fileId }, 'renewing an upload lease failed'));
    }, 30_000);
    const meter = new Meter(declared ?? this.#config.maxFileSizeBytes);
    let stored;
    try {
      stored = await this.#storage.put(row.storage_key!, body.pipe(meter), { contentType: row.content_type ?? undefined });
    } catch (err) {
      // The client can try again with the same URL.
      await this.#db.query(`UPDATE files_files SET status = 'pending_upload', busy_until = NULL, updated_at = now() WHERE id = $1 AND status = 'uploading'`, [fileId]);
      body.resume();
      throw err;
    } finally {
      clearInterval(renew);
    }
    return this.#finish(claimed[0], { sizeBytes: meter.bytes, sha: meter.hash.digest('hex'), etag: stored.etag, fromStatus: 'uploading' });
  }

  /** Direct upload to a presigning backend: if the object is there, hash it and complete the file. */
  async completeDirectFromStorage(row: FileRow): Promise<FileRow | null> {
    const head = await this.#storage.head(row.storage_key!);
    if (!head) return null;
    const claimed = await this.#db.query<FileRow>(
      `UPDATE files_files SET busy_until = now() + interval '10 minutes' WHERE id = $1 AND status = 'pending_upload' AND (busy_until IS NULL OR busy_until < now()) RETURNING *`,
      [row.id],
    );
    if (!claimed[0]) {
      // Another request or the sweep is completing it: wait for that (bounded), then answer.
      const end = Date.now() + 30_000;
      for (;;) {
        const now = await this.#db.query<FileRow>('SELECT * FROM files_files WHERE id = $1 AND deleted_at IS NULL', [row.id]);
        if (!now[0] || now[0].status !== 'pending_upload' || !now[0].busy_until || now[0].busy_until < new Date() || Date.now() > end) return now[0] ?? null;
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    try {
      const got = await this.#storage.get(row.storage_key!);
      if (!got) return null;
      const meter = new Meter();
      await pipeline(got.body, meter, async function* (src) {
        for await (const _ of src) void _;
      });
      return await this.#finish(claimed[0], { sizeBytes: meter.bytes, sha: meter.hash.digest('hex'), etag: head.etag, fromStatus: 'pending_upload' });
    } finally {
      await this.#db.query('UPDATE files_files SET busy_until = NULL WHERE id = $1', [row.id]);
    }
  }

  // --- multipart -----------------------------------------------------------------------------

  #multipartRow(row: FileRow): void {
    if (row.source !== 'multipart') throw new Conflict('This file is not a multipart upload.');
    if (row.status !== 'uploading' || !row.upload_id) throw new Conflict(`The upload is not open (status '${row.status}').`, { status: row.status });
  }

  async parts(workspaceId: string, fileId: string, partNumbers: number[]): Promise<PartUrl[]> {
    const row = await this.#row(workspaceId, fileId);
    this.#multipartRow(row);
    const bad = partNumbers.filter((n) => n > row.part_count!);
    if (bad.length) throw new DecodeError([{ _tag: 'Refinement', path: ['partNumbers'], message: `parts ${bad.join(', ')} are beyond the last part (${row.part_count})` }]);
    return this.#partUrls(row, [...new Set(partNumbers)].sort((a, b) => a - b));
  }

  /** A part sent to the server's own signed URL (local backend). */
  async receivePart(fileId: string, partNumber: number, body: Readable): Promise<string> {
    const rows = await this.#db.query<FileRow>('SELECT * FROM files_files WHERE id = $1 AND deleted_at IS NULL', [fileId]);
    const row = rows[0];
    if (!row) throw new NotFound('File was not found.');
    this.#multipartRow(row);
    if (partNumber > row.part_count!) throw new InvalidRequest(`Part ${partNumber} is beyond the last part (${row.part_count}).`);
    const partSize = Number(row.part_size_bytes);
    const meter = new Meter(partSize);
    try {
      return await this.#storage.uploadPart(row.storage_key!, row.upload_id!, partNumber, body.pipe(meter));
    } catch (err) {
      body.resume();
      if (err instanceof StoragePartError) throw new InvalidRequest(err.message);
      throw err;
    }
  }

  async complete(workspaceId: string, fileId: string, parts: { partNumber: number; etag: string }[]): Promise<FileRow> {
    const row = await this.#row(workspaceId, fileId);
    this.#multipartRow(row);
    const sorted = [...parts].sort((a, b) => a.partNumber - b.partNumber);
    const issues = [];
    for (let i = 1; i < sorted.length; i++) if (sorted[i].partNumber === sorted[i - 1].partNumber) issues.push(`part ${sorted[i].partNumber} is listed twice`);
    const given = new Set(sorted.map((p) => p.partNumber));
    const missing: number[] = [];
    for (let n = 1; n <= row.part_count!; n++) if (!given.has(n)) missing.push(n);
    if (missing.length) issues.push(`parts ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ', ...' : ''} are missing (every part 1..${row.part_count} is needed)`);
    const extra = sorted.filter((p) => p.partNumber > row.part_count!).map((p) => p.partNumber);
    if (extra.length) issues.push(`parts ${extra.join(', ')} are beyond the last part (${row.part_count})`);
    if (issues.length) throw new DecodeError([{ _tag: 'Refinement', path: ['parts'], message: issues.join('; ') }]);

    const claimed = await this.#db.query<FileRow>(
      `UPDATE files_files SET busy_until = now() + interval '30 minutes' WHERE id = $1 AND status = 'uploading' AND (busy_until IS NULL OR busy_until < now()) RETURNING *`,
      [fileId],
    );
    if (!claimed[0]) throw new Conflict('The upload is being completed by another request.');
    let stored;
    try {
      stored = await this.#storage.completeMultipart(row.storage_key!, row.upload_id!, sorted);
    } catch (err) {
      await this.#db.query('UPDATE files_files SET busy_until = NULL WHERE id = $1', [fileId]);
      if (err instanceof StoragePartError) throw new InvalidRequest(`The upload was not completed: ${err.message}`);
      throw err;
    }
    // The backend's hash of what it assembled, or one sequential read to compute it.
    let sha = stored.sha256;
    let size = stored.sizeBytes;
    if (!sha) {
      const got = await this.#storage.get(row.storage_key!);
      const meter = new Meter();
      if (got) {
        await pipeline(got.body, meter, async function* (src) {
          for await (const _ of src) void _;
        });
      }
      sha = meter.hash.digest('hex');
      size = meter.bytes;
    }
    const done = await this.#finish(claimed[0], { sizeBytes: size, sha, etag: stored.etag, fromStatus: 'uploading' });
    if (done.status === 'failed') throw new InvalidRequest(done.error_message ?? 'The upload failed.', { status: 'failed' });
    return done;
  }

  // --- content replace, delete ---------------------------------------------------------------

  async replaceDocument(workspaceId: string, fileId: string, content: string, contentType: string | undefined): Promise<FileRow> {
    const row = await this.#row(workspaceId, fileId);
    if (row.source !== 'document') throw new Conflict('Not a document.');
    const buf = Buffer.from(content, 'utf8');
    if (buf.length > this.#config.maxDocumentBytes) throw new PayloadTooLarge(`A document holds at most ${this.#config.maxDocumentBytes} bytes.`);
    const sha = createHash('sha256').update(buf).digest('hex');
    const rows = await this.#db.query<FileRow>(
      `UPDATE files_files SET content = $3, size_bytes = $4, checksum_sha256 = $5, etag = $6, content_type = COALESCE($7, content_type),
         status = 'uploaded', error_message = NULL, completed_at = now(), updated_at = now()
       WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
      [workspaceId, fileId, content, buf.length, sha, sha.slice(0, 32), contentType ?? null],
    );
    if (!rows[0]) throw new NotFound('File was not found.');
    return rows[0];
  }

  /** Replaces the bytes of an uploaded (or failed) stored file with a streamed body. */
  async replaceContent(workspaceId: string, fileId: string, body: Readable, contentType: string | undefined): Promise<FileRow> {
    const row = await this.#row(workspaceId, fileId);
    if (row.status !== 'uploaded' && row.status !== 'failed') {
      body.resume();
      throw new Conflict(`The file's upload is not finished (status '${row.status}').`, { status: row.status });
    }
    const meter = new Meter(this.#config.maxFileSizeBytes);
    let stored;
    try {
      stored = await this.#storage.put(row.storage_key!, body.pipe(meter), { contentType });
    } catch (err) {
      body.resume();
      throw err;
    }
    const sha = meter.hash.digest('hex');
    const rows = await this.#db.query<FileRow>(
      `UPDATE files_files SET size_bytes = $3, checksum_sha256 = $4, etag = $5, content_type = COALESCE($6, content_type), expected_sha256 = NULL,
         declared_size_bytes = NULL, status = 'uploaded', error_message = NULL, completed_at = now(), updated_at = now()
       WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
      [workspaceId, fileId, meter.bytes, sha, stored.etag.replace(/"/g, ''), contentType ?? null],
    );
    if (!rows[0]) {
      await this.#storage.delete(row.storage_key!).catch(() => undefined);
      throw new NotFound('File was not found.');
    }
    return rows[0];
  }

  async delete(workspaceId: string, fileId: string): Promise<void> {
    const row = await this.#row(workspaceId, fileId);
    const rows = await this.#db.query<FileRow>(
      `UPDATE files_files SET deleted_at = now(), updated_at = now() WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
      [workspaceId, fileId],
    );
    if (!rows[0]) throw new NotFound('File was not found.');
    await this.#discard(row);
  }

  async #discard(row: FileRow): Promise<void> {
    if (!row.storage_key) return;
    if (row.upload_id) await this.#storage.abortMultipart(row.storage_key, row.upload_id).catch((err: unknown) => this.#log.warn({ err, fileId: row.id }, 'aborting a multipart upload failed'));
    await this.#storage.delete(row.storage_key).catch((err: unknown) => this.#log.warn({ err, fileId: row.id }, 'deleting a stored object failed'));
  }

  // --- sweep ---------------------------------------------------------------------------------

  /**
   * Runs on start and every `sweepIntervalMs` on every node (each step is a conditional update,
   * so nodes do not step on each other):
   * - pending direct uploads on a presigning backend whose object arrived are completed;
   * - uploads (direct or multipart) past their expiry are aborted and the file deleted;
   * - imports past their deadline (the importing node died) are failed.
   */
  async sweep(): Promise<void> {
    if (this.#storage.presignPut) {
      const pending = await this.#db.query<FileRow>(
        `SELECT * FROM files_files WHERE deleted_at IS NULL AND source = 'direct' AND status = 'pending_upload' ORDER BY created_at LIMIT 100`,
      );
      for (const r of pending) await this.completeDirectFromStorage(r).catch((err: unknown) => this.#log.warn({ err, fileId: r.id }, 'completing a direct upload failed'));
    }
    const expired = await this.#db.query<FileRow>(
      `UPDATE files_files SET deleted_at = now(), status = 'failed', error_message = 'The upload expired before it was completed.', updated_at = now()
       WHERE deleted_at IS NULL AND status IN ('pending_upload', 'uploading') AND source IN ('direct', 'multipart')
         AND upload_expires_at < now() AND (busy_until IS NULL OR busy_until < now())
       RETURNING *`,
    );
    for (const r of expired) await this.#discard(r);
    await this.#db.query(
      `UPDATE files_files SET status = 'failed', error_message = 'Import failed: the import was interrupted.', updated_at = now()
       WHERE deleted_at IS NULL AND status = 'importing' AND upload_expires_at < now()`,
    );
  }
}
