/**
 * Materialized fields: a field with `materialized: {sql}` stores the first column of the first
 * row of its SQL, a read-only SELECT over the workspace tables (the sql-query tables) run by the
 * query engine with the row bound as named parameters (`$id`, `$<fieldHandle>`).
 *
 * Refresh rule:
 * - on every create and update of a row (upsert-many, patch-many) its materialized fields are
 *   computed inside the write, over the data committed before that write;
 * - after any write commits to a table T, every definition with a materialized field whose SQL
 *   reads T (T itself included) is recomputed in the background for all its live rows; rows whose
 *   values changed are updated (only the materialized keys, so concurrent edits are kept), which
 *   may in turn refresh definitions that read those (at most 5 levels; a recompute that changes
 *   nothing stops the chain). Background refreshes do not publish row events.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../core/db/index.ts';
import { defineError } from '../../core/errors/index.ts';
import type { QueryEngine } from '../query/api.ts';
import type { DataTable } from './api.ts';
import type { DefinitionRecord, DefinitionsService, FieldDef } from './definitions.service.ts';
import { snakeAlias } from './definitions.service.ts';
import type { Materializer } from './rows.service.ts';
import type { TablesService } from './tables.service.ts';

export const MaterializedFailed = defineError('materialized_failed', 400, 'A materialized field could not be computed.');

const MAX_DEPTH = 5;
const MAX_REFRESH_ROWS = 100_000;

function convert(v: unknown, type: FieldDef['type']): unknown {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'number': {
      const n = typeof v === 'number' ? v : Number(v);
      return Number.isFinite(n) ? n : null;
    }
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    case 'date':
      return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : null;
    case 'timestamp': {
      const d = new Date(String(v));
      return Number.isNaN(d.getTime()) ? null : d.toISOString();
    }
    case 'json':
      if (typeof v === 'string') {
        try {
          return JSON.parse(v);
        } catch {
          return v;
        }
      }
      return v;
    case 'files':
    case 'multi-select':
      return Array.isArray(v) ? v.map(String) : [String(v)];
    default:
      return typeof v === 'string' ? v : JSON.stringify(v);
  }
}

export class MaterializedFields implements Materializer {
  private readonly db: Database;
  private readonly defs: DefinitionsService;
  private readonly tables: TablesService;
  private readonly engine: QueryEngine;
  private readonly timeoutMs: number;
  private readonly log: FastifyBaseLogger;
  private readonly analyses = new Map<string, Promise<string[]>>();
  private readonly running = new Map<string, { dirty: boolean; depth: number; done: Promise<void> }>();

  constructor(db: Database, defs: DefinitionsService, tables: TablesService, engine: QueryEngine, timeoutMs: number, log: FastifyBaseLogger) {
    this.db = db;
    this.defs = defs;
    this.tables = tables;
    this.engine = engine;
    this.timeoutMs = timeoutMs;
    this.log = log;
  }

  /** Tables the SQL reads (throws the engine's 400s for SQL that is not one allowed SELECT). */
  tablesOf(sql: string): Promise<string[]> {
    let p = this.analyses.get(sql);
    if (!p) {
      p = this.engine.analyze(sql).then((a) => a.tables);
      p.catch(() => this.analyses.delete(sql));
      if (this.analyses.size > 1000) this.analyses.clear();
      this.analyses.set(sql, p);
    }
    return p;
  }

  /** For definition validation: an error message, or null when the SQL is acceptable. */
  async check(workspaceId: string, sql: string, self: { handle: string } | null): Promise<string | null> {
    let names: string[];
    try {
      names = await this.tablesOf(sql);
    } catch (err) {
      return (err as Error).message;
    }
    const all = await this.tables.list(workspaceId);
    const known = new Set(all.flatMap((t) => [t.handle, t.alias]));
    if (self) {
      known.add(self.handle);
      known.add(snakeAlias(self.handle));
    }
    const unknown = names.filter((n) => !known.has(n));
    return unknown.length ? `unknown table(s): ${unknown.join(', ')}` : null;
  }

  private resolve(all: DataTable[], names: string[]): DataTable[] {
    const out: DataTable[] = [];
    for (const n of names) {
      const t = all.find((x) => x.handle === n) ?? all.find((x) => x.alias === n);
      if (t && !out.includes(t)) out.push(t);
    }
    return out;
  }

  private async computeInto(def: DefinitionRecord, rows: { id: string; data: Record<string, unknown> }[], all: DataTable[]): Promise<void> {
    const mats = Object.entries(def.fields).filter(([, f]) => f.materialized);
    for (const [handle, f] of mats) {
      const sql = f.materialized!.sql;
      let names: string[];
      try {
        names = await this.tablesOf(sql);
      } catch (err) {
        throw new MaterializedFailed(`Materialized field '${handle}': ${(err as Error).message}`, { field: handle });
      }
      const used = this.resolve(all, names);
      if (used.length < names.length) {
        for (const r of rows) delete r.data[handle];
        continue;
      }
      const datasets = used.map((t) => this.tables.dataset(def.workspaceId, t));
      for (const r of rows) {
        const params: Record<string, unknown> = { id: r.id };
        for (const [h, fd] of Object.entries(def.fields)) {
          if (fd.materialized) continue;
          params[h] = r.data[h] ?? null;
          params[h.toLowerCase()] = r.data[h] ?? null;
        }
        try {
          const res = await this.engine.run({ sql, scope: def.workspaceId, datasets, params, maxRows: 1, timeoutMs: this.timeoutMs });
          const v = convert(res.rows[0]?.[0], f.type);
          if (v === null) delete r.data[handle];
          else r.data[handle] = v;
        } catch (err) {
          throw new MaterializedFailed(`Materialized field '${handle}': ${(err as Error).message}`, { field: handle });
        }
      }
    }
  }

  async compute(def: DefinitionRecord, rows: { id: string; data: Record<string, unknown> }[]): Promise<void> {
    if (!Object.values(def.fields).some((f) => f.materialized)) return;
    await this.computeInto(def, rows, await this.tables.list(def.workspaceId));
  }

  changed(def: DefinitionRecord, depth = 0): void {
    if (depth >= MAX_DEPTH) return;
    void this.dependents(def)
      .then((ds) => {
        for (const d of ds) this.schedule(d, depth);
      })
      .catch((err: unknown) => this.log.error({ err, definitionId: def.id }, 'finding materialized dependents failed'));
  }

  private async dependents(def: DefinitionRecord): Promise<DefinitionRecord[]> {
    const all = await this.defs.list(def.workspaceId);
    const out: DefinitionRecord[] = [];
    for (const d of all) {
      for (const f of Object.values(d.fields)) {
        if (!f.materialized) continue;
        const names = await this.tablesOf(f.materialized.sql).catch(() => [] as string[]);
        if (names.some((n) => n === def.handle || n === snakeAlias(def.handle))) {
          out.push(d);
          break;
        }
      }
    }
    return out;
  }

  /** Recomputes every row of a definition in the background (after its fields changed). */
  refreshAll(def: DefinitionRecord): void {
    this.schedule(def, 0);
  }

  private schedule(def: DefinitionRecord, depth: number): void {
    const cur = this.running.get(def.id);
    if (cur) {
      cur.dirty = true;
      return;
    }
    const state = { dirty: false, depth, done: Promise.resolve() };
    state.done = (async () => {
      try {
        do {
          state.dirty = false;
          const changed = await this.refresh(def);
          if (changed) this.changed(def, depth + 1);
        } while (state.dirty);
      } catch (err) {
        this.log.error({ err, definitionId: def.id }, 'materialized refresh failed');
      } finally {
        this.running.delete(def.id);
      }
    })();
    this.running.set(def.id, state);
  }

  /** Recomputes every live row of a definition; returns whether any value changed. */
  private async refresh(stale: DefinitionRecord): Promise<boolean> {
    const def = await this.defs.find(stale.workspaceId, stale.id);
    if (!def) return false;
    const keys = Object.entries(def.fields).filter(([, f]) => f.materialized).map(([h]) => h);
    if (!keys.length) return false;
    const rows = await this.db.query<{ id: string; data: Record<string, unknown> }>(
      `SELECT id, data FROM data_rows WHERE workspace_id = $1 AND definition_id = $2 AND deleted_at IS NULL ORDER BY id LIMIT ${MAX_REFRESH_ROWS}`,
      [def.workspaceId, def.id],
    );
    const work = rows.map((r) => ({ id: r.id, data: { ...r.data } }));
    await this.computeInto(def, work, await this.tables.list(def.workspaceId));
    const changed = work.filter((w, i) => keys.some((k) => JSON.stringify(w.data[k] ?? null) !== JSON.stringify(rows[i].data[k] ?? null)));
    if (!changed.length) return false;
    await this.db.transaction(async (client) => {
      const v = await client.query<{ v: string }>(
        `UPDATE data_definitions SET data_version = data_version + 1 WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING data_version::text AS v`,
        [def.workspaceId, def.id],
      );
      if (!v.rows[0]) return;
      const payload = changed.map((w) => ({ id: w.id, mat: Object.fromEntries(keys.filter((k) => w.data[k] !== undefined).map((k) => [k, w.data[k]])) }));
      await client.query(
        `UPDATE data_rows r SET data = (r.data - $4::text[]) || x.mat, version = $3, updated_at = now()
         FROM jsonb_to_recordset($5::jsonb) AS x(id uuid, mat jsonb)
         WHERE r.id = x.id AND r.workspace_id = $1 AND r.definition_id = $2 AND r.deleted_at IS NULL`,
        [def.workspaceId, def.id, v.rows[0].v, keys, JSON.stringify(payload)],
      );
    });
    return true;
  }

  /** Resolves when no refresh is running (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running.values()].map((s) => s.done));
  }
}
