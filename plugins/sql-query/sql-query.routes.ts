import type { App } from '../../core/registry/index.ts';
import { SQL_QUERY_DESCRIPTION, SqlQueryBody, SqlQueryResultSchema } from './sql-query.schemas.ts';
import type { SqlQueryService } from './sql-query.service.ts';

export function sqlQueryRoutes(app: App, service: SqlQueryService): void {
  app.post(
    '/data/sql-query',
    {
      config: { permission: 'data.read' },
      schema: {
        tags: ['data'],
        summary: 'Read-only SQL over the workspace data definitions (DuckDB)',
        description: SQL_QUERY_DESCRIPTION,
        body: SqlQueryBody,
        response: { 200: SqlQueryResultSchema },
      },
    },
    async (request) => service.run(request.workspace!.id, request.body.sql),
  );
}
