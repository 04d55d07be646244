/**
 * Data definitions: CRUD, field validation and the path-segment resolution of spec rule 6.
 */
import { isUuid, parsePathRef, slugify } from '../../core/tenancy/index.ts';
import type { Static } from 'typebox';
import type { Database } from '../../core/db/index.ts';
import { Conflict, DecodeError, NotFound, type DecodeIssue } from '../../core/errors/index.ts';
import { uuidv7 } from '../../core/crypto/index.ts';
import { hasNul } from './validate.ts';
import type { DataFieldDefinition } from './api.ts';
import type { CreateDefinitionBody, FieldDefinitionInput, PatchDefinitionBody } from './definitions.schemas.ts';

/** A field definition as stored: the public type of plugins/data/api.ts. */
export type FieldDef = DataFieldDefinition;

export interface DefinitionRecord {
  id: string;
  workspaceId: string;
  workspaceHandle: string;
  handle: string;
  name: string;
  description: string | null;
  fields: Record<string, FieldDef>;
  dataVersion: string;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
}

export interface DefinitionView {
  id: string;
  handle: string;
  url: string;
  name: string;
  description: string | null;
  fields: Record<string, FieldDef>;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

const FIELD_HANDLE_RE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const RESERVED = new Set(['id', 'createdat', 'updatedat', 'deletedat']);

export { isUuid };

/** The snake_case SQL alias of a handle: `orderItems`/`order-items` -> `order_items`. */
export function snakeAlias(handle: string): string {
  return handle
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

export function definitionUrl(workspaceHandle: string, name: string, id: string): string {
  const slug = slugify(name) || 'data';
  return `/w/${workspaceHandle}/data/${slug}-${id}`;
}

export function toView(d: DefinitionRecord): DefinitionView {
  return {
    id: d.id,
    handle: d.handle,
    url: definitionUrl(d.workspaceHandle, d.name, d.id),
    name: d.name,
    description: d.description,
    fields: d.fields,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
    deletedAt: d.deletedAt ? d.deletedAt.toISOString() : null,
  };
}

const SELECT = `SELECT d.id, d.workspace_id, w.handle AS workspace_handle, d.handle, d.name, d.description, d.fields,
  d.data_version::text AS data_version, d.created_at, d.updated_at, d.deleted_at
  FROM data_definitions d JOIN core_workspaces w ON w.id = d.workspace_id`;

interface DefRow {
  id: string;
  workspace_id: string;
  workspace_handle: string;
  handle: string;
  name: string;
  description: string | null;
  fields: Record<string, FieldDef>;
  data_version: string;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

function fromRow(r: DefRow): DefinitionRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    workspaceHandle: r.workspace_handle,
    handle: r.handle,
    name: r.name,
    description: r.description,
    fields: r.fields,
    dataVersion: r.data_version,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    deletedAt: r.deleted_at,
  };
}


type FieldInput = Static<typeof FieldDefinitionInput>;

export class DefinitionsService {
  private readonly db: Database;
  /** Set when a query engine is loaded: validates materialized SQL (an error message or null). */
  checkMaterialized: ((workspaceId: string, sql: string, self: { handle: string } | null) => Promise<string | null>) | undefined;
  /** Called after a patch changed the fields of a definition (recomputes materialized fields). */
  onFieldsChanged: ((def: DefinitionRecord) => void) | undefined;
  constructor(db: Database) {
    this.db = db;
  }

  async list(workspaceId: string): Promise<DefinitionRecord[]> {
    const rows = await this.db.query<DefRow>(`${SELECT} WHERE d.workspace_id = $1 AND d.deleted_at IS NULL ORDER BY d.created_at, d.id`, [workspaceId]);
    return rows.map(fromRow);
  }

