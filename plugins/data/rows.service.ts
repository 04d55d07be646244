/**
 * Data rows: paged query, get, upsert-many, patch-many, delete-many, select-all. Every write is
 * one transaction that first bumps (and so row-locks) the definition's data_version: writes to
 * one definition are serialized, which makes the unique-field checks race-free and gives every
 * written row the version that wrote it. Events are published after commit, one per row.
 */
import type pg from 'pg';
import type { Database } from '../../core/db/index.ts';
import { Conflict, DecodeError, NotFound, defineError, type DecodeIssue } from '../../core/errors/index.ts';
import { uuidv7 } from '../../core/crypto/index.ts';
import type { EventBus } from '../../core/events/index.ts';
import type { FilesService } from '../files/api.ts';
import type { DataPage, DataRow, DataRowEvent } from './api.ts';
import { isUuid, type DefinitionRecord, type DefinitionsService } from './definitions.service.ts';
import { Params, filterSql, parseFilters, searchSql, sortSql } from './query.ts';
import { emptyRefs, hasNul, merge, normalizeData, type Refs } from './validate.ts';

export const BatchTooLarge = defineError('batch_too_large', 400, 'Too many rows in one request.');
export const RowTooLarge = defineError('row_too_large', 400, 'A row is larger than allowed.');
export const TooManyRows = defineError('too_many_rows', 400, 'The filter matches more rows than one request may change.');
export const SelectionRequired = defineError('selection_required', 400, 'Give `ids` or `filter` to choose rows.');

export interface RowsConfig {
  maxBatchRows: number;
  maxRowBytes: number;
  defaultPageSize: number;
  maxChangeRows: number;
  maxSelectIds: number;
}

/** Computes materialized field values of rows being written (set by the plugin when available). */
export interface Materializer {
  compute(def: DefinitionRecord, rows: { id: string; data: Record<string, unknown> }[]): Promise<void>;
  /** After commit: a definition's rows changed (refresh dependents). */
  changed(def: DefinitionRecord): void;
}

interface StoredRow {
  id: string;
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export type QueryInput = Record<string, unknown>;

function view(def: { handle: string }, r: StoredRow): DataRow {
  return {
    id: r.id,
    definitionHandle: def.handle,
    data: r.data,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    deletedAt: r.deleted_at ? r.deleted_at.toISOString() : null,
  };
}

const FILTER_PREFIX = 'filter.';

export class RowsService {
  private readonly db: Database;
  private readonly defs: DefinitionsService;
  private readonly events: EventBus;
  private readonly files: FilesService | undefined;
  readonly cfg: RowsConfig;
  materializer: Materializer | undefined;
  private readonly counts = new Map<string, number>();

  constructor(db: Database, defs: DefinitionsService, events: EventBus, files: FilesService | undefined, cfg: RowsConfig) {
    this.db = db;
    this.defs = defs;
    this.events = events;
    this.files = files;
    this.cfg = cfg;
  }

  // ------------------------------------------------------------------------------------------
  // Reads

  /** WHERE conditions (alias r) for query-string style input. */
  private whereFromQuery(def: DefinitionRecord, input: QueryInput, params: Params): string[] {
    const nul = Object.entries(input).find(([, v]) => hasNul(v));
    if (nul) throw new DecodeError([{ _tag: 'Refinement', path: [nul[0]], message: 'must not contain NUL characters' }]);
    const entries = Object.entries(input).filter(([k, v]) => k.startsWith(FILTER_PREFIX) && v !== undefined) as [string, unknown][];
    const filters = parseFilters(
      entries.map(([k, v]) => [k.slice(FILTER_PREFIX.length), typeof v === 'number' || typeof v === 'boolean' ? String(v) : v]),
      (k) => [`${FILTER_PREFIX}${k}`],
    );
    const conds = filterSql(def.fields, filters, params, true, (k) => [`${FILTER_PREFIX}${k}`]);
    const s = searchSql(def.fields, typeof input.q === 'string' ? input.q : input.q === undefined ? undefined : String(input.q), params);
    if (s) conds.push(s);
    return conds;
  }

