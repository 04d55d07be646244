/**
 * Static checks of untrusted SQL from DuckDB's own parse tree (`json_serialize_sql`, which
 * parses without binding or executing): only SELECT statements serialize; we then list the
 * tables, table functions and functions it names, and refuse what a sandboxed query must not use.
 */
import { SqlNotAllowed } from '../../../plugins/query/api.ts';

/** Table functions a query may call (everything else, e.g. read_csv, glob, query, duckdb_*, is refused). */
export const ALLOWED_TABLE_FUNCTIONS = new Set(['range', 'generate_series', 'unnest']);
/** Scalar functions refused even though the lockdown would make most of them fail anyway. */
export const DENIED_FUNCTIONS = new Set([
  'current_setting',
  'getvariable',
  'getenv',
  'read_text',
  'read_blob',
  'query',
  'query_table',
  'sql_auto_complete',
  'json_serialize_sql',
  'json_deserialize_sql',
  'json_serialize_plan',
  'json_execute_serialized_sql',
]);

export interface TreeFacts {
  tables: string[];
  tableFunctions: string[];
  functions: string[];
  cteNames: Set<string>;
  qualified: string[];
  showRefs: number;
}

export function collect(tree: unknown): TreeFacts {
  const facts: TreeFacts = { tables: [], tableFunctions: [], functions: [], cteNames: new Set(), qualified: [], showRefs: 0 };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const n of node) visit(n);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if (o.type === 'BASE_TABLE' && typeof o.table_name === 'string') {
      facts.tables.push(o.table_name.toLowerCase());
      if (o.schema_name || o.catalog_name) facts.qualified.push([o.catalog_name, o.schema_name, o.table_name].filter(Boolean).join('.'));
    }
    if (o.type === 'SHOW_REF') facts.showRefs++;
    if (o.type === 'TABLE_FUNCTION' && o.function && typeof (o.function as Record<string, unknown>).function_name === 'string') {
      facts.tableFunctions.push(((o.function as Record<string, unknown>).function_name as string).toLowerCase());
    }
    if (o.class === 'FUNCTION' && typeof o.function_name === 'string') {
      facts.functions.push(o.function_name.toLowerCase());
      if (o.schema || o.catalog) facts.qualified.push([o.catalog, o.schema, o.function_name].filter(Boolean).join('.'));
    }
    const cte = o.cte_map as { map?: { key?: string }[] } | undefined;
    if (cte && Array.isArray(cte.map)) for (const e of cte.map) if (typeof e.key === 'string') facts.cteNames.add(e.key.toLowerCase());
    for (const v of Object.values(o)) if (v && typeof v === 'object') visit(v);
  };
  visit(tree);
  return facts;
}

/** Throws SqlNotAllowed for anything outside the sandbox's allowances; returns the referenced tables. */
export function check(facts: TreeFacts): { tables: string[]; tableFunctions: string[] } {
  if (facts.showRefs) throw new SqlNotAllowed('DESCRIBE, SUMMARIZE and SHOW are not allowed; only one read-only SELECT or WITH statement.');
  if (facts.qualified.length) throw new SqlNotAllowed(`Qualified names are not allowed: ${facts.qualified[0]}. Name tables and functions without a catalog or schema.`);
  for (const f of facts.tableFunctions) {
    if (!ALLOWED_TABLE_FUNCTIONS.has(f)) throw new SqlNotAllowed(`Table function '${f}' is not allowed (allowed: ${[...ALLOWED_TABLE_FUNCTIONS].join(', ')}).`, { function: f });
  }
  for (const f of facts.functions) {
    if (DENIED_FUNCTIONS.has(f) || f.startsWith('duckdb_') || f.startsWith('pragma_')) throw new SqlNotAllowed(`Function '${f}' is not allowed.`, { function: f });
  }
  const tables: string[] = [];
  for (const t of facts.tables) if (!facts.cteNames.has(t) && !tables.includes(t)) tables.push(t);
  return { tables, tableFunctions: [...new Set(facts.tableFunctions)] };
}
