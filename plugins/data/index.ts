/**
 * Data plugin: data definitions (typed schemas) and their rows, with the paged query, bulk
 * writes, validation against field types, row events after commit, materialized fields, and a
 * tabular projection for query engines (sql-query).
 */
import { mcpToolsPoint } from '../mcp/api.ts';
import { dataTools } from './mcp.ts';
import Type from 'typebox';
import { definePlugin } from '../../core/registry/index.ts';
import { explorerSourcesPoint } from '../explorer/api.ts';
import { filesServiceRef } from '../files/api.ts';
import { queryEnginesRef } from '../query/api.ts';
import { dataServiceRef, dataTablesRef, type DataService } from './api.ts';
import { definitionsRoutes } from './definitions.routes.ts';
import { DefinitionsService, toView } from './definitions.service.ts';
import { MaterializedFields } from './materialized.ts';
import { migrations } from './migrations.ts';
import { rowsRoutes } from './rows.routes.ts';
import { RowsService } from './rows.service.ts';
import { TablesService } from './tables.service.ts';

const config = Type.Object({
  defaultPageSize: Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'pageSize when the query omits it' }),
  maxBatchRows: Type.Integer({ minimum: 1, maximum: 100_000, default: 1000, description: 'Rows per upsert-many request' }),
  maxRowBytes: Type.Integer({ minimum: 256, default: 65_536, description: 'JSON size of one row' }),
  maxChangeRows: Type.Integer({ minimum: 1, default: 10_000, description: 'Rows one patch-many / delete-many may change' }),
  maxSelectIds: Type.Integer({ minimum: 1, default: 100_000, description: 'Ids select-all returns at most' }),
  materializedTimeoutMs: Type.Integer({ minimum: 10, default: 5000, description: 'Time limit of one materialized-field query' }),
});

export default definePlugin({
  id: 'data',
  description: 'Data definitions and data rows',
  config,
  permissions: {
    'data.read': { description: 'Read data definitions and rows, and run read-only SQL over them', roles: ['editor', 'viewer'] },
    'data.write': { description: 'Create, change and delete data definitions and rows', roles: ['editor'] },
  },
  migrations,
  provides: [dataServiceRef, dataTablesRef],
  optionalDeps: { files: filesServiceRef, engines: queryEnginesRef },
  extends: [explorerSourcesPoint, mcpToolsPoint],
  setup(ctx) {
    const defs = new DefinitionsService(ctx.db);
    const rows = new RowsService(ctx.db, defs, ctx.events, ctx.optionalDeps.files, ctx.config);
    const tables = new TablesService(ctx.db, defs);
    const engine = ctx.optionalDeps.engines?.default();
    if (engine) {
      const mat = new MaterializedFields(ctx.db, defs, tables, engine, ctx.config.materializedTimeoutMs, ctx.logger);
      rows.materializer = mat;
      defs.checkMaterialized = (ws, sql, self) => mat.check(ws, sql, self);
      defs.onFieldsChanged = (def) => mat.refreshAll(def);
      ctx.onStop(() => mat.idle());
    }

    const service: DataService = {
      query: (ws, definition, q) => rows.query(ws, definition, q),
      get: (ws, definition, rowId) => rows.get(ws, definition, rowId),
      upsertMany: async (ws, definition, input) => (await rows.upsertMany(ws, definition, input)).items,
    };
    ctx.provide(dataServiceRef, service);
    ctx.provide(dataTablesRef, tables);

    ctx.extend(explorerSourcesPoint, {
      kind: 'table',
      async list(workspaceId) {
        return (await defs.list(workspaceId)).map((d) => ({
          sourceId: d.id,
          name: d.name,
          sizeBytes: null,
          owner: null,
          href: toView(d).url,
          createdAt: d.createdAt.toISOString(),
          updatedAt: d.updatedAt.toISOString(),
        }));
      },
    });

    for (const tool of dataTools(defs, service)) ctx.extend(mcpToolsPoint, tool);

    ctx.routes((app) => {
      definitionsRoutes(app, defs);
      rowsRoutes(app, rows);
    });
  },
});