  private whereFromBody(def: DefinitionRecord, filter: Record<string, unknown>, params: Params): string[] {
    const nul = Object.entries(filter).find(([, v]) => hasNul(v));
    if (nul) throw new DecodeError([{ _tag: 'Refinement', path: ['filter', nul[0]], message: 'must not contain NUL characters' }]);
    const filters = parseFilters(Object.entries(filter), (k) => ['filter', k]);
    return filterSql(def.fields, filters, params, false, (k) => ['filter', k]);
  }

  private async count(def: DefinitionRecord, where: string, params: unknown[]): Promise<number> {
    const key = `${def.id}|${def.dataVersion}|${where}|${JSON.stringify(params)}`;
    const hit = this.counts.get(key);
    if (hit !== undefined) return hit;
    const [{ n }] = await this.db.query<{ n: string }>(`SELECT count(*) AS n FROM data_rows r WHERE ${where}`, params);
    const total = Number(n);
    if (this.counts.size >= 2000) this.counts.delete(this.counts.keys().next().value!);
    this.counts.set(key, total);
    return total;
  }

  async query(workspaceId: string, segment: string, input: QueryInput): Promise<DataPage> {
    const def = await this.defs.get(workspaceId, segment);
    const page = input.page === undefined ? 1 : Number(input.page);
    const pageSize = input.pageSize === undefined ? this.cfg.defaultPageSize : Number(input.pageSize);
    const issues: DecodeIssue[] = [];
    if (!Number.isInteger(page) || page < 1) issues.push({ _tag: 'Refinement', path: ['page'], message: 'must be an integer >= 1' });
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) issues.push({ _tag: 'Refinement', path: ['pageSize'], message: 'must be an integer from 1 to 100' });
    if (issues.length) throw new DecodeError(issues);
    const params = new Params([workspaceId, def.id]);
    const conds = ['r.workspace_id = $1', 'r.definition_id = $2', 'r.deleted_at IS NULL', ...this.whereFromQuery(def, input, params)];
    const order = sortSql(def.fields, typeof input.sort === 'string' ? input.sort : undefined);
    const where = conds.join(' AND ');
    const base = [...params.values];
    const offset = (page - 1) * pageSize;
    const [total, rows] = await Promise.all([
      this.count(def, where, base),
      this.db.query<StoredRow>(
        `SELECT r.id, r.data, r.created_at, r.updated_at, r.deleted_at FROM data_rows r WHERE ${where} ORDER BY ${order} LIMIT ${pageSize} OFFSET ${offset}`,
        base,
      ),
    ]);
    const pageCount = Math.ceil(total / pageSize);
    return { items: rows.map((r) => view(def, r)), total, page, pageSize, pageCount, hasMore: page < pageCount };
  }

  async selectAll(workspaceId: string, segment: string, input: QueryInput): Promise<{ ids: string[]; total: number; truncated: boolean }> {
    const def = await this.defs.get(workspaceId, segment);
    const params = new Params([workspaceId, def.id]);
    const conds = ['r.workspace_id = $1', 'r.definition_id = $2', 'r.deleted_at IS NULL', ...this.whereFromQuery(def, input, params)];
    const order = sortSql(def.fields, typeof input.sort === 'string' ? input.sort : undefined);
    const rows = await this.db.query<{ id: string }>(
      `SELECT r.id FROM data_rows r WHERE ${conds.join(' AND ')} ORDER BY ${order} LIMIT ${this.cfg.maxSelectIds + 1}`,
      params.values,
    );
    const truncated = rows.length > this.cfg.maxSelectIds;
    const ids = rows.slice(0, this.cfg.maxSelectIds).map((r) => r.id);
    const total = truncated ? await this.count(def, conds.join(' AND '), params.values) : ids.length;
    return { ids, total, truncated };
  }

  async get(workspaceId: string, segment: string, rowId: string): Promise<DataRow | null> {
    const def = await this.defs.get(workspaceId, segment);
    if (!isUuid(rowId)) return null;
    const rows = await this.db.query<StoredRow>(
      `SELECT r.id, r.data, r.created_at, r.updated_at, r.deleted_at FROM data_rows r WHERE r.workspace_id = $1 AND r.definition_id = $2 AND r.id = $3 AND r.deleted_at IS NULL`,
      [workspaceId, def.id, rowId],
    );
    return rows[0] ? view(def, rows[0]) : null;
  }

  // ------------------------------------------------------------------------------------------
  // Writes

