import Type from 'typebox';

const Format = Type.Union([Type.Literal('csv'), Type.Literal('parquet'), Type.Literal('json')], { description: 'csv, parquet or json (JSON array or newline-delimited objects)' });

export const SourceSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('s3'), Type.Literal('local'), Type.Literal('relational')], {
      description:
        "`s3`: an object of the workspace's own storage, `{name, key, format}` (key relative to the workspace prefix `workspaces/<workspaceId>/`, e.g. `files/<fileId>`, or a full key inside it; keys outside are refused). `local`: a workspace file, `{name, fileId | path, format}` (path = the file's `path`). `relational`: reserved; answers 400 `not_supported`.",
    }),
    name: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$', description: 'The table name the SQL uses for this source (case-insensitive, unique)' }),
    format: Type.Optional(Format),
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    fileId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    path: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    connection: Type.Optional(Type.String({ description: 'relational kind (reserved)' })),
    table: Type.Optional(Type.String({ description: 'relational kind (reserved)' })),
  },
  { additionalProperties: false },
);

export const QueryBody = Type.Object(
  {
    sql: Type.String({ minLength: 1, maxLength: 100_000, description: 'Exactly one read-only SELECT or WITH statement over the sources' }),
    sources: Type.Array(SourceSchema, { maxItems: 20 }),
  },
  { additionalProperties: false },
);

export const QueryResult = Type.Object({
  sql: Type.String(),
  sourceNames: Type.Array(Type.String()),
  table: Type.Object({ columns: Type.Array(Type.String()), rows: Type.Array(Type.Array(Type.Unknown())) }),
  records: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  rowCount: Type.Number(),
  executionTimeMs: Type.Number(),
});
