/**
 * A real S3-compatible server for tests: s3rver on 127.0.0.1, port 0, in a temp directory.
 *
 * s3rver 3.7 lacks two multipart operations real S3 has: ListParts and AbortMultipartUpload
 * (both answer 405). A small front on 127.0.0.1 adds them, reading and removing s3rver's own
 * upload directory (`<dir>/<bucket>/._S3rver_uploads/<uploadId>/<partNumber>` + `.md5`), and
 * passes every other request through unchanged (Host included, so SigV4 signatures still
 * verify). `uploadDirs()` lists open uploads, for leak checks.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
// @ts-ignore s3rver ships no type declarations
import S3rver from 's3rver';

export interface TestS3 {
  endpoint: string;
  directory: string;
  /** Plugin config for the `storage-s3` adapter. */
  config(bucket?: string): Record<string, unknown>;
  /** Open multipart uploads of a bucket (ids). */
  uploadDirs(bucket: string): Promise<string[]>;
  close(): Promise<void>;
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function startS3(): Promise<TestS3> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'trellis-s3-'));
  const server = new (S3rver as unknown as new (o: object) => { run(): Promise<{ port: number }>; close(): Promise<void> })({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
  });
  const { port: backendPort } = await server.run();
  const uploadsOf = (bucket: string) => path.join(directory, bucket, '._S3rver_uploads');

  const front = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://s3');
    const uploadId = u.searchParams.get('uploadId');
    const [bucket, ...keyParts] = u.pathname.slice(1).split('/');
    const key = decodeURIComponent(keyParts.join('/'));
    const dir = uploadId && /^[A-Za-z0-9]+$/.test(uploadId) ? path.join(uploadsOf(bucket), uploadId) : null;
    if (dir && req.method === 'GET' && !u.searchParams.has('partNumber')) {
      void (async () => {
        if (!existsSync(dir)) {
          res.writeHead(404, { 'content-type': 'application/xml' });
          return res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`);
        }
        const parts = (await readdir(dir)).filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => a - b);
        let body = `<?xml version="1.0" encoding="UTF-8"?><ListPartsResult><Bucket>${xml(bucket)}</Bucket><Key>${xml(key)}</Key><UploadId>${xml(uploadId!)}</UploadId><IsTruncated>false</IsTruncated>`;
        for (const n of parts) {
          const md5 = (await readFile(path.join(dir, `${n}.md5`), 'utf8').catch(() => '')).trim();
          if (!md5) continue; // still being written
          const s = await stat(path.join(dir, String(n)));
          body += `<Part><PartNumber>${n}</PartNumber><LastModified>${s.mtime.toISOString()}</LastModified><ETag>"${md5}"</ETag><Size>${s.size}</Size></Part>`;
        }
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(`${body}</ListPartsResult>`);
      })();
      return;
    }
    if (dir && req.method === 'DELETE') {
      if (!existsSync(dir)) {
        res.writeHead(404, { 'content-type': 'application/xml' });
        return res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`);
      }
      rmSync(dir, { recursive: true, force: true });
      res.writeHead(204);
      return res.end();
    }
    const upstream = http.request({ host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  return {
    endpoint,
    directory,
    config: (bucket = 'trellis-test') => ({
      bucket,
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      createBucket: true,
      partSizeBytes: 5 * 1024 * 1024,
    }),
    async uploadDirs(bucket) {
      return existsSync(uploadsOf(bucket)) ? (await readdir(uploadsOf(bucket))).sort() : [];
    },
    async close() {
      front.closeAllConnections();
      await new Promise<void>((r) => front.close(() => r()));
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