  /** Relationship targets and files must exist (live, same workspace). */
  private async checkRefs(workspaceId: string, def: DefinitionRecord, refs: Refs, batchIds: Set<string>): Promise<void> {
    const issues: DecodeIssue[] = [];
    for (const [target, ids] of refs.relationships) {
      const wanted = [...ids.keys()].filter((id) => !(target === def.id && batchIds.has(id)));
      if (wanted.length === 0) continue;
      const found = await this.db.query<{ id: string }>(
        `SELECT r.id FROM data_rows r JOIN data_definitions d ON d.id = r.definition_id AND d.deleted_at IS NULL
         WHERE r.workspace_id = $1 AND r.definition_id = $2 AND r.deleted_at IS NULL AND r.id = ANY($3::uuid[])`,
        [workspaceId, target, wanted],
      );
      const have = new Set(found.map((r) => r.id));
      for (const id of wanted) if (!have.has(id)) issues.push({ _tag: 'Refinement', path: ids.get(id)!, message: `no row ${id} in the related data definition` });
    }
    if (refs.files.size > 0) {
      const ids = [...refs.files.keys()];
      const have = this.files ? await this.files.existing(workspaceId, ids) : new Set(ids);
      for (const id of ids) if (!have.has(id)) issues.push({ _tag: 'Refinement', path: refs.files.get(id)!, message: `no file ${id} in this workspace` });
    }
    if (issues.length) throw new DecodeError(issues);
  }

  private checkSize(rows: { data: Record<string, unknown> }[], at: (i: number) => string): void {
    rows.forEach((r, i) => {
      const bytes = Buffer.byteLength(JSON.stringify(r.data));
      if (bytes > this.cfg.maxRowBytes) {
        throw new RowTooLarge(`${at(i)} is ${bytes} bytes of JSON; the limit is ${this.cfg.maxRowBytes}.`, { rowIndex: String(i), limitBytes: String(this.cfg.maxRowBytes) });
      }
    });
  }

  /** Required and unique checks over the final rows of a write (inside the transaction). */
  private async checkConstraints(
    client: pg.PoolClient,
    def: DefinitionRecord,
    finals: { id: string; data: Record<string, unknown>; path: (string | number)[]; creating: boolean }[],
  ): Promise<void> {
    const issues: DecodeIssue[] = [];
    for (const [h, f] of Object.entries(def.fields)) {
      if (!f.required) continue;
      for (const r of finals) if (r.data[h] === undefined || r.data[h] === null) issues.push({ _tag: 'Missing', path: [...r.path, h], message: 'is required' });
    }
    if (issues.length) throw new DecodeError(issues);
    for (const [h, f] of Object.entries(def.fields)) {
      if (!f.unique) continue;
      const seen = new Map<string, number>();
      const vals: unknown[] = [];
      finals.forEach((r, i) => {
        const v = r.data[h];
        if (v === undefined || v === null) return;
        const k = JSON.stringify(v);
        if (seen.has(k)) throw new Conflict(`Field '${h}' must be unique: ${[...finals[i].path, h].join('.')} repeats ${k}.`, { field: h, path: [...finals[i].path, h].join('.') });
        seen.set(k, i);
        vals.push(v);
      });
      if (vals.length === 0) continue;
      const clash = await client.query<{ v: unknown }>(
        `SELECT r.data->'${h}' AS v FROM data_rows r
         WHERE r.definition_id = $1 AND r.deleted_at IS NULL AND r.data->'${h}' IN (SELECT jsonb_array_elements($2::jsonb)) AND NOT (r.id = ANY($3::uuid[])) LIMIT 1`,
        [def.id, JSON.stringify(vals), finals.map((r) => r.id)],
      );
      if (clash.rows.length) {
        const i = seen.get(JSON.stringify(clash.rows[0].v))!;
        const where = [...finals[i].path, h].join('.');
        throw new Conflict(`Field '${h}' must be unique: another row already has the value of ${where}.`, { field: h, path: where });
      }
    }
  }

  private async lockDefinition(client: pg.PoolClient, workspaceId: string, def: DefinitionRecord): Promise<string> {
    const res = await client.query<{ v: string }>(
      `UPDATE data_definitions SET data_version = data_version + 1 WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING data_version::text AS v`,
      [workspaceId, def.id],
    );
    if (!res.rows[0]) throw new NotFound('Data definition was not found.');
    return res.rows[0].v;
  }

