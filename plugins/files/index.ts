/**
 * Files plugin: file records, uploads in four modes (document, direct, multipart, externalUrl),
 * streamed content with Range, and the `files.storage` extension point through which storage
 * adapters (`adapters/storage/local`, `adapters/storage/s3`) provide the bytes' home.
 * Contributes `file` nodes to the explorer.
 */
import path from 'node:path';
import Type from 'typebox';
import { BootError, definePlugin } from '../../core/registry/index.ts';
import { explorerSourcesPoint } from '../explorer/api.ts';
import { filesServiceRef, storageBackendsPoint } from './api.ts';
import { migrations } from './entities.ts';
import { filesRoutes, rawRoutes } from './files.routes.ts';
import { FilesService, type FilesConfig } from './files.service.ts';

const MiB = 1024 * 1024;

export const FilesConfigSchema = Type.Object({
  backend: Type.String({ default: 'local', description: 'The storage backend to use: the `kind` of a loaded storage adapter (local, s3)' }),
  uploadExpirySeconds: Type.Integer({ minimum: 1, default: 24 * 3600, description: 'Lifetime of upload URLs and open uploads; unfinished uploads are aborted after it' }),
  defaultPartSizeBytes: Type.Integer({ minimum: 1, default: 8 * MiB }),
  minPartSizeBytes: Type.Integer({ minimum: 1, default: 5 * MiB, description: 'Smallest part size when there is more than one part (S3 needs 5 MiB)' }),
  maxPartSizeBytes: Type.Integer({ minimum: 1, default: 5 * 1024 * MiB }),
  maxFileSizeBytes: Type.Integer({ minimum: 1, default: 5 * 1024 * 1024 * MiB }),
  maxDocumentBytes: Type.Integer({ minimum: 1, default: 5 * MiB }),
  initialPartUrls: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  externalUrlMaxBytes: Type.Integer({ minimum: 1, default: 1024 * MiB }),
  externalUrlTimeoutMs: Type.Integer({ minimum: 1, default: 300_000 }),
  sweepIntervalMs: Type.Integer({ minimum: 10, default: 60_000, description: 'How often expired uploads are aborted and presigned direct uploads completed' }),
});

export default definePlugin({
  id: 'files',
  description: 'Files: uploads (document, direct, multipart, externalUrl), streamed content, storage backends',
  config: FilesConfigSchema,
  permissions: {
    'files.read': { description: 'List files and read their content', roles: ['editor', 'viewer'] },
    'files.write': { description: 'Create, upload, replace and delete files', roles: ['editor'] },
  },
  migrations,
  provides: [filesServiceRef],
  extensionPoints: [storageBackendsPoint],
  extends: [explorerSourcesPoint],
  setup(ctx) {
    const backends = ctx.extensions(storageBackendsPoint);
    const storage = backends.find((b) => b.kind === ctx.config.backend);
    if (!storage) {
      throw new BootError(
        `plugins.files.backend is '${ctx.config.backend}', but no loaded storage adapter provides it (loaded: ${backends.map((b) => b.kind).join(', ') || 'none'}; for s3 set plugins.storage-s3.bucket)`,
      );
    }
    const config = ctx.config as FilesConfig;
    const service = new FilesService({ db: ctx.db, storage, config, secrets: ctx.secrets, fetch: ctx.net.fetch, log: ctx.logger, baseUrl: ctx.core.baseUrl, tmpDir: path.join(ctx.core.dataDir, 'tmp', 'files') });
    ctx.provide(filesServiceRef, { existing: (workspaceId, ids) => service.existing(workspaceId, ids), openLocal: (workspaceId, ref) => service.openLocal(workspaceId, ref) });
    ctx.extend(explorerSourcesPoint, {
      kind: 'file',
      async list(workspaceId) {
        return (await service.uploaded(workspaceId)).map((r) => ({
          sourceId: r.id,
          name: r.name,
          sizeBytes: Number(r.size_bytes),
          owner: r.created_by,
          href: `/files/${r.id}`,
          createdAt: r.created_at.toISOString(),
          updatedAt: r.updated_at.toISOString(),
        }));
      },
    });
    ctx.routes((app) => filesRoutes(app, service));
    ctx.routes((app) => rawRoutes(app, service, config.maxDocumentBytes));

    let timer: NodeJS.Timeout | undefined;
    let sweeping: Promise<void> | undefined;
    const sweep = () => {
      sweeping ??= service
        .sweep()
        .catch((err: unknown) => ctx.logger.error({ err }, 'files sweep failed'))
        .finally(() => (sweeping = undefined));
      return sweeping;
    };
    ctx.onStart(async () => {
      await sweep();
      timer = setInterval(() => void sweep(), config.sweepIntervalMs);
      timer.unref();
    });
    ctx.onStop(async () => {
      if (timer) clearInterval(timer);
      await sweeping;
      await service.idle();
    });
  },
});
