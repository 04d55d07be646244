/**
 * Tabular projection of data rows for query engines (DataTablesService in api.ts). Values are
 * typed in PostgreSQL (no jsonb parsing in Node) and streamed through a cursor in batches.
 */
import { to as copyTo } from 'pg-copy-streams';
import type { Database } from '../../core/db/index.ts';
import type { DataTable, DataTablesService } from './api.ts';
import type { Dataset, QueryColumnType } from '../query/api.ts';
import { isUuid, snakeAlias, type DefinitionsService, type FieldDef } from './definitions.service.ts';

const SAFE = /^[A-Za-z][A-Za-z0-9_]*$/;
const BATCH = 20_000;

const COLUMN_TYPES: Record<FieldDef['type'], QueryColumnType> = {
  text: 'VARCHAR',
  select: 'VARCHAR',
  relationship: 'VARCHAR',
  number: 'DOUBLE',
  boolean: 'BOOLEAN',
  date: 'DATE',
  timestamp: 'TIMESTAMP',
  json: 'JSON',
  files: 'VARCHAR[]',
  'multi-select': 'VARCHAR[]',
};

/**
 * The column expression of a field. Scalars are the plain text of the stored value (cheapest for
 * PostgreSQL; the engine converts it to the column type, NULL when it does not convert).
 */
function projection(handle: string, f: FieldDef | undefined): string {
  if (!f || !SAFE.test(handle)) return 'NULL';
  const v = `r.data->'${handle}'`;
  const is = (t: string) => `jsonb_typeof(${v}) = '${t}'`;
  switch (f.type) {
    case 'json':
      return `(${v})::text`;
    case 'files':
    case 'multi-select':
      return `CASE WHEN ${is('array')} THEN ARRAY(SELECT jsonb_array_elements_text(${v})) END`;
    case 'relationship':
      return `CASE WHEN ${is('string')} THEN r.data->>'${handle}' WHEN ${is('array')} AND jsonb_array_length(${v}) = 1 THEN ${v}->>0 WHEN ${is('array')} THEN (${v})::text END`;
    default:
      return `r.data->>'${handle}'`;
  }
}

/** The same projection as text, for CSV (see Dataset.csv in the query api). */
function csvProjection(handle: string, f: FieldDef | undefined): string {
  if (!f || !SAFE.test(handle)) return 'NULL';
  const v = `r.data->'${handle}'`;
  const is = (t: string) => `jsonb_typeof(${v}) = '${t}'`;
  switch (f.type) {
    case 'number':
      return `CASE WHEN ${is('number')} THEN (${v})::text END`;
    case 'boolean':
      return `CASE WHEN ${is('boolean')} THEN (${v})::text END`;
    case 'json':
      return `(${v})::text`;
    case 'files':
    case 'multi-select':
      return `CASE WHEN ${is('array')} THEN (${v})::text END`;
    default:
      return projection(handle, f);
  }
}

export class TablesService implements DataTablesService {
  private readonly db: Database;
  private readonly defs: DefinitionsService;
  constructor(db: Database, defs: DefinitionsService) {
    this.db = db;
    this.defs = defs;
  }

  async list(workspaceId: string): Promise<DataTable[]> {
    return (await this.defs.list(workspaceId)).map((d) => ({ id: d.id, handle: d.handle, alias: snakeAlias(d.handle), fields: d.fields, version: d.dataVersion }));
  }