  private publish(def: DefinitionRecord, workspaceId: string, topic: 'data.row.created' | 'data.row.updated' | 'data.row.deleted', row: DataRow, previous: DataRow | null): void {
    const payload: DataRowEvent = { definitionId: def.id, definitionHandle: def.handle, row, previous };
    this.events.publish(topic, workspaceId, payload);
  }

  async upsertMany(
    workspaceId: string,
    segment: string,
    rows: { id?: string; data: Record<string, unknown> }[],
    matchBy?: string,
  ): Promise<{ items: DataRow[]; created: number; updated: number }> {
    const def = await this.defs.get(workspaceId, segment);
    if (rows.length > this.cfg.maxBatchRows) throw new BatchTooLarge(`At most ${this.cfg.maxBatchRows} rows per request (got ${rows.length}).`, { limit: String(this.cfg.maxBatchRows) });
    this.checkSize(rows, (i) => `rows.${i}.data`);
    const issues: DecodeIssue[] = [];
    const refs = emptyRefs();
    if (matchBy !== undefined && matchBy !== 'id' && !def.fields[matchBy]?.unique) {
      issues.push({ _tag: 'Refinement', path: ['matchBy'], message: `'${matchBy}' is not a unique field of this definition (or id)` });
    }
    const ids = new Map<string, number>();
    const norm = rows.map((r, i) => {
      if (r.id !== undefined) {
        if (!isUuid(r.id)) issues.push({ _tag: 'Refinement', path: ['rows', i, 'id'], message: 'must be a UUID' });
        else if (ids.has(r.id.toLowerCase())) issues.push({ _tag: 'Refinement', path: ['rows', i, 'id'], message: `repeats rows.${ids.get(r.id.toLowerCase())}.id` });
        else ids.set(r.id.toLowerCase(), i);
      }
      const data = normalizeData(def.fields, r.data, ['rows', i, 'data'], issues, refs);
      return { id: r.id?.toLowerCase(), data };
    });
    const useKey = matchBy !== undefined && matchBy !== 'id' ? matchBy : undefined;
    const keys = new Map<string, number>();
    if (useKey && issues.length === 0) {
      norm.forEach((r, i) => {
        if (r.id) return;
        const v = r.data[useKey];
        if (v === undefined || v === null) issues.push({ _tag: 'Missing', path: ['rows', i, 'data', useKey], message: `is needed to match rows by '${useKey}'` });
        else {
          const k = JSON.stringify(v);
          if (keys.has(k)) issues.push({ _tag: 'Refinement', path: ['rows', i, 'data', useKey], message: `repeats rows.${keys.get(k)}.data.${useKey}` });
          keys.set(k, i);
        }
      });
    }
    if (issues.length) throw new DecodeError(issues);
    await this.checkRefs(workspaceId, def, refs, new Set(ids.keys()));

    type Final = { id: string; data: Record<string, unknown>; path: (string | number)[]; creating: boolean; previous: StoredRow | null; revive: boolean };
    const result = await this.db.transaction(async (client) => {
      const version = await this.lockDefinition(client, workspaceId, def);
      const byId = new Map<string, StoredRow & { workspace_id: string; definition_id: string }>();
      if (ids.size) {
        const res = await client.query(
          `SELECT id, workspace_id, definition_id, data, created_at, updated_at, deleted_at FROM data_rows WHERE id = ANY($1::uuid[])`,
          [[...ids.keys()]],
        );
        for (const r of res.rows) byId.set(r.id, r);
      }
      const byKey = new Map<string, StoredRow>();
      if (useKey && keys.size) {
        const res = await client.query<StoredRow & { k: unknown }>(
          `SELECT r.id, r.data, r.created_at, r.updated_at, r.deleted_at, r.data->'${useKey}' AS k FROM data_rows r
           WHERE r.definition_id = $1 AND r.deleted_at IS NULL AND r.data->'${useKey}' IN (SELECT jsonb_array_elements($2::jsonb))`,
          [def.id, JSON.stringify([...keys.keys()].map((k) => JSON.parse(k)))],
        );
        for (const r of res.rows) byKey.set(JSON.stringify(r.k), r);
      }
      const finals: Final[] = norm.map((r, i) => {
        const path = ['rows', i, 'data'];
        if (r.id) {
          const ex = byId.get(r.id);
          if (ex && (ex.workspace_id !== workspaceId || ex.definition_id !== def.id)) {
            throw new Conflict(`rows.${i}.id is already used by another row.`, { path: `rows.${i}.id` });
          }
          if (ex && !ex.deleted_at) return { id: r.id, data: merge(ex.data, r.data), path, creating: false, previous: ex, revive: false };
          return { id: r.id, data: merge({}, r.data), path, creating: true, previous: null, revive: !!ex };
        }
        const ex = useKey ? byKey.get(JSON.stringify(r.data[useKey])) : undefined;
        if (ex) return { id: ex.id, data: merge(ex.data, r.data), path, creating: false, previous: ex, revive: false };
        return { id: uuidv7(), data: merge({}, r.data), path, creating: true, previous: null, revive: false };
      });
      await this.checkConstraints(client, def, finals);
      if (this.materializer) await this.materializer.compute(def, finals);

      const inserts = finals.filter((f) => f.creating && !f.revive);
      const updates = finals.filter((f) => !f.creating || f.revive);
      const stamps = new Map<string, { created_at: Date; updated_at: Date }>();
      if (inserts.length) {
        const res = await client.query<{ id: string; created_at: Date; updated_at: Date }>(
          `INSERT INTO data_rows (id, workspace_id, definition_id, data, version, created_at, updated_at)
           SELECT x.id, $1, $2, x.data, $3, t.at, t.at FROM ROWS FROM (jsonb_to_recordset($4::jsonb) AS (id uuid, data jsonb)) WITH ORDINALITY AS x(id, data, n),
             LATERAL (SELECT now() + (x.n - 1) * interval '1 microsecond' AS at) t
           RETURNING id, created_at, updated_at`,
          [workspaceId, def.id, version, JSON.stringify(inserts.map((f) => ({ id: f.id, data: f.data })))],
        );
        for (const r of res.rows) stamps.set(r.id, r);
      }
      if (updates.length) {
        const res = await client.query<{ id: string; created_at: Date; updated_at: Date }>(
          `UPDATE data_rows r SET data = x.data, version = $3, updated_at = now(), deleted_at = NULL
           FROM jsonb_to_recordset($4::jsonb) AS x(id uuid, data jsonb)
           WHERE r.id = x.id AND r.workspace_id = $1 AND r.definition_id = $2
           RETURNING r.id, r.created_at, r.updated_at`,
          [workspaceId, def.id, version, JSON.stringify(updates.map((f) => ({ id: f.id, data: f.data })))],
        );
        for (const r of res.rows) stamps.set(r.id, r);
      }
      return finals.map((f) => ({ f, row: view(def, { ...stamps.get(f.id)!, id: f.id, data: f.data, deleted_at: null }) }));
    });
    for (const { f, row } of result) {
      this.publish(def, workspaceId, f.creating ? 'data.row.created' : 'data.row.updated', row, f.previous && !f.revive ? view(def, f.previous) : null);
    }
    this.materializer?.changed(def);
    const created = result.filter((r) => r.f.creating).length;
    return { items: result.map((r) => r.row), created, updated: result.length - created };
  }

