/**
 * Row values against field types. Values are normalized on the way in (timestamps to ISO UTC,
 * dates to YYYY-MM-DD); null clears a field (null values are not stored).
 *
 * | type | accepted value |
 * |---|---|
 * | text | string (variant `url`: an absolute http(s) URL) |
 * | number | finite JSON number |
 * | boolean | true / false |
 * | date | `YYYY-MM-DD` (a real calendar date) |
 * | timestamp | ISO 8601 date-time with offset or Z (stored as UTC ISO) |
 * | json | any JSON value |
 * | files | array of file ids of this workspace (not deleted) |
 * | select | one option value |
 * | multi-select | array of distinct option values |
 * | relationship | a row id of the target definition, or an array of them (live rows of this workspace) |
 */
import type { DecodeIssue } from '../../core/errors/index.ts';
import type { FieldDef } from './definitions.service.ts';
import { isUuid } from './definitions.service.ts';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

export interface Refs {
  /** target definition id -> row id referenced -> where (first use) */
  relationships: Map<string, Map<string, (string | number)[]>>;
  /** file id -> where (first use) */
  files: Map<string, (string | number)[]>;
}

export function emptyRefs(): Refs {
  return { relationships: new Map(), files: new Map() };
}

function validDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** Normalizes one value of a field; pushes an issue and returns undefined when it is invalid. */
export function normalizeValue(field: FieldDef, value: unknown, path: (string | number)[], issues: DecodeIssue[], refs: Refs): unknown {
  const bad = (message: string): undefined => {
    issues.push({ _tag: 'Type', path, message });
    return undefined;
  };
  switch (field.type) {
    case 'text':
      if (typeof value !== 'string') return bad('must be a string');
      if (field.variant === 'url') {
        try {
          const u = new URL(value);
          if (u.protocol !== 'http:' && u.protocol !== 'https:') return bad('must be an http(s) URL');
        } catch {
          return bad('must be an absolute URL');
        }
      }
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return bad('must be a finite number');
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') return bad('must be a boolean');
      return value;
    case 'date':
      if (typeof value !== 'string' || !validDate(value)) return bad('must be a date YYYY-MM-DD');
      return value;
    case 'timestamp': {
      if (typeof value !== 'string' || !TIMESTAMP.test(value)) return bad('must be an ISO 8601 timestamp with a time zone (e.g. 2026-01-31T12:00:00Z)');
      const d = new Date(value);
      if (Number.isNaN(d.getTime())) return bad('must be a valid timestamp');
      return d.toISOString();
    }
    case 'json':
      return value;
    case 'files': {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.length === 0 || v.length > 200)) return bad('must be an array of file ids');
      for (const v of value as string[]) if (!refs.files.has(v)) refs.files.set(v, path);
      return [...new Set(value as string[])];
    }
    case 'select': {
      if (typeof value !== 'string') return bad('must be a string option value');
      if (!field.options?.some((o) => o.value === value)) {
        issues.push({ _tag: 'Refinement', path, message: `'${value}' is not an option (${(field.options ?? []).map((o) => o.value).join(', ')})` });
        return undefined;
      }
      return value;
    }
    case 'multi-select': {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) return bad('must be an array of option values');
      const vals = value as string[];
      if (new Set(vals).size !== vals.length) {
        issues.push({ _tag: 'Refinement', path, message: 'values must be distinct' });
        return undefined;
      }
      const unknown = vals.filter((v) => !field.options?.some((o) => o.value === v));
      if (unknown.length) {
        issues.push({ _tag: 'Refinement', path, message: `not options: ${unknown.join(', ')}` });
        return undefined;
      }
      return vals;
    }
    case 'relationship': {
      const ids = typeof value === 'string' ? [value] : Array.isArray(value) ? value : null;
      if (!ids || ids.some((v) => typeof v !== 'string' || !isUuid(v))) return bad('must be a row id or an array of row ids');
      let map = refs.relationships.get(field.dataDefinitionId!);
      if (!map) refs.relationships.set(field.dataDefinitionId!, (map = new Map()));
      for (const id of ids as string[]) if (!map.has(id.toLowerCase())) map.set(id.toLowerCase(), path);
      return typeof value === 'string' ? value.toLowerCase() : [...new Set((ids as string[]).map((v) => v.toLowerCase()))];
    }
  }
}

/** Whether a JSON value holds a NUL character anywhere (PostgreSQL text and jsonb refuse it). */
export function hasNul(v: unknown): boolean {
  if (typeof v === 'string') return v.includes('\u0000');
  if (Array.isArray(v)) return v.some(hasNul);
  if (v && typeof v === 'object') return Object.entries(v).some(([k, x]) => k.includes('\u0000') || hasNul(x));
  return false;
}

/**
 * Validates a (partial) data object: unknown fields and materialized fields are refused; null
 * values are kept as null (meaning "clear"). Returns the normalized object.
 */
export function normalizeData(
  fields: Record<string, FieldDef>,
  data: Record<string, unknown>,
  basePath: (string | number)[],
  issues: DecodeIssue[],
  refs: Refs,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) {
    const f = fields[k];
    const path = [...basePath, k];
    if (!f) {
      issues.push({ _tag: 'Unexpected', path, message: 'is not a field of this data definition' });
      continue;
    }
    if (f.materialized) {
      issues.push({ _tag: 'Forbidden', path, message: 'is a materialized field (computed by the server)' });
      continue;
    }
    if (v === null) {
      out[k] = null;
      continue;
    }
    if (hasNul(v)) {
      issues.push({ _tag: 'Refinement', path, message: 'must not contain NUL characters (\\u0000)' });
      continue;
    }
    const n = normalizeValue(f, v, path, issues, refs);
    if (n !== undefined) out[k] = n;
  }
  return out;
}

/** Applies a normalized patch to stored data (null removes the key). */
export function merge(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}