  /** A live definition of the workspace named by a path segment, or null. */
  async find(workspaceId: string, segment: string): Promise<DefinitionRecord | null> {
    const ref = parsePathRef(segment);
    if (!ref) return null;
    const rows =
      'id' in ref
        ? await this.db.query<DefRow>(`${SELECT} WHERE d.workspace_id = $1 AND d.id = $2 AND d.deleted_at IS NULL`, [workspaceId, ref.id])
        : await this.db.query<DefRow>(`${SELECT} WHERE d.workspace_id = $1 AND d.handle = $2 AND d.deleted_at IS NULL`, [workspaceId, ref.handle.toLowerCase()]);
    return rows[0] ? fromRow(rows[0]) : null;
  }

  async get(workspaceId: string, segment: string): Promise<DefinitionRecord> {
    const d = await this.find(workspaceId, segment);
    if (!d) throw new NotFound('Data definition was not found.');
    return d;
  }

  async create(workspaceId: string, body: Static<typeof CreateDefinitionBody>): Promise<DefinitionRecord> {
    if (hasNul(body)) throw new DecodeError([{ _tag: 'Refinement', path: [], message: 'strings must not contain NUL characters' }]);
    const handle = body.handle ?? (slugify(body.name).replace(/^[^a-z]+/, '').slice(0, 63) || 'data');
    const id = uuidv7();
    const fields = await this.validateFields(workspaceId, body.fields ?? {}, id, handle);
    try {
      await this.db.query(
        `INSERT INTO data_definitions (id, workspace_id, handle, name, description, fields) VALUES ($1, $2, $3, $4, $5, $6::jsonb)`,
        [id, workspaceId, handle, body.name, body.description ?? null, JSON.stringify(fields)],
      );
    } catch (err) {
      throw this.mapUnique(err, handle);
    }
    return (await this.find(workspaceId, id))!;
  }

  async patch(workspaceId: string, segment: string, body: Static<typeof PatchDefinitionBody>): Promise<DefinitionRecord> {
    if (hasNul(body)) throw new DecodeError([{ _tag: 'Refinement', path: [], message: 'strings must not contain NUL characters' }]);
    const current = await this.get(workspaceId, segment);
    const fields = body.fields ? await this.validateFields(workspaceId, body.fields, current.id, body.handle ?? current.handle) : current.fields;
    try {
      await this.db.query(
        `UPDATE data_definitions SET handle = $3, name = $4, description = $5, fields = $6::jsonb,
           data_version = data_version + CASE WHEN fields = $6::jsonb THEN 0 ELSE 1 END, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL`,
        [
          workspaceId,
          current.id,
          body.handle ?? current.handle,
          body.name ?? current.name,
          body.description === undefined ? current.description : body.description,
          JSON.stringify(fields),
        ],
      );
    } catch (err) {
      throw this.mapUnique(err, body.handle ?? current.handle);
    }
    const updated = (await this.find(workspaceId, current.id))!;
    if (body.fields && Object.values(updated.fields).some((f) => f.materialized)) this.onFieldsChanged?.(updated);
    return updated;
  }

  async remove(workspaceId: string, segment: string): Promise<DefinitionRecord> {
    const current = await this.get(workspaceId, segment);
    await this.db.query(`UPDATE data_definitions SET deleted_at = now(), updated_at = now(), data_version = data_version + 1 WHERE workspace_id = $1 AND id = $2`, [
      workspaceId,
      current.id,
    ]);
    return current;
  }

  private mapUnique(err: unknown, handle: string): unknown {
    if ((err as { code?: string }).code === '23505') return new Conflict(`A data definition with handle '${handle}' already exists.`, { handle });
    return err;
  }