  /** Live rows chosen by ids and/or a filter, locked for update. */
  private async select(
    client: pg.PoolClient,
    workspaceId: string,
    def: DefinitionRecord,
    sel: { ids?: string[]; filter?: Record<string, unknown> },
  ): Promise<StoredRow[]> {
    if (!sel.ids && !sel.filter) throw new SelectionRequired();
    const params = new Params([workspaceId, def.id]);
    const conds = ['r.workspace_id = $1', 'r.definition_id = $2', 'r.deleted_at IS NULL'];
    if (sel.ids) {
      const bad = sel.ids.findIndex((id) => !isUuid(id));
      if (bad >= 0) throw new DecodeError([{ _tag: 'Refinement', path: ['ids', bad], message: 'must be a UUID' }]);
      conds.push(`r.id = ANY(${params.add(sel.ids.map((s) => s.toLowerCase()), '::uuid[]')})`);
    }
    if (sel.filter) conds.push(...this.whereFromBody(def, sel.filter, params));
    const res = await client.query<StoredRow>(
      `SELECT r.id, r.data, r.created_at, r.updated_at, r.deleted_at FROM data_rows r WHERE ${conds.join(' AND ')} ORDER BY r.id LIMIT ${this.cfg.maxChangeRows + 1} FOR UPDATE`,
      params.values,
    );
    if (res.rows.length > this.cfg.maxChangeRows) throw new TooManyRows(`The selection matches more than ${this.cfg.maxChangeRows} rows; narrow it.`, { limit: String(this.cfg.maxChangeRows) });
    return res.rows;
  }

