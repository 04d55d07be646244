import Type from 'typebox';

export const SqlQueryBody = Type.Object({ sql: Type.String({ minLength: 1, maxLength: 20_000 }) }, { additionalProperties: false });

export const SqlQueryResultSchema = Type.Object({
  sql: Type.String({ description: 'The SQL as sent' }),
  normalizedSql: Type.String({ description: 'The statement as DuckDB re-renders it after parsing' }),
  usedTables: Type.Array(Type.String(), { description: 'Handles of the data definitions the query reads' }),
  table: Type.Object({ columns: Type.Array(Type.String()), rows: Type.Array(Type.Array(Type.Unknown())) }),
  records: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'The rows as objects keyed by column name' }),
  ascii: Type.String({ description: 'A readable text table of (at most the first 200) rows' }),
  rowCount: Type.Integer({ description: 'Rows returned (after the cap)' }),
  executionTimeMs: Type.Number(),
  truncated: Type.Boolean({ description: 'More rows matched than the cap (default 1000, plugin config `maxRows`)' }),
  cached: Type.Boolean({ description: 'Served from this node\'s result cache; any write to a used table invalidates it' }),
  warnings: Type.Array(Type.String()),
});

export const SQL_QUERY_DESCRIPTION = `Runs exactly one read-only SELECT (or WITH ... SELECT) over the workspace's data definitions.

Tables: each live definition is a table named by its handle (quote handles with dashes: "order-items") and by its snake_case alias (order_items). Columns: \`id\` VARCHAR, \`createdAt\` and \`updatedAt\` TIMESTAMP (UTC), then one per field: text, select, relationship -> VARCHAR (a relationship holding several ids is a JSON array text); number -> DOUBLE; boolean -> BOOLEAN; date -> DATE; timestamp -> TIMESTAMP (UTC); json -> JSON; files and multi-select -> VARCHAR[]. Only live (not deleted) rows are visible. Stored values are converted to the column type; one that does not convert (e.g. after a field type change) reads as NULL.

Allowed: SELECT/WITH with joins, subqueries, aggregates, window functions and the table functions range, generate_series and unnest. Refused with 400: anything else (DDL, DML, COPY, ATTACH, INSTALL/LOAD, SET, PRAGMA, DESCRIBE/SHOW, other table functions such as read_csv or glob, qualified names) as \`sql_not_allowed\`; a second statement as \`sql_not_allowed\`; syntax errors as \`invalid_sql\`; unknown tables as \`unknown_table\`; runtime errors as \`query_failed\`; queries over the time limit (default 10 s) as \`query_timeout\`; over the memory limit as \`query_resources_exceeded\`. The query runs in a DuckDB instance holding only this workspace's tables, with no file, network or extension access.

Values: BIGINT/HUGEINT columns are JSON numbers, unless a value of the column is beyond +/-2^53, then the whole column is strings (with a warning); DECIMAL columns with at most 15 digits are numbers, wider ones strings; DATE as YYYY-MM-DD; TIMESTAMP as ISO 8601 UTC; lists as arrays; structs as objects; BLOB as base64.

Rows are capped (default 1000): \`truncated\` is then true and a warning says so. \`cached\` is true when the same SQL was answered on this node since the last write to any table it uses.`;
