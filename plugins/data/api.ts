/**
 * Public API of the data plugin (the only file other plugins may import).
 *
 * Events published on the core event bus after commit, one per row:
 *   `data.row.created` | `data.row.updated` | `data.row.deleted`
 *   payload: DataRowEvent
 */
import { createServiceRef } from '../../core/registry/index.ts';
import type { Dataset } from '../query/api.ts';

export interface DataRow {
  id: string;
  definitionHandle: string;
  data: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

export interface DataPage {
  items: DataRow[];
  total: number;
  page: number;
  pageSize: number;
  pageCount: number;
  hasMore: boolean;
}

/** Query parameters, the same as the HTTP query endpoint's query string (documented in OpenAPI). */
export type DataQuery = Record<string, string | number | boolean | undefined>;

export interface DataRowEvent {
  definitionId: string;
  definitionHandle: string;
  row: DataRow;
  /** The row before the change (updated and deleted events). */
  previous: DataRow | null;
}

export const DATA_ROW_EVENTS = ['data.row.created', 'data.row.updated', 'data.row.deleted'] as const;

export interface DataService {
  /** `definition` is an id, a handle or a name-id slug, as in the HTTP paths. Throws NotFound. */
  query(workspaceId: string, definition: string, query: DataQuery): Promise<DataPage>;
  get(workspaceId: string, definition: string, rowId: string): Promise<DataRow | null>;
  /** All or nothing; validation errors throw the same errors the HTTP endpoint answers. */
  upsertMany(workspaceId: string, definition: string, rows: { id?: string; data: Record<string, unknown> }[]): Promise<DataRow[]>;
}

export const dataServiceRef = createServiceRef<DataService>({ id: 'data.rows', plugin: 'data' });

// ---------------------------------------------------------------------------------------------
// Tabular access for query engines (used by the sql-query plugin)

/** A field definition as stored (see the data-definition resource). */
export interface DataFieldDefinition {
  name: string;
  description?: string;
  type: 'text' | 'number' | 'boolean' | 'date' | 'timestamp' | 'json' | 'files' | 'select' | 'multi-select' | 'relationship';
  variant?: 'long-text' | 'url';
  options?: { value: string; label: string; color: string }[];
  dataDefinitionId?: string;
  materialized?: { sql: string };
  unique?: boolean;
  required?: boolean;
}

export interface DataTable {
  id: string;
  handle: string;
  /** The snake_case alias of the handle (may equal it). */
  alias: string;
  fields: Record<string, DataFieldDefinition>;
  /** Bumped by every write to the rows or fields: caches are keyed by it. */
  version: string;
}

/**
 * Row projection for query engines: each row is an array `[id, createdAt, updatedAt, ...fields]`
 * (fields in the order asked): createdAt and updatedAt as epoch milliseconds; text, select,
 * number, boolean, date and timestamp fields as the text of the stored value (the engine converts
 * it to the column type; a value that does not convert, e.g. after a type change, is NULL);
 * json as JSON text; files/multi-select as string arrays; relationship as the id (several ids as
 * a JSON array text).
 */
export interface DataTablesService {
  /** The live definitions of a workspace with their data versions. */
  list(workspaceId: string): Promise<DataTable[]>;
  /** Every live row, in batches. */
  scan(workspaceId: string, definitionId: string, fields: string[]): AsyncIterable<unknown[][]>;
  /** Rows written since `version` (live ones projected, in batches) and ids deleted since. */
  changes(workspaceId: string, definitionId: string, fields: string[], sinceVersion: string): Promise<{ upserts: AsyncIterable<unknown[][]>; deletedIds: string[] }>;
  /**
   * The table as a query-engine dataset: named by handle and alias; columns `id` VARCHAR,
   * `createdAt`/`updatedAt` TIMESTAMP, then one per field (text, select, relationship VARCHAR;
   * number DOUBLE; boolean BOOLEAN; date DATE; timestamp TIMESTAMP; json JSON; files and
   * multi-select VARCHAR[]), loaded by `scan` and refreshed by `changes`.
   */
  dataset(workspaceId: string, table: DataTable): Dataset;
}

export const dataTablesRef = createServiceRef<DataTablesService>({ id: 'data.tables', plugin: 'data' });