  async patchMany(
    workspaceId: string,
    segment: string,
    body: { ids?: string[]; filter?: Record<string, unknown>; data: Record<string, unknown> },
  ): Promise<{ updatedCount: number; ids: string[] }> {
    const def = await this.defs.get(workspaceId, segment);
    this.checkSize([{ data: body.data }], () => 'data');
    const issues: DecodeIssue[] = [];
    const refs = emptyRefs();
    const patch = normalizeData(def.fields, body.data, ['data'], issues, refs);
    if (issues.length) throw new DecodeError(issues);
    await this.checkRefs(workspaceId, def, refs, new Set());
    const result = await this.db.transaction(async (client) => {
      const version = await this.lockDefinition(client, workspaceId, def);
      const rows = await this.select(client, workspaceId, def, body);
      const finals = rows.map((r) => ({ id: r.id, data: merge(r.data, patch), path: ['data'] as (string | number)[], creating: false, previous: r }));
      this.checkSize(finals, () => 'data (merged with a stored row)');
      await this.checkConstraints(client, def, finals);
      if (this.materializer) await this.materializer.compute(def, finals);
      if (finals.length === 0) return [];
      const res = await client.query<{ id: string; created_at: Date; updated_at: Date }>(
        `UPDATE data_rows r SET data = x.data, version = $3, updated_at = now()
         FROM jsonb_to_recordset($4::jsonb) AS x(id uuid, data jsonb)
         WHERE r.id = x.id AND r.workspace_id = $1 AND r.definition_id = $2 RETURNING r.id, r.created_at, r.updated_at`,
        [workspaceId, def.id, version, JSON.stringify(finals.map((f) => ({ id: f.id, data: f.data })))],
      );
      const stamps = new Map(res.rows.map((r) => [r.id, r]));
      return finals.map((f) => ({ f, row: view(def, { ...stamps.get(f.id)!, id: f.id, data: f.data, deleted_at: null }) }));
    });
    for (const { f, row } of result) this.publish(def, workspaceId, 'data.row.updated', row, view(def, f.previous));
    if (result.length) this.materializer?.changed(def);
    return { updatedCount: result.length, ids: result.map((r) => r.row.id) };
  }

  async deleteMany(workspaceId: string, segment: string, body: { ids?: string[]; filter?: Record<string, unknown> }): Promise<{ deletedCount: number; ids: string[] }> {
    const def = await this.defs.get(workspaceId, segment);
    const result = await this.db.transaction(async (client) => {
      const version = await this.lockDefinition(client, workspaceId, def);
      const rows = await this.select(client, workspaceId, def, body);
      if (rows.length === 0) return [];
      const res = await client.query<{ id: string; updated_at: Date; deleted_at: Date }>(
        `UPDATE data_rows r SET deleted_at = now(), updated_at = now(), version = $3
         WHERE r.workspace_id = $1 AND r.definition_id = $2 AND r.id = ANY($4::uuid[]) RETURNING r.id, r.updated_at, r.deleted_at`,
        [workspaceId, def.id, version, rows.map((r) => r.id)],
      );
      const stamps = new Map(res.rows.map((r) => [r.id, r]));
      return rows.map((r) => ({ previous: r, row: view(def, { ...r, updated_at: stamps.get(r.id)!.updated_at, deleted_at: stamps.get(r.id)!.deleted_at }) }));
    });
    for (const { row, previous } of result) this.publish(def, workspaceId, 'data.row.deleted', row, view(def, previous));
    if (result.length) this.materializer?.changed(def);
    return { deletedCount: result.length, ids: result.map((r) => r.row.id) };
  }
}
