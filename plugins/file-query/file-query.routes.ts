import type { App } from '../../core/registry/index.ts';
import type { QueryEngine } from '../query/api.ts';
import { QueryBody, QueryResult } from './file-query.schemas.ts';
import type { FileQueryService, SourceInput } from './file-query.service.ts';

export function fileQueryRoutes(app: App, service: FileQueryService, engines: QueryEngine[], maxRows: number): void {
  for (const engine of engines) {
    app.post(
      `/${engine.name}/query`,
      {
        config: { permission: 'data.read' },
        schema: {
          tags: ['file-query'],
          summary: `Read-only ${engine.name} SQL over file sources`,
          description: [
            'Registers each source as a table named `name`, then runs exactly one read-only SELECT or WITH statement (no other files, URLs, settings, DDL/DML or second statement: 400).',
            "Source kinds: `s3` `{name, key, format}` reads an object of the workspace's own storage (whichever backend); `local` `{name, fileId | path, format}` reads an uploaded workspace file; `relational` is reserved and answers 400 `not_supported`. Formats: csv, parquet, json.",
            `Answers \`{sql, sourceNames, table: {columns, rows}, records, rowCount, executionTimeMs}\`, at most ${maxRows} rows.`,
          ].join('\n\n'),
          body: QueryBody,
          response: { 200: QueryResult },
        },
      },
      async (request) => service.run(engine, request.workspace!.id, request.body.sql, request.body.sources as SourceInput[]),
    );
  }
}
