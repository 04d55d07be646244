/**
 * Storage of the data plugin (plain SQL through `ctx.db`; rows are schemaless jsonb).
 *
 * data_definitions: one row per definition; `data_version` is bumped (row-locked) by every write
 * to the definition's rows or fields, so writes to one definition are serialized and caches
 * (counts, DuckDB copies, SQL results) are keyed by it on every node.
 *
 * data_rows: one row per data row, `data` jsonb (field handle -> value, null values are not
 * stored), `version` = the definition's data_version that wrote it last (incremental refresh of
 * DuckDB copies: rows with version > cached version, deleted ones included).
 *
 * Index strategy:
 * - data_rows_page_idx (definition_id, created_at, id) WHERE deleted_at IS NULL: the default
 *   sort and keyset of the paged query; also serves `sort=-createdAt` (backward scan).
 * - data_rows_data_idx GIN (data jsonb_path_ops) WHERE deleted_at IS NULL: equality and
 *   containment filters (`filter.status=open`, `filter.tags.contains=x`) become `data @> ...`.
 * - data_rows_version_idx (definition_id, version): incremental refresh of cached copies.
 * - data_rows_ws_idx (workspace_id): tenant deletes cascade.
 * Range filters and sorts on arbitrary fields are evaluated over the definition's rows (no
 * per-field expression indexes: fields are user-defined at runtime); totals are cached per
 * (definition, data_version, filter).
 */
import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_init',
    up: `
      CREATE TABLE data_definitions (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        handle text NOT NULL,
        name text NOT NULL,
        description text,
        fields jsonb NOT NULL DEFAULT '{}'::jsonb,
        data_version bigint NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE UNIQUE INDEX data_definitions_handle_idx ON data_definitions (workspace_id, handle) WHERE deleted_at IS NULL;
      CREATE INDEX data_definitions_ws_idx ON data_definitions (workspace_id, created_at);

      CREATE TABLE data_rows (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        definition_id uuid NOT NULL REFERENCES data_definitions(id) ON DELETE CASCADE,
        data jsonb NOT NULL DEFAULT '{}'::jsonb,
        version bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE INDEX data_rows_page_idx ON data_rows (definition_id, created_at, id) WHERE deleted_at IS NULL;
      CREATE INDEX data_rows_data_idx ON data_rows USING gin (data jsonb_path_ops) WHERE deleted_at IS NULL;
      CREATE INDEX data_rows_version_idx ON data_rows (definition_id, version);
      CREATE INDEX data_rows_ws_idx ON data_rows (workspace_id);
    `,
  },
];
