/**
 * sql-query plugin: POST /api/v1/data/sql-query, a read-only SELECT over the workspace's data
 * definitions projected as tables, run by a query engine (DuckDB by default).
 */
import { mcpToolsPoint } from '../mcp/api.ts';
import Type from 'typebox';
import { BootError, definePlugin } from '../../core/registry/index.ts';
import { dataTablesRef } from '../data/api.ts';
import { queryEnginesRef } from '../query/api.ts';
import { sqlQueryRoutes } from './sql-query.routes.ts';
import { SqlQueryService } from './sql-query.service.ts';

const config = Type.Object({
  engine: Type.String({ default: 'duckdb', description: 'Name of the query engine to use' }),
  maxRows: Type.Integer({ minimum: 1, maximum: 100_000, default: 1000, description: 'Rows returned at most (more sets truncated)' }),
  timeoutMs: Type.Integer({ minimum: 10, default: 10_000, description: 'Time limit of one query' }),
  resultCacheEntries: Type.Integer({ minimum: 0, default: 500, description: 'Results kept per node (0 disables the result cache)' }),
});

export default definePlugin({
  id: 'sql-query',
  description: 'Read-only SQL query over workspace data (POST /data/sql-query)',
  config,
  deps: { engines: queryEnginesRef, tables: dataTablesRef },
  extends: [mcpToolsPoint],
  setup(ctx) {
    const engine = ctx.deps.engines.get(ctx.config.engine);
    if (!engine) {
      throw new BootError(
        `sql-query: no query engine named '${ctx.config.engine}' is loaded (loaded: ${ctx.deps.engines.names().join(', ') || 'none'}); load the query-duckdb adapter or set plugins.sql-query.engine`,
      );
    }
    const service = new SqlQueryService(ctx.deps.tables, engine, ctx.config);
    ctx.extend(mcpToolsPoint, {
      name: 'sql_query',
      title: 'SQL over workspace data',
      description: 'One read-only SELECT or WITH over the data definitions as tables (named by handle or snake_case alias). Returns columns, records, rowCount, truncated and warnings.',
      inputSchema: { type: 'object', properties: { sql: { type: 'string', minLength: 1 } }, required: ['sql'], additionalProperties: false },
      permission: 'data.read',
      tags: ['data', 'sql'],
      run: async (c, args) => {
        const r = await service.run(c.workspaceId, String(args.sql));
        return { columns: r.table.columns, records: r.records, rowCount: r.rowCount, truncated: r.truncated, warnings: r.warnings };
      },
    });
    ctx.routes((app) => sqlQueryRoutes(app, service));
  },
});
