/**
 * The SQL query over data definitions: resolves the tables the statement names to the
 * workspace's definitions, hands them to the query engine as versioned datasets (the engine keeps
 * a per-node copy per version, refreshed incrementally), and caches results per node keyed by the
 * data versions of the used tables.
 */
import type { DataTable, DataTablesService } from '../data/api.ts';
import { UnknownTable, type QueryEngine } from '../query/api.ts';
import type { SqlQueryResult } from './api.ts';

export interface SqlQueryConfig {
  maxRows: number;
  timeoutMs: number;
  resultCacheEntries: number;
}

/** Resolves names (handles first, then aliases) to the workspace's tables. */
export function resolveTables(all: DataTable[], names: string[]): DataTable[] {
  const byHandle = new Map(all.map((t) => [t.handle.toLowerCase(), t]));
  const byAlias = new Map<string, DataTable>();
  for (const t of all) if (!byHandle.has(t.alias) && !byAlias.has(t.alias)) byAlias.set(t.alias, t);
  const out: DataTable[] = [];
  for (const n of names) {
    const t = byHandle.get(n) ?? byAlias.get(n);
    if (!t) throw new UnknownTable(`No data definition with handle or alias '${n}' in this workspace.`, { table: n });
    if (!out.includes(t)) out.push(t);
  }
  return out;
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
}

export function asciiTable(columns: string[], rows: unknown[][], limit = 200): string {
  const shown = rows.slice(0, limit).map((r) => r.map(cell));
  const widths = columns.map((c, i) => Math.max(c.length, ...shown.map((r) => r[i].length)));
  const line = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const out = [line, fmt(columns), line, ...shown.map(fmt), line];
  if (rows.length > limit) out.push(`(${rows.length - limit} more rows not shown)`);
  out.push(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
  return out.join('\n');
}

export class SqlQueryService {
  private readonly tables: DataTablesService;
  private readonly engine: QueryEngine;
  private readonly cfg: SqlQueryConfig;
  private readonly cache = new Map<string, Omit<SqlQueryResult, 'cached' | 'executionTimeMs'>>();

  constructor(tables: DataTablesService, engine: QueryEngine, cfg: SqlQueryConfig) {
    this.tables = tables;
    this.engine = engine;
    this.cfg = cfg;
  }

  async run(workspaceId: string, sql: string): Promise<SqlQueryResult> {
    const started = performance.now();
    const analysis = await this.engine.analyze(sql);
    const all = await this.tables.list(workspaceId);
    const used = resolveTables(all, analysis.tables);
    const key = JSON.stringify([workspaceId, sql, used.map((t) => [t.id, t.version, t.handle, t.alias, t.fields])]);
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return { ...hit, cached: true, executionTimeMs: performance.now() - started };
    }
    const result = await this.engine.run({
      sql,
      scope: workspaceId,
      datasets: used.map((t) => this.tables.dataset(workspaceId, t)),
      maxRows: this.cfg.maxRows,
      timeoutMs: this.cfg.timeoutMs,
    });
    const warnings: string[] = [];
    if (result.truncated) warnings.push(`The result was truncated to the first ${this.cfg.maxRows} rows.`);
    const strCols = result.columns.filter((_, i) => result.columnTypes[i]?.endsWith('(as string)'));
    if (strCols.length) warnings.push(`Columns returned as strings to keep their precision: ${strCols.join(', ')}.`);
    const dup = result.columns.filter((c, i) => result.columns.indexOf(c) !== i);
    if (dup.length) warnings.push(`Duplicate column names (records keep the last): ${[...new Set(dup)].join(', ')}.`);
    const records = result.rows.map((r) => Object.fromEntries(result.columns.map((c, i) => [c, r[i]])));
    const body: Omit<SqlQueryResult, 'cached' | 'executionTimeMs'> = {
      sql,
      normalizedSql: analysis.normalizedSql,
      usedTables: used.map((t) => t.handle),
      table: { columns: result.columns, rows: result.rows },
      records,
      ascii: asciiTable(result.columns, result.rows),
      rowCount: result.rows.length,
      truncated: result.truncated,
      warnings,
    };
    if (this.cfg.resultCacheEntries > 0) {
      if (this.cache.size >= this.cfg.resultCacheEntries) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, body);
    }
    return { ...body, cached: false, executionTimeMs: performance.now() - started };
  }
}
