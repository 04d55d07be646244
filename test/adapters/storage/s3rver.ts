/**
 * A real S3-compatible server for tests: s3rver on 127.0.0.1, port 0, in a temp directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// @ts-ignore s3rver ships no type declarations
import S3rver from 's3rver';

export interface TestS3 {
  endpoint: string;
  directory: string;
  /** Plugin config for the `storage-s3` adapter. */
  config(bucket?: string): Record<string, unknown>;
  close(): Promise<void>;
}

export async function startS3(): Promise<TestS3> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'trellis-s3-'));
  const server = new (S3rver as unknown as new (o: object) => { run(): Promise<{ port: number }>; close(): Promise<void> })({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
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
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
