/**
 * Workflow definitions: versioned code + config + ui. Every change of `code`, `config` or `ui`
 * (by value) increments `version` and stores the new version; earlier versions stay readable
 * (`GET /workflows/{id}/versions/{version}`) and runnable. Renames and description changes keep
 * the version. Runs go through the core sandbox with no capabilities.
 */
import { isUuid, slugify } from '../../core/tenancy/index.ts';
import type { Database } from '../../core/db/index.ts';
import { uuidv7 } from '../../core/crypto/index.ts';
import { Conflict, NotFound } from '../../core/errors/index.ts';
import type { Sandbox } from '../../core/sandbox/index.ts';
import type { WorkflowRunResult, WorkflowsService as WorkflowsApi } from './api.ts';

type Row = Record<string, unknown>;

export interface WorkflowInput {
  name: string;
  handle?: string;
  description?: string | null;
  code: string;
  config?: Record<string, unknown>;
  ui?: Record<string, unknown>;
}

const handleOf = (name: string) => slugify(name).slice(0, 100).replace(/-+$/g, '') || 'workflow';

/** JSON equality independent of key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v ?? null);
}

export function workflowView(r: Row, workspaceHandle: string) {
  return {
    id: r.id as string,
    name: r.name as string,
    handle: r.handle as string,
    url: `/w/${workspaceHandle}/workflows/${r.handle as string}`,
    description: (r.description as string | null) ?? null,
    code: r.code as string,
    version: r.version as number,
    config: (r.config as Record<string, unknown>) ?? {},
    ui: (r.ui as Record<string, unknown>) ?? {},
    createdAt: (r.created_at as Date).toISOString(),
    updatedAt: (r.updated_at as Date).toISOString(),
  };
}

function versionView(r: Row) {
  return {
    workflowId: r.workflow_id as string,
    version: r.version as number,
    code: r.code as string,
    config: (r.config as Record<string, unknown>) ?? {},
    ui: (r.ui as Record<string, unknown>) ?? {},
    createdAt: (r.created_at as Date).toISOString(),
  };
}

export class WorkflowsStore implements WorkflowsApi {
  private readonly db: Database;
  private readonly sandbox: Sandbox;

  constructor(db: Database, sandbox: Sandbox) {
    this.db = db;
    this.sandbox = sandbox;
  }

  async list(workspaceId: string): Promise<Row[]> {
    return this.db.query('SELECT * FROM workflows_workflows WHERE workspace_id = $1 ORDER BY created_at, id', [workspaceId]);
  }

  async get(workspaceId: string, idOrHandle: string): Promise<Row> {
    const rows = isUuid(idOrHandle)
      ? await this.db.query('SELECT * FROM workflows_workflows WHERE workspace_id = $1 AND id = $2', [workspaceId, idOrHandle])
      : await this.db.query('SELECT * FROM workflows_workflows WHERE workspace_id = $1 AND handle = $2', [workspaceId, idOrHandle]);
    if (rows.length === 0) throw new NotFound('Workflow not found.');
    return rows[0];
  }

  async create(workspaceId: string, input: WorkflowInput): Promise<Row> {
    const id = uuidv7();
    const handle = input.handle ?? handleOf(input.name);
    return this.db.transaction(async (c) => {
      const res = await c.query(
        `INSERT INTO workflows_workflows (id, workspace_id, name, handle, description, code, version, config, ui)
         VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8) ON CONFLICT (workspace_id, handle) DO NOTHING RETURNING *`,
        [id, workspaceId, input.name, handle, input.description ?? null, input.code, JSON.stringify(input.config ?? {}), JSON.stringify(input.ui ?? {})],
      );
      if (res.rowCount === 0) throw new Conflict(`A workflow with handle '${handle}' already exists.`);
      await c.query('INSERT INTO workflows_versions (workflow_id, workspace_id, version, code, config, ui) VALUES ($1, $2, 1, $3, $4, $5)', [
        id,
        workspaceId,
        input.code,
        JSON.stringify(input.config ?? {}),
        JSON.stringify(input.ui ?? {}),
      ]);
      return res.rows[0];
    });
  }

  async patch(workspaceId: string, idOrHandle: string, input: Partial<WorkflowInput>): Promise<Row> {
    const current = await this.get(workspaceId, idOrHandle);
    return this.db.transaction(async (c) => {
      // Lock the row so concurrent changes get consecutive versions.
      const locked = (await c.query('SELECT * FROM workflows_workflows WHERE workspace_id = $1 AND id = $2 FOR UPDATE', [workspaceId, current.id])).rows[0];
      if (!locked) throw new NotFound('Workflow not found.');
      const code = input.code ?? (locked.code as string);
      const config = input.config ?? (locked.config as Record<string, unknown>);
      const ui = input.ui ?? (locked.ui as Record<string, unknown>);
      const changed = code !== locked.code || canonical(config) !== canonical(locked.config) || canonical(ui) !== canonical(locked.ui);
      const version = (locked.version as number) + (changed ? 1 : 0);
      let res;
      try {
        res = await c.query(
          `UPDATE workflows_workflows SET name = $3, handle = $4, description = $5, code = $6, config = $7, ui = $8, version = $9, updated_at = now()
           WHERE workspace_id = $1 AND id = $2 RETURNING *`,
          [
            workspaceId,
            locked.id,
            input.name ?? locked.name,
            input.handle ?? locked.handle,
            input.description === undefined ? locked.description : input.description,
            code,
            JSON.stringify(config),
            JSON.stringify(ui),
            version,
          ],
        );
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw new Conflict(`A workflow with handle '${input.handle}' already exists.`);
        throw err;
      }
      if (changed) {
        await c.query('INSERT INTO workflows_versions (workflow_id, workspace_id, version, code, config, ui) VALUES ($1, $2, $3, $4, $5, $6)', [
          locked.id,
          workspaceId,
          version,
          code,
          JSON.stringify(config),
          JSON.stringify(ui),
        ]);
      }
      return res.rows[0];
    });
  }

  async delete(workspaceId: string, idOrHandle: string): Promise<void> {
    const current = await this.get(workspaceId, idOrHandle);
    await this.db.query('DELETE FROM workflows_workflows WHERE workspace_id = $1 AND id = $2', [workspaceId, current.id]);
  }

  async versions(workspaceId: string, idOrHandle: string) {
    const current = await this.get(workspaceId, idOrHandle);
    const rows = await this.db.query('SELECT * FROM workflows_versions WHERE workspace_id = $1 AND workflow_id = $2 ORDER BY version DESC', [workspaceId, current.id]);
    return rows.map(versionView);
  }

  async version(workspaceId: string, idOrHandle: string, version: number) {
    const current = await this.get(workspaceId, idOrHandle);
    const rows = await this.db.query('SELECT * FROM workflows_versions WHERE workspace_id = $1 AND workflow_id = $2 AND version = $3', [workspaceId, current.id, version]);
    if (rows.length === 0) throw new NotFound(`Version ${version} of this workflow was not found.`);
    return versionView(rows[0]);
  }

  // --- WorkflowsService (api.ts) --------------------------------------------------------

  async exists(workspaceId: string, workflowId: string, version?: number | null): Promise<boolean> {
    try {
      if (version) await this.version(workspaceId, workflowId, version);
      else await this.get(workspaceId, workflowId);
      return true;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return false;
      throw err;
    }
  }

  async run(workspaceId: string, workflowId: string, opts: { version?: number | null; input?: unknown; signal?: AbortSignal; timeoutMs?: number }): Promise<WorkflowRunResult> {
    const wf = await this.get(workspaceId, workflowId);
    const v = opts.version ? await this.version(workspaceId, wf.id as string, opts.version) : { version: wf.version as number, code: wf.code as string };
    const wfId = wf.id as string;
    const result = await this.sandbox.run({ code: v.code, input: opts.input ?? null, signal: opts.signal, limits: opts.timeoutMs ? { timeoutMs: Math.min(opts.timeoutMs, this.sandbox.limits.timeoutMs) } : undefined });
    return {
      workflowId: wfId,
      version: v.version,
      status: result.ok ? 'succeeded' : 'failed',
      output: result.ok ? result.output : null,
      error: result.ok ? null : result.error,
      logs: result.logs,
      durationMs: result.durationMs,
    };
  }
}
