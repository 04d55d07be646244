/**
 * Automations: storage of automations, their resources and triggers (hand-written SQL on the pg
 * pool, every query scoped by workspace), and the validation of resources and trigger configs.
 */
import { isUuid, slugify } from '../../core/tenancy/index.ts';
import type pg from 'pg';
import { CronExpressionParser } from 'cron-parser';
import type { Database } from '../../core/db/index.ts';
import { randomToken, uuidv7, type SecretBox } from '../../core/crypto/index.ts';
import { Conflict, InvalidRequest, NotFound } from '../../core/errors/index.ts';
import type { DataService } from '../data/api.ts';
import type { ChannelsService } from '../channels/api.ts';
import type { WorkflowsService } from '../workflows/api.ts';

export type TriggerType = 'manual' | 'schedule' | 'webhook' | 'data_event';
export type ResourceType = 'data_definition' | 'channel' | 'workflow' | 'http';

export interface ResourceInput {
  id?: string;
  label: string;
  resourceType: ResourceType;
  resourceRef: string;
  config?: Record<string, unknown>;
}

export interface TriggerInput {
  id?: string;
  name?: string;
  type: TriggerType;
  enabled?: boolean;
  config?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

export interface AutomationInput {
  name: string;
  handle?: string;
  description?: string | null;
  enabled?: boolean;
  scriptSource: string;
  resources?: ResourceInput[];
  triggers?: TriggerInput[];
}

export interface ResourceRecord {
  id: string;
  workspaceId: string;
  automationId: string;
  label: string;
  resourceType: ResourceType;
  resourceRef: string;
  config: Record<string, unknown>;
  position: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface TriggerRecord {
  id: string;
  workspaceId: string;
  automationId: string;
  name: string;
  type: TriggerType;
  enabled: boolean;
  position: number;
  config: Record<string, unknown>;
  metadata: Record<string, unknown>;
  publicId: string | null;
  secretBox: string | null;
  signingSecretBox: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface AutomationRecord {
  id: string;
  workspaceId: string;
  name: string;
  handle: string;
  description: string | null;
  enabled: boolean;
  scriptSource: string;
  lastRunAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  resources: ResourceRecord[];
  triggers: TriggerRecord[];
}

export interface OptionalServices {
  data?: DataService;
  channels?: ChannelsService;
  workflows?: WorkflowsService;
}

type Row = Record<string, unknown>;
type Queryable = Pick<pg.PoolClient, 'query'>;

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** The handle an automation gets from its name. */
export const handleFromName = (name: string): string => slugify(name).slice(0, 100).replace(/-+$/g, '') || 'automation';

function resourceFromRow(r: Row): ResourceRecord {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    automationId: r.automation_id as string,
    label: r.label as string,
    resourceType: r.resource_type as ResourceType,
    resourceRef: r.resource_ref as string,
    config: (r.config as Record<string, unknown>) ?? {},
    position: r.position as number,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

export function triggerFromRow(r: Row): TriggerRecord {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    automationId: r.automation_id as string,
    name: r.name as string,
    type: r.type as TriggerType,
    enabled: r.enabled as boolean,
    position: r.position as number,
    config: (r.config as Record<string, unknown>) ?? {},
    metadata: (r.metadata as Record<string, unknown>) ?? {},
    publicId: (r.public_id as string | null) ?? null,
    secretBox: (r.secret_box as string | null) ?? null,
    signingSecretBox: (r.signing_secret_box as string | null) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

function automationFromRow(r: Row): Omit<AutomationRecord, 'resources' | 'triggers'> {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    name: r.name as string,
    handle: r.handle as string,
    description: (r.description as string | null) ?? null,
    enabled: r.enabled as boolean,
    scriptSource: r.script_source as string,
    lastRunAt: (r.last_run_at as Date | null) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

export const DATA_EVENTS = ['created', 'updated', 'deleted'] as const;

/** The schedule-change hooks the trigger layer registers (pg-boss schedules per trigger). */
export interface ScheduleSync {
  sync(trigger: TriggerRecord, automationEnabled: boolean): Promise<void>;
  remove(triggerId: string): Promise<void>;
  /** Called after any change to a workspace's automations (clears trigger caches). */
  changed?(workspaceId: string): void;
}

export class AutomationsService {
  scheduleSync: ScheduleSync | undefined;

  private readonly db: Database;
  private readonly secrets: SecretBox;
  private readonly services: OptionalServices;
  private readonly baseUrl: string;

  constructor(db: Database, secrets: SecretBox, services: OptionalServices, baseUrl: string) {
    this.db = db;
    this.secrets = secrets;
    this.services = services;
    this.baseUrl = baseUrl;
  }

  webhookUrl(t: TriggerRecord): string | null {
    if (t.type !== 'webhook' || !t.publicId || !t.secretBox) return null;
    return `${this.baseUrl}/api/v1/automations/webhooks/${t.publicId}/${this.secrets.decrypt(t.secretBox)}`;
  }

  view(a: AutomationRecord, workspaceHandle: string) {
    return {
      id: a.id,
      name: a.name,
      handle: a.handle,
      url: `/w/${workspaceHandle}/automations/${a.handle}`,
      description: a.description,
      enabled: a.enabled,
      scriptSource: a.scriptSource,
      resources: a.resources.map((r) => ({
        id: r.id,
        label: r.label,
        resourceType: r.resourceType,
        resourceRef: r.resourceRef,
        config: r.config,
        position: r.position,
        createdAt: r.createdAt.toISOString(),
        updatedAt: r.updatedAt.toISOString(),
      })),
      triggers: a.triggers.map((t) => ({
        id: t.id,
        name: t.name,
        type: t.type,
        enabled: t.enabled,
        position: t.position,
        config: t.type === 'webhook' ? { ...t.config, hasSigningSecret: !!t.signingSecretBox } : t.config,
        metadata: t.metadata,
        webhookUrl: this.webhookUrl(t),
        createdAt: t.createdAt.toISOString(),
        updatedAt: t.updatedAt.toISOString(),
      })),
      lastRunAt: iso(a.lastRunAt),
      createdAt: a.createdAt.toISOString(),
      updatedAt: a.updatedAt.toISOString(),
    };
  }

  private async load(q: Queryable, workspaceId: string, rows: Row[]): Promise<AutomationRecord[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id as string);
    const res = await q.query('SELECT * FROM automations_resources WHERE workspace_id = $1 AND automation_id = ANY($2::uuid[]) ORDER BY position, created_at', [workspaceId, ids]);
    const trg = await q.query('SELECT * FROM automations_triggers WHERE workspace_id = $1 AND automation_id = ANY($2::uuid[]) ORDER BY position, created_at', [workspaceId, ids]);
    return rows.map((r) => ({
      ...automationFromRow(r),
      resources: res.rows.filter((x) => x.automation_id === r.id).map(resourceFromRow),
      triggers: trg.rows.filter((x) => x.automation_id === r.id).map(triggerFromRow),
    }));
  }

  async list(workspaceId: string): Promise<AutomationRecord[]> {
    const { rows } = await this.db.pool.query('SELECT a.*, (SELECT max(r.created_at) FROM automations_runs r WHERE r.automation_id = a.id) AS last_run_at FROM automations_automations a WHERE a.workspace_id = $1 ORDER BY a.created_at, a.id', [workspaceId]);
    return this.load(this.db.pool, workspaceId, rows);
  }

  /** By id or handle; another workspace's id is NotFound. */
  async get(workspaceId: string, idOrHandle: string, q: Queryable = this.db.pool): Promise<AutomationRecord> {
    const { rows } = isUuid(idOrHandle)
      ? await q.query('SELECT a.*, (SELECT max(r.created_at) FROM automations_runs r WHERE r.automation_id = a.id) AS last_run_at FROM automations_automations a WHERE a.workspace_id = $1 AND a.id = $2', [workspaceId, idOrHandle])
      : await q.query('SELECT a.*, (SELECT max(r.created_at) FROM automations_runs r WHERE r.automation_id = a.id) AS last_run_at FROM automations_automations a WHERE a.workspace_id = $1 AND a.handle = $2', [workspaceId, idOrHandle]);
    if (rows.length === 0) throw new NotFound('Automation not found.');
    return (await this.load(q, workspaceId, rows))[0];
  }

  async create(workspaceId: string, input: AutomationInput): Promise<AutomationRecord> {
    await this.validateResources(workspaceId, input.resources ?? []);
    const triggers = (input.triggers ?? []).map((t) => this.normalizeTrigger(t));
    const id = uuidv7();
    const handle = input.handle ?? handleFromName(input.name);
    const created = await this.db.transaction(async (c) => {
      const ins = await c.query(
        `INSERT INTO automations_automations (id, workspace_id, name, handle, description, enabled, script_source)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (workspace_id, handle) DO NOTHING RETURNING id`,
        [id, workspaceId, input.name, handle, input.description ?? null, input.enabled ?? true, input.scriptSource],
      );
      if (ins.rowCount === 0) throw new Conflict(`An automation with handle '${handle}' already exists.`);
      await this.writeResources(c, workspaceId, id, input.resources ?? [], []);
      await this.writeTriggers(c, workspaceId, id, triggers, []);
      return this.get(workspaceId, id, c);
    });
    this.scheduleSync?.changed?.(workspaceId);
    await this.syncSchedules(created);
    return created;
  }

  async patch(workspaceId: string, idOrHandle: string, input: Partial<AutomationInput>): Promise<AutomationRecord> {
    const current = await this.get(workspaceId, idOrHandle);
    if (input.resources) await this.validateResources(workspaceId, input.resources);
    const triggers = input.triggers?.map((t) => this.normalizeTrigger(t));
    const removedTriggers = triggers ? current.triggers.filter((t) => !triggers.some((x) => x.id === t.id)).map((t) => t.id) : [];
    const updated = await this.db.transaction(async (c) => {
      const sets: string[] = [];
      const params: unknown[] = [workspaceId, current.id];
      const set = (col: string, v: unknown) => {
        params.push(v);
        sets.push(`${col} = $${params.length}`);
      };
      if (input.name !== undefined) set('name', input.name);
      if (input.handle !== undefined) set('handle', input.handle);
      if (input.description !== undefined) set('description', input.description);
      if (input.enabled !== undefined) set('enabled', input.enabled);
      if (input.scriptSource !== undefined) set('script_source', input.scriptSource);
      sets.push('updated_at = now()');
      try {
        await c.query(`UPDATE automations_automations SET ${sets.join(', ')} WHERE workspace_id = $1 AND id = $2`, params);
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw new Conflict(`An automation with handle '${input.handle}' already exists.`);
        throw err;
      }
      if (input.resources) await this.writeResources(c, workspaceId, current.id, input.resources, current.resources);
      if (triggers) await this.writeTriggers(c, workspaceId, current.id, triggers, current.triggers);
      return this.get(workspaceId, current.id, c);
    });
    this.scheduleSync?.changed?.(workspaceId);
    for (const id of removedTriggers) await this.scheduleSync?.remove(id);
    await this.syncSchedules(updated);
    return updated;
  }

  async delete(workspaceId: string, idOrHandle: string): Promise<void> {
    const current = await this.get(workspaceId, idOrHandle);
    await this.db.query('DELETE FROM automations_automations WHERE workspace_id = $1 AND id = $2', [workspaceId, current.id]);
    this.scheduleSync?.changed?.(workspaceId);
    for (const t of current.triggers) if (t.type === 'schedule') await this.scheduleSync?.remove(t.id);
  }

  private async syncSchedules(a: AutomationRecord): Promise<void> {
    if (!this.scheduleSync) return;
    for (const t of a.triggers) if (t.type === 'schedule') await this.scheduleSync.sync(t, a.enabled);
  }

  // --- resources ----------------------------------------------------------------------------

  private async validateResources(workspaceId: string, resources: ResourceInput[]): Promise<void> {
    const labels = new Set<string>();
    for (const [i, r] of resources.entries()) {
      if (labels.has(r.label)) throw new InvalidRequest(`resources[${i}].label '${r.label}' is used twice.`);
      labels.add(r.label);
      const unavailable = (plugin: string) => new InvalidRequest(`resources[${i}]: resourceType '${r.resourceType}' is unavailable (the ${plugin} plugin is not loaded).`);
      const missing = () => new InvalidRequest(`resources[${i}]: ${r.resourceType} '${r.resourceRef}' was not found in this workspace.`);
      switch (r.resourceType) {
        case 'data_definition': {
          if (!this.services.data) throw unavailable('data');
          try {
            await this.services.data.query(workspaceId, r.resourceRef, { pageSize: 1 });
          } catch (err) {
            if ((err as { statusCode?: number }).statusCode === 404) throw missing();
            throw err;
          }
          break;
        }
        case 'channel':
          if (!this.services.channels) throw unavailable('channels');
          if (!isUuid(r.resourceRef)) throw missing();
          break;
        case 'workflow': {
          if (!this.services.workflows) throw unavailable('workflows');
          const v = r.config?.version;
          if (v !== undefined && v !== null && !(Number.isInteger(v) && (v as number) > 0)) throw new InvalidRequest(`resources[${i}].config.version must be a positive integer.`);
          if (!(await this.services.workflows.exists(workspaceId, r.resourceRef, (v as number | undefined) ?? null))) throw missing();
          break;
        }
        case 'http': {
          const hosts = r.resourceRef.split(',').map((h) => h.trim()).filter(Boolean);
          if (hosts.length === 0 || !hosts.every((h) => h === '*' || /^(\*\.)?[a-z0-9.-]+(:\d+)?$/i.test(h))) {
            throw new InvalidRequest(`resources[${i}].resourceRef must be comma-separated host names (or '*').`);
          }
          break;
        }
        default:
          throw new InvalidRequest(`resources[${i}].resourceType '${String(r.resourceType)}' is not supported.`);
      }
    }
  }

  private async writeResources(c: Queryable, workspaceId: string, automationId: string, input: ResourceInput[], existing: ResourceRecord[]): Promise<void> {
    for (const r of input) if (r.id && !existing.some((e) => e.id === r.id)) throw new InvalidRequest(`Resource '${r.id}' does not belong to this automation.`);
    const keep = new Set(input.filter((r) => r.id).map((r) => r.id));
    const drop = existing.filter((e) => !keep.has(e.id)).map((e) => e.id);
    if (drop.length) await c.query('DELETE FROM automations_resources WHERE workspace_id = $1 AND id = ANY($2::uuid[])', [workspaceId, drop]);
    // Labels are unique per automation: park kept rows under temporary labels first.
    await c.query(`UPDATE automations_resources SET label = '~' || id::text WHERE workspace_id = $1 AND automation_id = $2`, [workspaceId, automationId]);
    for (const [position, r] of input.entries()) {
      if (r.id) {
        await c.query(
          `UPDATE automations_resources SET label = $3, resource_type = $4, resource_ref = $5, config = $6, position = $7, updated_at = now()
           WHERE workspace_id = $1 AND id = $2`,
          [workspaceId, r.id, r.label, r.resourceType, r.resourceRef, JSON.stringify(r.config ?? {}), position],
        );
      } else {
        await c.query(
          `INSERT INTO automations_resources (id, workspace_id, automation_id, label, resource_type, resource_ref, config, position)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [uuidv7(), workspaceId, automationId, r.label, r.resourceType, r.resourceRef, JSON.stringify(r.config ?? {}), position],
        );
      }
    }
  }

  // --- triggers -----------------------------------------------------------------------------

  /** Validates a trigger's config; returns the config to store and the signing secret (write-only). */
  normalizeTrigger(t: TriggerInput): TriggerInput & { signingSecret?: string | null } {
    const config = { ...(t.config ?? {}) };
    const bad = (msg: string) => new InvalidRequest(`Trigger '${t.name ?? t.type}': ${msg}`);
    let signingSecret: string | null | undefined;
    switch (t.type) {
      case 'manual':
        break;
      case 'webhook': {
        if ('hasSigningSecret' in config) delete config.hasSigningSecret;
        if ('signingSecret' in config) {
          const s = config.signingSecret;
          delete config.signingSecret;
          if (s === null) signingSecret = null;
          else if (typeof s !== 'string' || !/^whsec_[A-Za-z0-9+/=]{16,}$/.test(s)) throw bad("config.signingSecret must look like 'whsec_<base64>' (Standard Webhooks) or be null.");
          else signingSecret = s;
        }
        break;
      }
      case 'schedule': {
        const cron = config.cron;
        const tz = config.timezone ?? 'UTC';
        if (typeof cron !== 'string' || cron.trim().split(/\s+/).length !== 5) throw bad('config.cron must be a 5-field cron expression (minute granularity).');
        if (typeof tz !== 'string') throw bad('config.timezone must be an IANA time zone name.');
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: tz });
        } catch {
          throw bad(`config.timezone '${tz}' is not a known time zone.`);
        }
        try {
          CronExpressionParser.parse(cron.trim(), { tz }).next();
        } catch (err) {
          throw bad(`config.cron is invalid: ${(err as Error).message}`);
        }
        config.cron = cron.trim();
        config.timezone = tz;
        break;
      }
      case 'data_event': {
        if (!this.services.data) throw new InvalidRequest('Trigger type data_event is unavailable (the data plugin is not loaded).');
        if (typeof config.definition !== 'string' || !config.definition) throw bad('config.definition (a data definition id or handle) is required.');
        const events = config.events ?? [...DATA_EVENTS];
        if (!Array.isArray(events) || events.length === 0 || !events.every((e) => (DATA_EVENTS as readonly string[]).includes(e as string))) {
          throw bad('config.events must be a non-empty array of created, updated, deleted.');
        }
        config.events = [...new Set(events)];
        if (config.filter !== undefined && config.filter !== null && (typeof config.filter !== 'object' || Array.isArray(config.filter))) throw bad('config.filter must be an object of field -> value.');
        break;
      }
      default:
        throw bad(`type '${String(t.type)}' is not supported.`);
    }
    return { ...t, config, ...(signingSecret !== undefined ? { signingSecret } : {}) };
  }

  /** A data_event trigger's definition must exist in the workspace (matched later by id or handle). */
  private async checkDefinition(workspaceId: string, ref: string): Promise<void> {
    try {
      await this.services.data!.query(workspaceId, ref, { pageSize: 1 });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) throw new InvalidRequest(`Data definition '${ref}' was not found in this workspace.`);
      throw err;
    }
  }

  private async writeTriggers(c: Queryable, workspaceId: string, automationId: string, input: (TriggerInput & { signingSecret?: string | null })[], existing: TriggerRecord[]): Promise<void> {
    for (const t of input) {
      const e = t.id ? existing.find((x) => x.id === t.id) : undefined;
      if (t.id && !e) throw new InvalidRequest(`Trigger '${t.id}' does not belong to this automation.`);
      if (e && e.type !== t.type) throw new InvalidRequest(`Trigger '${t.id}' is a ${e.type} trigger; its type cannot change.`);
    }
    const keep = new Set(input.filter((t) => t.id).map((t) => t.id));
    const drop = existing.filter((e) => !keep.has(e.id)).map((e) => e.id);
    if (drop.length) await c.query('DELETE FROM automations_triggers WHERE workspace_id = $1 AND id = ANY($2::uuid[])', [workspaceId, drop]);
    for (const [position, t] of input.entries()) {
      if (t.type === 'data_event') await this.checkDefinition(workspaceId, t.config!.definition as string);
      const name = t.name ?? `${t.type} trigger`;
      const signing = t.signingSecret === undefined ? undefined : t.signingSecret === null ? null : this.secrets.encrypt(t.signingSecret);
      if (t.id) {
        await c.query(
          `UPDATE automations_triggers SET name = $3, enabled = $4, position = $5, config = $6, metadata = $7,
             signing_secret_box = CASE WHEN $8::boolean THEN $9 ELSE signing_secret_box END, updated_at = now()
           WHERE workspace_id = $1 AND id = $2`,
          [workspaceId, t.id, name, t.enabled ?? true, position, JSON.stringify(t.config ?? {}), JSON.stringify(t.metadata ?? {}), signing !== undefined, signing ?? null],
        );
      } else {
        const webhook = t.type === 'webhook';
        await c.query(
          `INSERT INTO automations_triggers (id, workspace_id, automation_id, name, type, enabled, position, config, metadata, public_id, secret_box, signing_secret_box)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
          [
            uuidv7(),
            workspaceId,
            automationId,
            name,
            t.type,
            t.enabled ?? true,
            position,
            JSON.stringify(t.config ?? {}),
            JSON.stringify(t.metadata ?? {}),
            webhook ? `wh_${randomToken(12).replace(/[^A-Za-z0-9]/g, 'x')}` : null,
            webhook ? this.secrets.encrypt(randomToken(32)) : null,
            signing ?? null,
          ],
        );
      }
    }
  }

  // --- lookups for triggers -----------------------------------------------------------------

  /**
   * A webhook trigger with its automation and resources, in one round trip (the hot path of
   * webhook deliveries). The automation's `triggers` holds only this trigger.
   */
  async webhookTrigger(publicId: string): Promise<{ trigger: TriggerRecord; automationEnabled: boolean; automation: AutomationRecord } | null> {
    const rows = await this.db.query(
      `SELECT t.*, a.enabled AS automation_enabled, to_jsonb(a.*) AS automation,
         (SELECT coalesce(jsonb_agg(to_jsonb(r.*) ORDER BY r.position), '[]'::jsonb) FROM automations_resources r WHERE r.automation_id = a.id) AS resources
       FROM automations_triggers t JOIN automations_automations a ON a.id = t.automation_id
       WHERE t.public_id = $1 AND t.type = 'webhook'`,
      [publicId],
    );
    if (rows.length === 0) return null;
    const trigger = triggerFromRow(rows[0]);
    const dates = (r: Row) => ({ ...r, created_at: new Date(r.created_at as string), updated_at: new Date(r.updated_at as string), last_run_at: r.last_run_at ? new Date(r.last_run_at as string) : null });
    const automation: AutomationRecord = {
      ...automationFromRow(dates(rows[0].automation as Row)),
      resources: (rows[0].resources as Row[]).map((r) => resourceFromRow(dates(r))),
      triggers: [trigger],
    };
    return { trigger, automationEnabled: rows[0].automation_enabled as boolean, automation };
  }

  async triggerById(workspaceId: string, triggerId: string): Promise<{ trigger: TriggerRecord; automationEnabled: boolean } | null> {
    if (!isUuid(triggerId)) return null;
    const rows = await this.db.query(
      `SELECT t.*, a.enabled AS automation_enabled FROM automations_triggers t JOIN automations_automations a ON a.id = t.automation_id
       WHERE t.workspace_id = $1 AND t.id = $2`,
      [workspaceId, triggerId],
    );
    if (rows.length === 0) return null;
    return { trigger: triggerFromRow(rows[0]), automationEnabled: rows[0].automation_enabled as boolean };
  }

  /** Enabled data_event triggers of enabled automations in a workspace. */
  async dataEventTriggers(workspaceId: string): Promise<TriggerRecord[]> {
    const rows = await this.db.query(
      `SELECT t.* FROM automations_triggers t JOIN automations_automations a ON a.id = t.automation_id
       WHERE t.workspace_id = $1 AND t.type = 'data_event' AND t.enabled AND a.enabled`,
      [workspaceId],
    );
    return rows.map(triggerFromRow);
  }

  /** Every schedule trigger (for reconciling pg-boss schedules at start). */
  async scheduleTriggers(): Promise<{ trigger: TriggerRecord; automationEnabled: boolean }[]> {
    const rows = await this.db.query(
      `SELECT t.*, a.enabled AS automation_enabled FROM automations_triggers t JOIN automations_automations a ON a.id = t.automation_id WHERE t.type = 'schedule'`,
    );
    return rows.map((r) => ({ trigger: triggerFromRow(r), automationEnabled: r.automation_enabled as boolean }));
  }
}
