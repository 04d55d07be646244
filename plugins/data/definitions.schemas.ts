import Type from 'typebox';

export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
export const Timestamp = Type.String({ format: 'date-time' });
export const NonEmptyString = Type.String({ minLength: 1 });

export const FIELD_TYPES = ['text', 'number', 'boolean', 'date', 'timestamp', 'json', 'files', 'select', 'multi-select', 'relationship'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** A field handle: a letter, then letters, digits and underscores (at most 64). */
export const FIELD_HANDLE = '^[A-Za-z][A-Za-z0-9_]{0,63}$';
/** A definition handle: a lower-case letter, then lower-case letters, digits, `_` and `-` (at most 63). */
export const DEFINITION_HANDLE = '^[a-z][a-z0-9_-]{0,62}$';

export const FieldOption = Type.Object(
  {
    value: Type.String({ minLength: 1, maxLength: 200 }),
    label: Type.Optional(Type.String({ maxLength: 200, description: 'Defaults to the value.' })),
    color: Type.Optional(Type.String({ maxLength: 50, description: 'Defaults to "" (no colour).' })),
  },
  { additionalProperties: false },
);

export const Materialized = Type.Object(
  {
    sql: Type.String({
      minLength: 1,
      maxLength: 10_000,
      description:
        'One read-only SELECT over the workspace tables (the same tables and names as POST /data/sql-query). ' +
        'The row being written is available as named parameters: `$id` and `$<fieldHandle>` for each non-materialized field of the row (NULL when unset). ' +
        'The first column of the first result row is stored as the field value (NULL when there is no row), converted to the field type. ' +
        'Refresh rule: computed on every create and update of the row; and after any write to a table the SQL reads (including this definition), ' +
        'every live row of this definition is recomputed in the background.',
    }),
  },
  { additionalProperties: false, description: 'SQL that computes and stores the field value; clients cannot write materialized fields.' },
);

export const FieldDefinitionInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    type: Type.Union(FIELD_TYPES.map((t) => Type.Literal(t))),
    variant: Type.Optional(Type.Union([Type.Literal('long-text'), Type.Literal('url')], { description: 'Only for `text` fields.' })),
    options: Type.Optional(Type.Array(FieldOption, { maxItems: 500, description: 'Required (at least one, unique values) for `select` and `multi-select`; not allowed otherwise.' })),
    dataDefinitionId: Type.Optional(Type.String({ minLength: 1, description: 'Required for `relationship`: the target definition (id, handle or name-id slug) in the same workspace.' })),
    materialized: Type.Optional(Materialized),
    unique: Type.Optional(Type.Boolean({ description: 'Values must be unique among live rows; upsert-many can match rows on such a field (`matchBy`).' })),
    required: Type.Optional(Type.Boolean({ description: 'Created rows must carry a non-null value.' })),
  },
  { additionalProperties: false },
);

export const FieldDefinition = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String()),
  type: Type.String(),
  variant: Type.Optional(Type.String()),
  options: Type.Optional(Type.Array(Type.Object({ value: Type.String(), label: Type.String(), color: Type.String() }))),
  dataDefinitionId: Type.Optional(Type.String()),
  materialized: Type.Optional(Type.Object({ sql: Type.String() })),
  unique: Type.Optional(Type.Boolean()),
  required: Type.Optional(Type.Boolean()),
});

const FieldsInput = Type.Record(Type.String({ pattern: FIELD_HANDLE }), FieldDefinitionInput, {
  description:
    'Map of field handle to field definition. Handles: a letter, then letters, digits and `_` (at most 64); `id`, `createdAt`, `updatedAt` and `deletedAt` are reserved. At most 200 fields.',
  maxProperties: 200,
});

export const DefinitionView = Type.Object({
  id: Type.String(),
  handle: Type.String(),
  url: Type.String({ description: 'Relative UI path: /w/<workspaceHandle>/data/<name-slug>-<id>' }),
  name: Type.String(),
  description: Nullable(Type.String()),
  fields: Type.Record(Type.String(), FieldDefinition),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  deletedAt: Nullable(Timestamp),
});

export const CreateDefinitionBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    handle: Type.Optional(Type.String({ pattern: DEFINITION_HANDLE, description: 'Defaults to the name slugged; unique among the live definitions of the workspace (409 `conflict`).' })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 5000 }))),
    fields: Type.Optional(FieldsInput),
  },
  { additionalProperties: false },
);

export const PatchDefinitionBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    handle: Type.Optional(Type.String({ pattern: DEFINITION_HANDLE })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 5000 }))),
    fields: Type.Optional(
      Type.Record(Type.String({ pattern: FIELD_HANDLE }), FieldDefinitionInput, {
        maxProperties: 200,
        description:
          'Replaces the whole field map. Values of removed fields stay stored but are no longer returned by validation or projected into SQL; values whose field changed type are not converted (SQL projects them as NULL when they do not cast).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DefinitionIdParams = Type.Object({
  definitionId: Type.String({
    minLength: 1,
    maxLength: 300,
    description:
      'The definition id; or a name-id slug `<anything>-<id>` (the trailing id decides); or the handle; or the legacy handle URL form, i.e. the `url` or any path ending in `/<handle>` or `/<slug>` (URL-encoded).',
  }),
});
