/**
 * Public API of the files plugin (the only file other plugins may import).
 */
import type { Readable } from 'node:stream';
import { createExtensionPoint, createServiceRef } from '../../core/registry/index.ts';

export interface FilesService {
  /** Which of `ids` are files of this workspace that are not deleted. */
  existing(workspaceId: string, ids: string[]): Promise<Set<string>>;
  /**
   * A file on this machine holding the bytes of one of the workspace's uploaded files (by id or
   * by `path`) or of an object under the workspace's storage prefix (`key`, relative to the
   * prefix or a full key inside it), for engines that read local files. On the local backend it
   * is the stored file itself; otherwise a temp copy, removed by `release()`.
   * Throws `not_found` for an unknown file or object, and 400 for a key outside the workspace's
   * prefix or a file that is not `uploaded`.
   */
  openLocal(workspaceId: string, ref: { fileId: string } | { path: string } | { key: string }): Promise<LocalCopy>;
}

export interface LocalCopy {
  path: string;
  /** The file name (or the key's last segment). */
  name: string;
  sizeBytes: number;
  release(): Promise<void>;
}

export const filesServiceRef = createServiceRef<FilesService>({ id: 'files.files', plugin: 'files' });

// ---------------------------------------------------------------------------------------------
// Storage extension point: where file bytes live. Adapters (`adapters/storage/<kind>`) contribute
// a backend; the files plugin uses the one its `backend` config names. Every backend passes the
// contract suite in test/contracts/storage.ts.


export interface StoredObject {
  sizeBytes: number;
  /** The backend's entity tag (quoted or not, as the backend gives it). */
  etag: string;
  /** SHA-256 (hex) of the content, when the backend computed it while writing (saves a re-read). */
  sha256?: string;
}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface PresignedRequest {
  method: 'PUT';
  url: string;
  headers: Record<string, string>;
}

export interface StorageBackend {
  /** The backend's name (`local`, `s3`), matched against the files plugin's `backend` config. */
  readonly kind: string;
  /** Streams `body` into `key`, replacing any object there only once the body is complete. */
  put(key: string, body: Readable, opts?: { contentType?: string }): Promise<StoredObject>;
  /** Streams an object (or one byte range of it); `null` when there is none. */
  get(key: string, range?: ByteRange): Promise<{ body: Readable; sizeBytes: number } | null>;
  head(key: string): Promise<StoredObject | null>;
  /** Deletes an object; deleting a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Keys under a prefix (for sweeps and leak checks). */
  list(prefix: string): Promise<string[]>;

  createMultipart(key: string, opts?: { contentType?: string }): Promise<string>;
  /** Streams one part; returns its ETag. */
  uploadPart(key: string, uploadId: string, partNumber: number, body: Readable): Promise<string>;
  /** Assembles the parts in order. Throws `StoragePartError` for a missing part or a wrong ETag, leaving the upload open. */
  completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<StoredObject>;
  /** Discards an upload and its parts; aborting a missing one is not an error. */
  abortMultipart(key: string, uploadId: string): Promise<void>;

  /**
   * Backends clients can upload to directly (S3) presign a PUT of the object or of one part.
   * Backends without it (local) get the files plugin's own signed upload URLs instead.
   */
  presignPut?(key: string, opts: { expiresInSeconds: number; contentType?: string }): Promise<PresignedRequest>;
  presignPart?(key: string, uploadId: string, partNumber: number, opts: { expiresInSeconds: number }): Promise<PresignedRequest>;
  /** A path on this machine holding the object, for engines that read files (local backend only). */
  localPath?(key: string): string | null;
  /**
   * Whether `completeMultipart` itself refuses missing parts and wrong ETags. Absent means yes;
   * S3 answers no on servers without ListParts (the server's own checks then apply).
   */
  verifiesParts?(): Promise<boolean>;
  /** Releases clients and handles. */
  close?(): Promise<void>;
}

/** A missing part, a part whose ETag does not match, or parts out of order. */
export class StoragePartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoragePartError';
  }
}

export const storageBackendsPoint = createExtensionPoint<StorageBackend>({ id: 'files.storage', plugin: 'files' });

/** The object key prefix of one workspace; every object of the workspace is under it. */
export function workspacePrefix(workspaceId: string): string {
  return `workspaces/${workspaceId}/`;
}