  private async *stream(workspaceId: string, definitionId: string, fields: string[], extra: string, params: unknown[]): AsyncIterable<unknown[][]> {
    const [def] = await this.db.query<{ fields: Record<string, FieldDef> }>(`SELECT fields FROM data_definitions WHERE workspace_id = $1 AND id = $2`, [workspaceId, definitionId]);
    if (!def) return;
    const cols = ['r.id::text', 'extract(epoch FROM r.created_at)::float8 * 1000', 'extract(epoch FROM r.updated_at)::float8 * 1000', ...fields.map((h) => projection(h, def.fields[h]))];
    const client = await this.db.pool.connect();
    let open = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      open = true;
      await client.query(
        `DECLARE data_scan NO SCROLL CURSOR FOR SELECT ${cols.join(', ')} FROM data_rows r
         WHERE r.workspace_id = $1 AND r.definition_id = $2 AND r.deleted_at IS NULL ${extra}`,
        [workspaceId, definitionId, ...params],
      );
      // The next batch is fetched while the consumer works on the current one.
      const fetch = () => {
        const p = client.query({ text: `FETCH ${BATCH} FROM data_scan`, rowMode: 'array' });
        p.catch(() => undefined); // awaited below; avoids an unhandled rejection if the consumer stops early
        return p;
      };
      let next = fetch();
      for (;;) {
        const res = await next;
        if (res.rows.length === 0) break;
        const more = res.rows.length === BATCH;
        if (more) next = fetch();
        yield res.rows as unknown[][];
        if (!more) break;
      }
      await client.query('COMMIT');
      open = false;
    } finally {
      // Also reached when the consumer stops early (generator return) or on error.
      if (open) await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  scan(workspaceId: string, definitionId: string, fields: string[]): AsyncIterable<unknown[][]> {
    return this.stream(workspaceId, definitionId, fields, '', []);
  }

  /** Every live row as CSV (COPY TO STDOUT), columns c0..cN: id, createdAt, updatedAt, fields. */
  async *csv(workspaceId: string, definitionId: string, fields: string[]): AsyncIterable<Uint8Array> {
    if (!isUuid(workspaceId) || !isUuid(definitionId)) throw new Error('bad ids');
    const [def] = await this.db.query<{ fields: Record<string, FieldDef> }>(`SELECT fields FROM data_definitions WHERE workspace_id = $1 AND id = $2`, [workspaceId, definitionId]);
    if (!def) return;
    const cols = ['r.id::text', 'r.created_at', 'r.updated_at', ...fields.map((h) => csvProjection(h, def.fields[h]))].map((c, i) => `${c} AS c${i}`);
    const client = await this.db.pool.connect();
    let clean = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await client.query(`SET LOCAL TimeZone = 'UTC'`);
      // COPY takes no bind parameters: both ids are checked UUIDs.
      const stream = client.query(
        copyTo(`COPY (SELECT ${cols.join(', ')} FROM data_rows r WHERE r.workspace_id = '${workspaceId}' AND r.definition_id = '${definitionId}' AND r.deleted_at IS NULL) TO STDOUT WITH (FORMAT csv, HEADER true)`),
      );
      for await (const chunk of stream) yield chunk as Uint8Array;
      await client.query('COMMIT');
      clean = true;
    } finally {
      // A consumer that stops early leaves the COPY unfinished: drop that connection.
      if (clean) client.release();
      else client.release(true);
    }
  }

  dataset(workspaceId: string, table: DataTable): Dataset {
    const fields = Object.keys(table.fields).filter((h) => SAFE.test(h));
    return {
      key: table.id,
      names: table.alias && table.alias !== table.handle ? [table.handle, table.alias] : [table.handle],
      columns: [
        { name: 'id', type: 'VARCHAR' },
        { name: 'createdAt', type: 'TIMESTAMP' },
        { name: 'updatedAt', type: 'TIMESTAMP' },
        ...fields.map((h) => ({ name: h, type: COLUMN_TYPES[table.fields[h].type] ?? 'VARCHAR' })),
      ],
      version: table.version,
      keyColumn: 'id',
      load: () => this.scan(workspaceId, table.id, fields),
      csv: () => this.csv(workspaceId, table.id, fields),
      changesSince: async (fromVersion) => {
        const ch = await this.changes(workspaceId, table.id, fields, fromVersion);
        return { upserts: ch.upserts, deletedKeys: ch.deletedIds };
      },
    };
  }

  async changes(workspaceId: string, definitionId: string, fields: string[], sinceVersion: string) {
    const deleted = await this.db.query<{ id: string }>(
      `SELECT id::text AS id FROM data_rows WHERE workspace_id = $1 AND definition_id = $2 AND version > $3::bigint AND deleted_at IS NOT NULL`,
      [workspaceId, definitionId, sinceVersion],
    );
    return { upserts: this.stream(workspaceId, definitionId, fields, 'AND r.version > $3::bigint', [sinceVersion]), deletedIds: deleted.map((r) => r.id) };
  }
}
