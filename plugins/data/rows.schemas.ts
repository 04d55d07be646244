import Type from 'typebox';
import { Nullable, Timestamp } from './definitions.schemas.ts';

export const DataRowView = Type.Object({
  id: Type.String(),
  definitionHandle: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  deletedAt: Nullable(Timestamp),
});

export const FILTER_DOC = [
  'Filters: `filter.<field>=<value>` (equality) or `filter.<field>.<op>=<value>` with op one of eq, ne, gt, gte, lt, lte, contains, in (comma-separated values), isNull (true/false).',
  '`<field>` is a field handle or `id`, `createdAt`, `updatedAt`. Values are converted to the field type; several filters are ANDed.',
  'For multi-select, files and relationship arrays `eq`/`contains` mean "has this value" and `in` "has any of them"; `contains` on text/select is a case-insensitive substring.',
  'Sort: `sort=<key>[,<key>...]` (a field handle, createdAt, updatedAt or id; a leading `-` for descending; rows without a value last in both directions). Default `createdAt`; ties by id.',
  'Text search: `q=<text>`, a case-insensitive substring of any text, select or multi-select field.',
].join('\n');

const queryProps = {
  sort: Type.Optional(Type.String({ maxLength: 500, description: 'e.g. `-amount,createdAt`' })),
  q: Type.Optional(Type.String({ maxLength: 500, description: 'Text search' })),
};
const filterPattern = { '^filter\\.[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z]+)?$': Type.String({ maxLength: 10_000 }) };

export const QueryQuerystring = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, description: 'Page number, >= 1; default 1.' })),
    pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Rows per page, 1..100; default 25 (plugin config `defaultPageSize`).' })),
    ...queryProps,
  },
  { additionalProperties: false, patternProperties: filterPattern },
);

export const SelectAllQuerystring = Type.Object(queryProps, { additionalProperties: false, patternProperties: filterPattern });

export const DataPageView = Type.Object({
  items: Type.Array(DataRowView),
  total: Type.Integer({ minimum: 0 }),
  page: Type.Integer({ minimum: 1 }),
  pageSize: Type.Integer({ minimum: 1, maximum: 100 }),
  pageCount: Type.Integer({ minimum: 0 }),
  hasMore: Type.Boolean(),
});

export const RowIdParams = Type.Object({
  definitionId: Type.String({ minLength: 1, maxLength: 300, description: 'Definition id, name-id slug, handle or legacy handle URL (see GET /data-definitions/{id}).' }),
  rowId: Type.String({ minLength: 1, maxLength: 100, description: 'The row id' }),
});

export const UpsertManyBody = Type.Object(
  {
    rows: Type.Array(
      Type.Object(
        {
          id: Type.Optional(Type.String({ description: 'A row id (UUID): updates that row when it exists in this definition, else creates a row with this id.' })),
          data: Type.Record(Type.String(), Type.Unknown(), { description: 'Field handle -> value; null clears a field.' }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, description: 'At most 1000 rows (configurable: `maxBatchRows`), each at most 64 KiB of JSON (`maxRowBytes`).' },
    ),
    matchBy: Type.Optional(
      Type.String({ description: 'Match rows without `id` to existing rows by this unique field (a field declared `unique: true`); default: rows without `id` are created.' }),
    ),
  },
  { additionalProperties: false },
);

export const UpsertManyResponse = Type.Object({
  items: Type.Array(DataRowView, { description: 'The written rows, in request order.' }),
  created: Type.Integer(),
  updated: Type.Integer(),
});

const Selection = {
  ids: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 10_000, description: 'Row ids; unknown or deleted ids are skipped.' })),
  filter: Type.Optional(
    Type.Record(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z]+)?$' }), Type.Unknown(), {
      description: 'The query filters as an object: `{"status": "open", "amount.gte": 10, "tags.in": ["a","b"]}`. With `ids` too, both must match.',
    }),
  ),
};

export const PatchManyBody = Type.Object(
  { ...Selection, data: Type.Record(Type.String(), Type.Unknown(), { description: 'Fields to set on every chosen row (null clears a field).' }) },
  { additionalProperties: false },
);
export const PatchManyResponse = Type.Object({ updatedCount: Type.Integer(), ids: Type.Array(Type.String()) });

export const DeleteManyBody = Type.Object(Selection, { additionalProperties: false });
export const DeleteManyResponse = Type.Object({ deletedCount: Type.Integer(), ids: Type.Array(Type.String()) });

export const SelectAllResponse = Type.Object({
  ids: Type.Array(Type.String()),
  total: Type.Integer({ description: 'Number of matching rows.' }),
  truncated: Type.Boolean({ description: 'True when more rows match than ids returned (at most 100,000 ids; `maxSelectIds`).' }),
});
