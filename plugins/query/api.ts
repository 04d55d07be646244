/**
 * Public API of the query plugin: the extension point through which adapters contribute
 * embedded analytical SQL engines (DuckDB, ...), and the service through which feature plugins
 * (`sql-query` over data definitions, `file-query` over file sources) get an engine by name.
 *
 * An engine runs exactly one read-only SELECT/WITH statement of untrusted SQL in a sandbox that
 * sees only what the caller registers for that run:
 * - `datasets`: tabular data the host loads from its own store (data definitions). The engine
 *   keeps them loaded per `scope` (a workspace) and reloads one only when its `version` changes,
 *   so a warm query does not read the rows again. Datasets of different scopes never share a
 *   sandbox.
 * - `files`: local files (csv, parquet, json) the host has fetched (for example from S3); each is
 *   visible to the SQL as a table named `name` for this run only.
 * Anything else (other files, network, extensions, ATTACH, COPY, SET, PRAGMA, DDL/DML, a second
 * statement) is refused with a 400 error (the classes below).
 */
import { createExtensionPoint, createServiceRef } from '../../core/registry/index.ts';
import { defineError } from '../../core/errors/index.ts';

/** Column types a dataset can declare (engine-neutral names; DuckDB maps them 1:1). */
export type QueryColumnType = 'VARCHAR' | 'DOUBLE' | 'BIGINT' | 'BOOLEAN' | 'DATE' | 'TIMESTAMP' | 'JSON' | 'VARCHAR[]';

export interface DatasetColumn {
  name: string;
  type: QueryColumnType;
}

/**
 * One table the host makes visible to a run. Values in `load()` rows follow `columns`:
 * VARCHAR/JSON string; DOUBLE number or numeric string; BIGINT bigint, number or integer string;
 * BOOLEAN boolean or 'true'/'false'; DATE 'YYYY-MM-DD' string, Date or epoch-ms number; TIMESTAMP
 * Date, ISO string or epoch-ms number (UTC); VARCHAR[] string[]; null anywhere. A value that does
 * not convert to its column type is stored as NULL.
 */
export interface Dataset {
  /** Stable id of the dataset within its scope (e.g. the data definition id). */
  key: string;
  /** Names the SQL may use for it (e.g. the handle and a snake_case alias), case-insensitive. */
  names: string[];
  columns: DatasetColumn[];
  /** Changes whenever the rows or columns change; a cached copy with the same version is reused. */
  version: string;
  /** Produces the rows in batches; called only when the engine has no copy at this version. */
  load(): AsyncIterable<unknown[][]>;
  /**
   * Optional faster full load, used instead of `load()` when the engine supports it: the rows as
   * CSV (UTF-8, RFC 4180 quoting, a header row, one column per entry of `columns` in order; an
   * unquoted empty field is NULL, a quoted one an empty string). Values as text: VARCHAR/JSON
   * as is, DOUBLE/BIGINT numbers, BOOLEAN true/false, DATE YYYY-MM-DD, TIMESTAMP ISO 8601 with an
   * offset (e.g. `2026-01-31 12:00:00.5+00`), VARCHAR[] a JSON array of strings.
   */
  csv?(): AsyncIterable<Uint8Array | string>;
  /** The column that identifies a row (needed for `changesSince`). */
  keyColumn?: string;
  /**
   * Optional incremental refresh from a cached copy at `fromVersion` (same columns): the rows
   * written since (to replace by key, in batches) and the keys of rows removed since; undefined
   * when the host cannot tell, and the engine then calls `load()`.
   */
  changesSince?(fromVersion: string): Promise<{ upserts: AsyncIterable<unknown[][]>; deletedKeys: string[] } | undefined>;
}

export type FileFormat = 'csv' | 'parquet' | 'json';

export interface FileSource {
  /** Table name the SQL uses for this source. */
  name: string;
  /** Absolute local path of a file the host has prepared (readable by this process). */
  path: string;
  format: FileFormat;
}

export interface QueryRunRequest {
  sql: string;
  /** Isolation and cache scope of `datasets` (a workspace id). */
  scope: string;
  datasets?: Dataset[];
  files?: FileSource[];
  /** Rows returned at most; more sets `truncated`. */
  maxRows: number;
  /** Wall-clock limit; exceeding it throws QueryTimeout. */
  timeoutMs: number;
  /**
   * Values of named parameters (`$name` in the SQL): string, number, boolean or null (arrays and
   * objects are bound as JSON text). Parameters the SQL names but `params` lacks are NULL.
   */
  params?: Record<string, unknown>;
}

export interface QueryRunResult {
  columns: string[];
  /** Engine type name per column (e.g. BIGINT, VARCHAR, DECIMAL(18,2)). */
  columnTypes: string[];
  /** Rows as JSON-safe values: BIGINT/HUGEINT/DECIMAL as numbers when exactly representable
   *  as a JS number, otherwise as strings; dates/timestamps as ISO strings; lists as arrays. */
  rows: unknown[][];
  truncated: boolean;
  /** Whether every dataset used was already loaded at its version (no reload). */
  warm: boolean;
  executionTimeMs: number;
}

export interface SqlAnalysis {
  /** The statement as the engine re-renders it after parsing. */
  normalizedSql: string;
  /** Tables named in FROM/JOIN clauses (lower-case, without CTE names), in first-use order. */
  tables: string[];
  /** Table functions called (lower-case). */
  tableFunctions: string[];
}

export interface QueryEngine {
  /** The engine name (the `<engine>` path segment of the file-source query). */
  readonly name: string;
  /** Parses without executing: exactly one SELECT/WITH, else throws SqlNotAllowed/InvalidSql. */
  analyze(sql: string): Promise<SqlAnalysis>;
  /** Runs the statement in the sandbox described above. */
  run(req: QueryRunRequest): Promise<QueryRunResult>;
  /** Drops every cached dataset of a scope (e.g. on definition deletion). Optional hint. */
  evict?(scope: string, key?: string): void;
}

export interface QueryEngines {
  /** The engine registered under `name`, or undefined. */
  get(name: string): QueryEngine | undefined;
  /** The engine to use when the caller has no preference (the first registered). */
  default(): QueryEngine | undefined;
  names(): string[];
}

export const queryEnginesPoint = createExtensionPoint<QueryEngine>({ id: 'query.engines', plugin: 'query' });
export const queryEnginesRef = createServiceRef<QueryEngines>({ id: 'query.engines', plugin: 'query' });

/** The SQL does not parse. */
export const InvalidSql = defineError('invalid_sql', 400, 'The SQL does not parse.');
/** Not exactly one read-only SELECT/WITH, or uses something the sandbox refuses. */
export const SqlNotAllowed = defineError('sql_not_allowed', 400, 'Only one read-only SELECT or WITH statement is allowed.');
/** A table the run did not register. */
export const UnknownTable = defineError('unknown_table', 400, 'The query names a table that does not exist.');
/** The statement ran longer than the limit and was interrupted. */
export const QueryTimeout = defineError('query_timeout', 400, 'The query took too long and was stopped.');
/** The statement exceeded the engine's memory limit. */
export const QueryResourcesExceeded = defineError('query_resources_exceeded', 400, 'The query needs more memory than allowed.');
/** A runtime error in the statement (division by zero, bad cast, ...). */
export const QueryFailed = defineError('query_failed', 400, 'The query failed.');