  /** Checks the field map beyond its schema; returns it normalized (option labels and colours filled in). */
  async validateFields(workspaceId: string, input: Record<string, FieldInput>, selfId: string, selfHandle?: string): Promise<Record<string, FieldDef>> {
    const issues: DecodeIssue[] = [];
    const out: Record<string, FieldDef> = {};
    const relTargets: { handle: string; ref: string }[] = [];
    for (const [handle, f] of Object.entries(input)) {
      const at = (k?: string): (string | number)[] => (k ? ['fields', handle, k] : ['fields', handle]);
      if (!FIELD_HANDLE_RE.test(handle)) {
        issues.push({ _tag: 'Refinement', path: at(), message: 'a field handle is a letter, then letters, digits and _ (at most 64)' });
        continue;
      }
      if (RESERVED.has(handle.toLowerCase())) {
        issues.push({ _tag: 'Refinement', path: at(), message: `'${handle}' is reserved (id, createdAt, updatedAt, deletedAt)` });
        continue;
      }
      const def: FieldDef = { name: f.name, type: f.type };
      if (f.description !== undefined) def.description = f.description;
      if (f.variant !== undefined) {
        if (f.type !== 'text') issues.push({ _tag: 'Refinement', path: at('variant'), message: 'a variant is only allowed on text fields' });
        def.variant = f.variant;
      }
      const isSelect = f.type === 'select' || f.type === 'multi-select';
      if (isSelect) {
        if (!f.options || f.options.length === 0) issues.push({ _tag: 'Missing', path: at('options'), message: `${f.type} fields need at least one option` });
        else {
          const seen = new Set<string>();
          f.options.forEach((o, i) => {
            if (seen.has(o.value)) issues.push({ _tag: 'Refinement', path: [...at('options'), i, 'value'], message: `duplicate option value '${o.value}'` });
            seen.add(o.value);
          });
          def.options = f.options.map((o) => ({ value: o.value, label: o.label ?? o.value, color: o.color ?? '' }));
        }
      } else if (f.options !== undefined) issues.push({ _tag: 'Refinement', path: at('options'), message: 'options are only allowed on select and multi-select fields' });
      if (f.type === 'relationship') {
        if (!f.dataDefinitionId) issues.push({ _tag: 'Missing', path: at('dataDefinitionId'), message: 'relationship fields need dataDefinitionId' });
        else relTargets.push({ handle, ref: f.dataDefinitionId });
      } else if (f.dataDefinitionId !== undefined) issues.push({ _tag: 'Refinement', path: at('dataDefinitionId'), message: 'dataDefinitionId is only allowed on relationship fields' });
      if (f.materialized) {
        def.materialized = { sql: f.materialized.sql };
        if (f.unique) issues.push({ _tag: 'Refinement', path: at('unique'), message: 'a materialized field cannot be unique' });
        if (f.required) issues.push({ _tag: 'Refinement', path: at('required'), message: 'a materialized field cannot be required' });
      }
      if (f.unique) {
        if (['json', 'files', 'multi-select'].includes(f.type)) issues.push({ _tag: 'Refinement', path: at('unique'), message: `${f.type} fields cannot be unique` });
        def.unique = true;
      }
      if (f.required) def.required = true;
      out[handle] = def;
    }
    const lower = new Map<string, string>();
    for (const h of Object.keys(out)) {
      const k = snakeAlias(h);
      if (lower.has(k)) issues.push({ _tag: 'Refinement', path: ['fields', h], message: `field '${h}' collides with '${lower.get(k)}' as a SQL column name` });
      lower.set(k, h);
    }
    for (const { handle, ref } of relTargets) {
      const parsed = parsePathRef(ref);
      const target = parsed && 'id' in parsed && parsed.id === selfId ? { id: selfId } : await this.find(workspaceId, ref);
      if (!target) issues.push({ _tag: 'Refinement', path: ['fields', handle, 'dataDefinitionId'], message: 'no data definition with this id in the workspace' });
      else out[handle].dataDefinitionId = target.id;
    }
    for (const [handle, f] of Object.entries(out)) {
      if (!f.materialized) continue;
      if (!this.checkMaterialized) {
        issues.push({ _tag: 'Refinement', path: ['fields', handle, 'materialized'], message: 'materialized fields need a query engine (load the query plugin and an engine adapter)' });
        continue;
      }
      const problem = await this.checkMaterialized(workspaceId, f.materialized.sql, selfHandle ? { handle: selfHandle } : null);
      if (problem) issues.push({ _tag: 'Refinement', path: ['fields', handle, 'materialized', 'sql'], message: problem });
    }
    if (issues.length) throw new DecodeError(issues);
    return out;
  }
}
