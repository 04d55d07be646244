/**
 * The row query language (shared by the query string of GET .../query and .../select-all and by
 * the `filter` object of patch-many / delete-many bodies).
 *
 * Filters: `filter.<field>=<value>` (equality) or `filter.<field>.<op>=<value>`; in a body,
 * `filter: {"<field>": value, "<field>.<op>": value}`. `<field>` is a field handle or `id`,
 * `createdAt`, `updatedAt`. Several filters are ANDed.
 *
 * | op | meaning |
 * |---|---|
 * | eq (default) | equal; for multi-select, files and relationship arrays: has this value |
 * | ne | not equal (rows without a value match) |
 * | gt, gte, lt, lte | comparison: numbers numerically, dates/timestamps chronologically, text by code point |
 * | contains | text and select: case-insensitive substring; multi-select/files/relationship: has the value; json: JSON containment |
 * | in | one of a comma-separated list (body: an array); multi-select: has any of them |
 * | isNull | `true`: no value; `false`: has a value |
 *
 * Query-string values are converted to the field type (`10` for numbers, `true`/`false`,
 * `2026-01-31`, ISO timestamps); a value that does not convert is a 400 decode error.
 *
 * Sort: `sort=<key>[,<key>...]`, each a field handle, `createdAt`, `updatedAt` or `id`, with a
 * leading `-` for descending. Rows without a value sort last in both directions. Ties are
 * broken by `id`. Default `createdAt` (oldest first).
 *
 * Text search: `q=<text>`, a case-insensitive substring match over the text, select and
 * multi-select fields of the row.
 */
import { DecodeError, type DecodeIssue } from '../../core/errors/index.ts';
import type { FieldDef } from './definitions.service.ts';
import { isUuid } from './definitions.service.ts';

export const OPS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'contains', 'in', 'isNull'] as const;
type Op = (typeof OPS)[number];

const SYSTEM: Record<string, string> = { id: 'r.id', createdAt: 'r.created_at', updatedAt: 'r.updated_at' };
const SAFE = /^[A-Za-z][A-Za-z0-9_]*$/;

export class Params {
  readonly values: unknown[];
  constructor(initial: unknown[] = []) {
    this.values = [...initial];
  }
  add(v: unknown, cast = ''): string {
    this.values.push(v);
    return `$${this.values.length}${cast}`;
  }
}

export interface FilterSpec {
  key: string;
  field: string;
  op: Op;
  value: unknown;
}

/** Splits `field` / `field.op` keys; `source` names where they came from in error paths. */
export function parseFilters(entries: [string, unknown][], source: (key: string) => (string | number)[]): FilterSpec[] {
  const issues: DecodeIssue[] = [];
  const out: FilterSpec[] = [];
  for (const [key, value] of entries) {
    const dot = key.indexOf('.');
    const field = dot < 0 ? key : key.slice(0, dot);
    const op = (dot < 0 ? 'eq' : key.slice(dot + 1)) as Op;
    if (!OPS.includes(op)) {
      issues.push({ _tag: 'Refinement', path: source(key), message: `unknown operator '${op}' (one of ${OPS.join(', ')})` });
      continue;
    }
    out.push({ key, field, op, value });
  }
  if (issues.length) throw new DecodeError(issues);
  return out;
}

const jsonField = (f: string): string => `r.data->'${f}'`;
const textField = (f: string): string => `(r.data->>'${f}')`;

