/**
 * file-query plugin: `POST /api/v1/<engine>/query` for every engine of the query plugin (DuckDB:
 * `/api/v1/duckdb/query`), over file sources of the workspace's storage. Needs `data.read`
 * (declared by the data plugin, which must be loaded with it).
 */
import Type from 'typebox';
import { definePlugin } from '../../core/registry/index.ts';
import { filesServiceRef } from '../files/api.ts';
import { queryEnginesRef } from '../query/api.ts';
import { fileQueryRoutes } from './file-query.routes.ts';
import { FileQueryService } from './file-query.service.ts';

export default definePlugin({
  id: 'file-query',
  description: 'Read-only SQL over file sources (csv, parquet, json) in the workspace storage',
  config: Type.Object({
    maxRows: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000 }),
    timeoutMs: Type.Integer({ minimum: 100, default: 30_000 }),
  }),
  deps: { files: filesServiceRef, engines: queryEnginesRef },
  setup(ctx) {
    const service = new FileQueryService(ctx.deps.files, ctx.config);
    const engines = ctx.deps.engines.names().map((n) => ctx.deps.engines.get(n)!);
    ctx.routes((app) => fileQueryRoutes(app, service, engines, ctx.config.maxRows));
  },
});
