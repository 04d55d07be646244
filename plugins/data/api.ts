/**
 * Public API of the data plugin (the only file other plugins may import).
 *
 * Events published on the core event bus after commit, one per row:
 *   `data.row.created` | `data.row.updated` | `data.row.deleted`
 *   payload: DataRowEvent
 */
import { createServiceRef } from '../../core/registry/index.ts';

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
