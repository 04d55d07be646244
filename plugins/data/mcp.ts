/**
 * The data plugin's MCP tools: what an AI agent needs to read and write typed workspace data.
 */
import type { DataService } from './api.ts';
import type { McpTool } from '../mcp/api.ts';
import { toView, type DefinitionsService } from './definitions.service.ts';

export function dataTools(defs: DefinitionsService, data: DataService): McpTool[] {
  return [
    {
      name: 'data_list_definitions',
      title: 'List data definitions',
      description: 'The typed tables of the workspace: id, handle, name, description and fields (handle -> {name, type, ...}).',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      permission: 'data.read',
      tags: ['data'],
      run: async (c) => ({ definitions: (await defs.list(c.workspaceId)).map((d) => {
        const v = toView(d);
        return { id: v.id, handle: v.handle, name: v.name, description: v.description, fields: v.fields };
      }) }),
    },
    {
      name: 'data_query_rows',
      title: 'Query rows',
      description:
        'Rows of one definition (by id or handle), paged. `filter` maps `<field>` or `<field>.<op>` (ops: eq, ne, gt, gte, lt, lte, contains, in, isNull) to a value, e.g. {"status": "open", "amount.gt": 10}; `sort` is like "-createdAt,name"; `q` searches text.',
      inputSchema: {
        type: 'object',
        properties: {
          definition: { type: 'string', minLength: 1 },
          filter: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
          sort: { type: 'string' },
          q: { type: 'string' },
          page: { type: 'integer', minimum: 1 },
          pageSize: { type: 'integer', minimum: 1, maximum: 100 },
        },
        required: ['definition'],
        additionalProperties: false,
      },
      permission: 'data.read',
      tags: ['data'],
      run: async (c, args) => {
        const query: Record<string, string | number | boolean | undefined> = { sort: args.sort as string | undefined, q: args.q as string | undefined, page: args.page as number | undefined, pageSize: args.pageSize as number | undefined };
        for (const [k, v] of Object.entries((args.filter ?? {}) as Record<string, string | number | boolean>)) query[`filter.${k}`] = v;
        return data.query(c.workspaceId, String(args.definition), query);
      },
    },
    {
      name: 'data_upsert_rows',
      title: 'Create or update rows',
      description: 'Creates rows, or updates those given with an `id`, in one definition; all or nothing (at most 100 rows per call).',
      inputSchema: {
        type: 'object',
        properties: {
          definition: { type: 'string', minLength: 1 },
          rows: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'object', properties: { id: { type: 'string' }, data: { type: 'object' } }, required: ['data'], additionalProperties: false } },
        },
        required: ['definition', 'rows'],
        additionalProperties: false,
      },
      permission: 'data.write',
      tags: ['data'],
      run: async (c, args) => ({ rows: await data.upsertMany(c.workspaceId, String(args.definition), args.rows as { id?: string; data: Record<string, unknown> }[]) }),
    },
  ];
}