function likeEscape(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** Converts a filter value (string from a query string, or JSON from a body) to the field type. */
function convert(field: FieldDef | 'timestamp' | 'id', raw: unknown, fromString: boolean): { ok: true; v: unknown } | { ok: false; msg: string } {
  const type = typeof field === 'string' ? field : field.type;
  if (type === 'id') return typeof raw === 'string' && isUuid(raw) ? { ok: true, v: raw.toLowerCase() } : { ok: false, msg: 'must be a row id' };
  switch (type) {
    case 'number': {
      const n = typeof raw === 'number' ? raw : fromString && typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      return Number.isFinite(n) ? { ok: true, v: n } : { ok: false, msg: 'must be a number' };
    }
    case 'boolean':
      if (typeof raw === 'boolean') return { ok: true, v: raw };
      if (raw === 'true' || raw === 'false') return { ok: true, v: raw === 'true' };
      return { ok: false, msg: 'must be true or false' };
    case 'date':
      return typeof raw === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(raw) ? { ok: true, v: raw } : { ok: false, msg: 'must be a date YYYY-MM-DD' };
    case 'timestamp': {
      if (typeof raw !== 'string') return { ok: false, msg: 'must be an ISO timestamp' };
      const d = new Date(raw);
      return Number.isNaN(d.getTime()) ? { ok: false, msg: 'must be an ISO timestamp' } : { ok: true, v: d.toISOString() };
    }
    case 'json':
      if (fromString && typeof raw === 'string') {
        try {
          return { ok: true, v: JSON.parse(raw) };
        } catch {
          return { ok: true, v: raw };
        }
      }
      return { ok: true, v: raw };
    case 'relationship':
      return typeof raw === 'string' && isUuid(raw) ? { ok: true, v: raw.toLowerCase() } : { ok: false, msg: 'must be a row id' };
    default:
      return typeof raw === 'string' ? { ok: true, v: raw } : typeof raw === 'number' || typeof raw === 'boolean' ? { ok: true, v: String(raw) } : { ok: false, msg: 'must be a string' };
  }
}

/** SQL conditions (over alias `r`) for the filters; throws a decode error naming bad ones. */
export function filterSql(
  fields: Record<string, FieldDef>,
  filters: FilterSpec[],
  params: Params,
  fromString: boolean,
  source: (key: string) => (string | number)[],
): string[] {
  const issues: DecodeIssue[] = [];
  const conds: string[] = [];
  for (const f of filters) {
    const path = source(f.key);
    const fail = (message: string) => issues.push({ _tag: 'Refinement', path, message });
    const sys = SYSTEM[f.field];
    const def = fields[f.field];
    if (!sys && !def) {
      fail(`'${f.field}' is not a field of this data definition`);
      continue;
    }
    if (!sys && !SAFE.test(f.field)) {
      fail('invalid field handle');
      continue;
    }
    const kind: FieldDef | 'timestamp' | 'id' = sys ? (f.field === 'id' ? 'id' : 'timestamp') : def;
    const type = typeof kind === 'string' ? kind : kind.type;
    if (f.op === 'isNull') {
      const b = typeof f.value === 'boolean' ? f.value : f.value === 'true' ? true : f.value === 'false' ? false : null;
      if (b === null) {
        fail('isNull takes true or false');
        continue;
      }
      if (sys) conds.push(b ? 'false' : 'true');
      else conds.push(b ? `NOT (r.data ? '${f.field}')` : `(r.data ? '${f.field}')`);
      continue;
    }
    if (f.op === 'in') {
      const list = Array.isArray(f.value) ? f.value : typeof f.value === 'string' ? f.value.split(',').map((s) => s.trim()).filter(Boolean) : null;
      if (!list || list.length === 0 || list.length > 1000) {
        fail('in takes a non-empty list (comma-separated in a query string, an array in a body), at most 1000 values');
        continue;
      }
      const conv = list.map((v) => convert(kind, v, fromString || typeof v === 'string'));
      const badOne = conv.find((c) => !c.ok);
      if (badOne && !badOne.ok) {
        fail(`each value ${badOne.msg}`);
        continue;
      }
      const vals = conv.map((c) => (c as { v: unknown }).v);
      if (sys) {
        conds.push(f.field === 'id' ? `r.id = ANY(${params.add(vals, '::uuid[]')})` : `${sys} = ANY(${params.add(vals, '::timestamptz[]')})`);
      } else if (type === 'multi-select' || type === 'files') {
        conds.push(`(${jsonField(f.field)}) ?| ${params.add(vals.map(String), '::text[]')}`);
      } else if (type === 'relationship') {
        conds.push(`(${jsonField(f.field)} IN (SELECT jsonb_array_elements(${params.add(JSON.stringify(vals), '::jsonb')})) OR (${jsonField(f.field)}) ?| ${params.add(vals, '::text[]')})`);
      } else {
        conds.push(`${jsonField(f.field)} IN (SELECT jsonb_array_elements(${params.add(JSON.stringify(vals), '::jsonb')}))`);
      }
      continue;
    }
    if (f.op === 'contains') {
      if (sys) {
        fail('contains is not available on id and timestamps');
        continue;
      }
      if (type === 'text' || type === 'select' || type === 'date' || type === 'timestamp') {
        if (typeof f.value !== 'string' || f.value === '') {
          fail('contains takes a non-empty string');
          continue;
        }
        conds.push(`${textField(f.field)} ILIKE ${params.add(`%${likeEscape(f.value)}%`)}`);
      } else if (type === 'multi-select' || type === 'files' || type === 'relationship') {
        if (typeof f.value !== 'string') {
          fail('contains takes one value');
          continue;
        }
        conds.push(`r.data @> ${params.add(JSON.stringify({ [f.field]: [f.value] }), '::jsonb')}`);
      } else if (type === 'json') {
        const c = convert(kind, f.value, fromString);
        conds.push(`(${jsonField(f.field)}) @> ${params.add(JSON.stringify((c as { v: unknown }).v), '::jsonb')}`);
      } else {
        fail(`contains is not available on ${type} fields`);
      }
      continue;
    }
    const c = convert(kind, f.value, fromString);
    if (!c.ok) {
      fail(c.msg);
      continue;
    }
    const op = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' }[f.op];
    if (sys) {
      if (f.field === 'id') {
        if (f.op !== 'eq' && f.op !== 'ne') {
          fail('id supports eq, ne and in');
          continue;
        }
        conds.push(`r.id ${op} ${params.add(c.v, '::uuid')}`);
      } else conds.push(`${sys} ${op} ${params.add(c.v, '::timestamptz')}`);
      continue;
    }
    const isArray = type === 'multi-select' || type === 'files';
    if (f.op === 'eq' || f.op === 'ne') {
      let cond: string;
      if (isArray) cond = `r.data @> ${params.add(JSON.stringify({ [f.field]: [c.v] }), '::jsonb')}`;
      else if (type === 'relationship') {
        cond = `(r.data @> ${params.add(JSON.stringify({ [f.field]: c.v }), '::jsonb')} OR r.data @> ${params.add(JSON.stringify({ [f.field]: [c.v] }), '::jsonb')})`;
      } else cond = `r.data @> ${params.add(JSON.stringify({ [f.field]: c.v }), '::jsonb')}`;
      conds.push(f.op === 'eq' ? cond : `NOT ${cond}`);
      continue;
    }
    if (isArray || type === 'relationship') {
      fail(`${f.op} is not available on ${type} fields`);
      continue;
    }
    if (type === 'number' || type === 'boolean' || type === 'json') conds.push(`${jsonField(f.field)} ${op} ${params.add(JSON.stringify(c.v), '::jsonb')}`);
    else conds.push(`${textField(f.field)} COLLATE "C" ${op} ${params.add(c.v)}`);
  }
  if (issues.length) throw new DecodeError(issues);
  return conds;
}

/** ORDER BY for a sort expression; throws a decode error on unknown keys. */
export function sortSql(fields: Record<string, FieldDef>, sort: string | undefined): string {
  const parts = (sort ?? 'createdAt').split(',').map((s) => s.trim()).filter(Boolean);
  const issues: DecodeIssue[] = [];
  const out: string[] = [];
  let hasId = false;
  for (const p of parts) {
    const desc = p.startsWith('-');
    const key = desc ? p.slice(1) : p;
    const dir = desc ? 'DESC' : 'ASC';
    if (SYSTEM[key]) {
      out.push(`${SYSTEM[key]} ${dir}`);
      if (key === 'id') hasId = true;
      continue;
    }
    const def = fields[key];
    if (!def || !SAFE.test(key)) {
      issues.push({ _tag: 'Refinement', path: ['sort'], message: `cannot sort by '${key}': not a field (or id, createdAt, updatedAt)` });
      continue;
    }
    if (def.type === 'number' || def.type === 'boolean' || def.type === 'json' || def.type === 'multi-select' || def.type === 'files') out.push(`${jsonField(key)} ${dir} NULLS LAST`);
    else if (def.type === 'date' || def.type === 'timestamp') out.push(`${textField(key)} COLLATE "C" ${dir} NULLS LAST`);
    else out.push(`${textField(key)} ${dir} NULLS LAST`);
  }
  if (issues.length) throw new DecodeError(issues);
  if (!hasId) out.push(`r.id ${parts[parts.length - 1]?.startsWith('-') ? 'DESC' : 'ASC'}`);
  return out.join(', ');
}

/** Text search condition over text-like fields. */
export function searchSql(fields: Record<string, FieldDef>, q: string | undefined, params: Params): string | null {
  if (q === undefined || q === '') return null;
  const keys = Object.entries(fields)
    .filter(([k, f]) => SAFE.test(k) && (f.type === 'text' || f.type === 'select' || f.type === 'multi-select'))
    .map(([k]) => `r.data->>'${k}'`);
  const pattern = params.add(`%${likeEscape(q)}%`);
  if (keys.length === 0) return `r.data::text ILIKE ${pattern}`;
  return `concat_ws(' ', ${keys.join(', ')}) ILIKE ${pattern}`;
}
