import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import { NotFound } from '../../core/errors/index.ts';
import { DefinitionIdParams } from './definitions.schemas.ts';
import {
  DataPageView,
  DataRowView,
  DeleteManyBody,
  DeleteManyResponse,
  FILTER_DOC,
  PatchManyBody,
  PatchManyResponse,
  QueryQuerystring,
  RowIdParams,
  SelectAllQuerystring,
  SelectAllResponse,
  UpsertManyBody,
  UpsertManyResponse,
} from './rows.schemas.ts';
import type { RowsService } from './rows.service.ts';

const tags = ['data'];
const wsId = (request: FastifyRequest) => request.workspace!.id;

export function rowsRoutes(app: App, rows: RowsService): void {
  app.get(
    '/data-definitions/:definitionId/query',
    {
      config: { permission: 'data.read' },
      schema: {
        tags,
        summary: 'Query live rows, paged',
        description: `Returns \`{items, total, page, pageSize, pageCount, hasMore}\`. \`page\` >= 1 (default 1), \`pageSize\` 1..100 (default 25).\n\n${FILTER_DOC}`,
        params: DefinitionIdParams,
        querystring: QueryQuerystring,
        response: { 200: DataPageView },
      },
    },
    async (request) => rows.query(wsId(request), request.params.definitionId, request.query as Record<string, unknown>),
  );

  app.get(
    '/data-definitions/:definitionId/data/select-all',
    {
      config: { permission: 'data.read' },
      schema: {
        tags,
        summary: 'Ids of every live row matching the filters',
        description: `Returns \`{ids, total, truncated}\` (at most 100,000 ids, in sort order).\n\n${FILTER_DOC}`,
        params: DefinitionIdParams,
        querystring: SelectAllQuerystring,
        response: { 200: SelectAllResponse },
      },
    },
    async (request) => rows.selectAll(wsId(request), request.params.definitionId, request.query as Record<string, unknown>),
  );

  app.get(
    '/data-definitions/:definitionId/data/:rowId',
    { config: { permission: 'data.read' }, schema: { tags, summary: 'One live data row', params: RowIdParams, response: { 200: DataRowView } } },
    async (request) => {
      const row = await rows.get(wsId(request), request.params.definitionId, request.params.rowId);
      if (!row) throw new NotFound('Data row was not found.');
      return row;
    },
  );

  app.post(
    '/data-definitions/:definitionId/data/upsert-many',
    {
      config: { permission: 'data.write' },
      schema: {
        tags,
        summary: 'Create or update rows, all or nothing',
        description:
          'Body `{rows: [{id?, data}], matchBy?}`. A row with `id` updates that row (merging `data` into the stored fields; null clears a field) or creates it with that id; ' +
          'without `id` it is created, or with `matchBy: <unique field>` it updates the live row with the same value of that field. ' +
          'Values are validated against the field types (see the data plugin docs); relationship ids must be live rows of the target definition and file ids live files of the workspace. ' +
          'Any invalid row fails the whole request: 400 decode error whose issue paths name the row index and field (`rows.3.data.amount`), 409 `conflict` for unique-field clashes, ' +
          '400 `batch_too_large` over 1000 rows, 400 `row_too_large` over 64 KiB. Answers 200 `{items, created, updated}`.',
        params: DefinitionIdParams,
        body: UpsertManyBody,
        response: { 200: UpsertManyResponse },
      },
    },
    async (request) => rows.upsertMany(wsId(request), request.params.definitionId, request.body.rows, request.body.matchBy),
  );

  app.patch(
    '/data-definitions/:definitionId/data/patch-many',
    {
      config: { permission: 'data.write' },
      schema: {
        tags,
        summary: 'Set fields on the rows chosen by ids and/or a filter, all or nothing',
        description:
          'Body `{ids?, filter?, data}` (at least one of ids/filter). Returns `{updatedCount, ids}`. At most 10,000 rows per call (400 `too_many_rows`); 400 `selection_required` without ids and filter.',
        params: DefinitionIdParams,
        body: PatchManyBody,
        response: { 200: PatchManyResponse },
      },
    },
    async (request) => rows.patchMany(wsId(request), request.params.definitionId, request.body),
  );

  app.post(
    '/data-definitions/:definitionId/data/delete-many',
    {
      config: { permission: 'data.write' },
      schema: {
        tags,
        summary: 'Soft-delete the rows chosen by ids and/or a filter',
        description: 'Body `{ids?, filter?}`. Returns `{deletedCount, ids}`. At most 10,000 rows per call.',
        params: DefinitionIdParams,
        body: DeleteManyBody,
        response: { 200: DeleteManyResponse },
      },
    },
    async (request) => rows.deleteMany(wsId(request), request.params.definitionId, request.body),
  );
}
