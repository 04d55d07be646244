/**
 * Public API of the sql-query plugin: none beyond its HTTP route (POST /api/v1/data/sql-query).
 * The result shape is the spec's "SQL query result".
 */
export interface SqlQueryResult {
  sql: string;
  normalizedSql: string;
  usedTables: string[];
  table: { columns: string[]; rows: unknown[][] };
  records: Record<string, unknown>[];
  ascii: string;
  rowCount: number;
  executionTimeMs: number;
  truncated: boolean;
  cached: boolean;
  warnings: string[];
}
