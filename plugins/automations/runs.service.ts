/**
 * Runs: the only place automation scripts execute (through the core sandbox).
 *
 * - `start` records the run (`running`) with its `received` event in one statement (`lastRunAt`
 *   is the newest run's `createdAt`, read from the runs index, so runs never contend on the
 *   automation row), deduplicated by delivery key (webhook delivery ids, schedule ticks, data events),
 *   then executes it in this process; `done` settles when the run is persisted as `succeeded` or
 *   `failed`. A failed script is always a failed run.
 * - Log events (`console.*`), then a `result` or `error` event, are written with the final status
 *   in one transaction.
 * - Recovery policy: a run still `running` after its deadline (`startedAt` + twice the sandbox
 *   timeout (waiting for a free sandbox worker, then running) + a grace period) can only belong
 *   to a process that died, because the sandbox ends every live run before it. Every node sweeps such runs at start and periodically and
 *   marks them `failed` with error code `interrupted` (never retried automatically: scripts may have
 *   side effects). At shutdown, runs in flight are cancelled and recorded as failed.
 */
import { isUuid } from '../../core/tenancy/index.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../core/db/index.ts';
import { uuidv7 } from '../../core/crypto/index.ts';
import { NotFound } from '../../core/errors/index.ts';
import type { ResourceBinding, RunResult, Sandbox, SandboxCapabilities } from '../../core/sandbox/index.ts';
import type { DataQuery } from '../data/api.ts';
import type { PostMessageInput } from '../channels/api.ts';
import { type AutomationRecord, type OptionalServices, type ResourceRecord, type TriggerRecord } from './automations.service.ts';

export interface RunnerConfig {
  timeoutMs: number;
  recoveryGraceMs: number;
  /** Runs of one workspace executing at once in this process; more wait (fairness between tenants). */
  maxConcurrentPerWorkspace: number;
}

/** A per-key FIFO semaphore with a bounded wait. */
class KeyedLimiter {
  private readonly state = new Map<string, { active: number; queue: { go: () => void }[] }>();
  private readonly max: number;

  constructor(max: number) {
    this.max = Math.max(1, max);
  }

  /** How many acquirers of `key` wait for a slot. */
  waiting(key: string): number {
    return this.state.get(key)?.queue.length ?? 0;
  }

  /** Resolves with a release function, or with null when no slot freed up within `waitMs` (or on abort). */
  acquire(key: string, waitMs: number, signal: AbortSignal): Promise<(() => void) | null> {
    let s = this.state.get(key);
    if (!s) this.state.set(key, (s = { active: 0, queue: [] }));
    const st = s;
    const release = () => {
      const next = st.queue.shift();
      if (next) next.go();
      else if (--st.active === 0) this.state.delete(key);
    };
    if (st.active < this.max) {
      st.active++;
      return Promise.resolve(release);
    }
    return new Promise((resolve) => {
      const entry = {
        go: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const giveUp = () => {
        const i = st.queue.indexOf(entry);
        if (i >= 0) st.queue.splice(i, 1);
        resolve(null);
      };
      const onAbort = () => {
        clearTimeout(timer);
        giveUp();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        giveUp();
      }, waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      st.queue.push(entry);
    });
  }
}

export interface RunRecord {
  id: string;
  workspaceId: string;
  automationId: string;
  triggerId: string | null;
  triggerType: string;
  triggerName: string;
  status: 'running' | 'succeeded' | 'failed';
  input: unknown;
  output: unknown;
  error: unknown;
  startedAt: Date;
  finishedAt: Date | null;
  durationMs: number | null;
  createdAt: Date;
}

type Row = Record<string, unknown>;

function runFromRow(r: Row): RunRecord {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    automationId: r.automation_id as string,
    triggerId: (r.trigger_id as string | null) ?? null,
    triggerType: r.trigger_type as string,
    triggerName: r.trigger_name as string,
    status: r.status as RunRecord['status'],
    input: r.input ?? null,
    output: r.output ?? null,
    error: r.error ?? null,
    startedAt: r.started_at as Date,
    finishedAt: (r.finished_at as Date | null) ?? null,
    durationMs: (r.duration_ms as number | null) ?? null,
    createdAt: r.created_at as Date,
  };
}

export function runView(r: RunRecord) {
  return {
    id: r.id,
    automationId: r.automationId,
    triggerId: r.triggerId,
    status: r.status,
    triggerType: r.triggerType,
    input: r.input,
    output: r.output,
    error: r.error,
    startedAt: r.startedAt.toISOString(),
    finishedAt: r.finishedAt ? r.finishedAt.toISOString() : null,
    durationMs: r.durationMs,
    createdAt: r.createdAt.toISOString(),
  };
}

function eventView(r: Row) {
  return {
    id: r.id as string,
    runId: r.run_id as string,
    type: r.type as 'received' | 'log' | 'result' | 'error',
    level: r.level as 'info' | 'error',
    message: r.message as string,
    payload: r.payload ?? null,
    meta: r.meta ?? null,
    createdAt: (r.created_at as Date).toISOString(),
  };
}

export interface StartedRun {
  run: RunRecord;
  duplicate: boolean;
  /** Settles when the run is finished and persisted (immediately for a duplicate). */
  done: Promise<RunRecord>;
}

const toQuery = (v: unknown): DataQuery => {
  const out: DataQuery = {};
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean') out[k] = x;
      else if (x !== undefined && x !== null) out[k] = JSON.stringify(x);
    }
  }
  return out;
};

const str = (v: unknown, what: string): string => {
  if (typeof v !== 'string' || !v) throw new TypeError(`${what} must be a non-empty string`);
  return v;
};

export class RunsService {
  private readonly inflight = new Map<string, { abort: AbortController; done: Promise<RunRecord> }>();
  private readonly limiter: KeyedLimiter;
  private stopping = false;

  private readonly db: Database;
  private readonly sandbox: Sandbox;
  private readonly services: OptionalServices;
  private readonly cfg: RunnerConfig;
  private readonly log: FastifyBaseLogger;

  constructor(db: Database, sandbox: Sandbox, services: OptionalServices, cfg: RunnerConfig, log: FastifyBaseLogger) {
    this.db = db;
    this.sandbox = sandbox;
    this.services = services;
    this.cfg = cfg;
    this.limiter = new KeyedLimiter(cfg.maxConcurrentPerWorkspace);
    this.log = log;
  }

  /** Runs of a workspace waiting on this server for one of its execution slots. */
  backlog(workspaceId: string): number {
    return this.limiter.waiting(workspaceId);
  }

  async start(a: AutomationRecord, trigger: TriggerRecord | null, triggerType: string, input: unknown, deliveryKey?: string | null): Promise<StartedRun> {
    const id = uuidv7();
    const inputJson = JSON.stringify(input === undefined ? null : input);
    // A run may wait up to one timeout for its workspace's turn, one for a sandbox worker, then
    // run for one: past that (plus a grace period) only a dead process can still hold it.
    const deadlineMs = 3 * this.cfg.timeoutMs + this.cfg.recoveryGraceMs;
    const label = trigger ? `${trigger.type} trigger '${trigger.name}'` : `${triggerType} run`;
    const rows = await this.db.query(
      `WITH r AS (
         INSERT INTO automations_runs (id, workspace_id, automation_id, trigger_id, trigger_type, trigger_name, status, input, delivery_key, deadline_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'running', $7::jsonb, $8, now() + ($9 || ' milliseconds')::interval)
         ON CONFLICT (automation_id, delivery_key) WHERE delivery_key IS NOT NULL DO NOTHING
         RETURNING *),
       e AS (
         INSERT INTO automations_run_events (id, workspace_id, run_id, seq, type, level, message, payload)
         SELECT $10, workspace_id, id, 0, 'received', 'info', $11, input FROM r)
       SELECT * FROM r`,
      [id, a.workspaceId, a.id, trigger?.id ?? null, triggerType, trigger?.name ?? triggerType, inputJson, deliveryKey ?? null, String(deadlineMs), uuidv7(), `Received from ${label}`],
    );
    if (rows.length === 0) {
      const existing = await this.db.query('SELECT * FROM automations_runs WHERE automation_id = $1 AND delivery_key = $2', [a.id, deliveryKey]);
      const run = runFromRow(existing[0]);
      const live = this.inflight.get(run.id);
      return { run, duplicate: true, done: live ? live.done : Promise.resolve(run) };
    }
    const run = runFromRow(rows[0]);
    const abort = new AbortController();
    const done = this.execute(run, a, abort.signal).finally(() => this.inflight.delete(run.id));
    this.inflight.set(run.id, { abort, done });
    return { run, duplicate: false, done };
  }

  private bindings(a: AutomationRecord): SandboxCapabilities {
    const resources: Record<string, ResourceBinding> = {};
    const fetchHosts: string[] = [];
    const ws = a.workspaceId;
    for (const r of a.resources) {
      const b = this.binding(ws, r, fetchHosts);
      if (b) resources[r.label] = b;
    }
    return { resources, fetch: fetchHosts.length > 0, fetchHosts };
  }

  private binding(ws: string, r: ResourceRecord, fetchHosts: string[]): ResourceBinding | null {
    const unavailable = (plugin: string) => async () => {
      throw new Error(`Resource '${r.label}' (${r.resourceType}) is unavailable: the ${plugin} plugin is not loaded.`);
    };
    switch (r.resourceType) {
      case 'data_definition': {
        const data = this.services.data;
        if (!data) return { query: unavailable('data'), get: unavailable('data'), upsert: unavailable('data') };
        return {
          query: async ([q]) => data.query(ws, r.resourceRef, toQuery(q)),
          get: async ([rowId]) => data.get(ws, r.resourceRef, str(rowId, 'rowId')),
          upsert: async ([rows]) => {
            const list = Array.isArray(rows) ? rows : [rows];
            const clean = list.map((x, i) => {
              if (!x || typeof x !== 'object' || Array.isArray(x)) throw new TypeError(`upsert: row ${i} must be an object {id?, data}`);
              const o = x as Record<string, unknown>;
              const d = o.data;
              if (!d || typeof d !== 'object' || Array.isArray(d)) throw new TypeError(`upsert: row ${i}.data must be an object`);
              return { ...(typeof o.id === 'string' ? { id: o.id } : {}), data: d as Record<string, unknown> };
            });
            return data.upsertMany(ws, r.resourceRef, clean);
          },
        };
      }
      case 'channel': {
        const channels = this.services.channels;
        if (!channels) return { post: unavailable('channels') };
        return {
          post: async ([msg]) => {
            let input: PostMessageInput;
            if (typeof msg === 'string') input = { text: msg };
            else if (msg && typeof msg === 'object' && !Array.isArray(msg)) {
              const m = msg as Record<string, unknown>;
              input = {
                text: typeof m.text === 'string' ? m.text : null,
                ...(typeof m.threadId === 'string' ? { threadId: m.threadId } : {}),
                ...(typeof m.kind === 'string' ? { kind: m.kind as PostMessageInput['kind'] } : {}),
                ...(typeof m.direction === 'string' ? { direction: m.direction as PostMessageInput['direction'] } : {}),
                ...(m.author && typeof m.author === 'object' ? { author: m.author as PostMessageInput['author'] } : {}),
                ...(m.metadata && typeof m.metadata === 'object' ? { metadata: m.metadata as Record<string, unknown> } : {}),
              };
            } else throw new TypeError('post: pass a text string or {text, threadId?, ...}');
            return channels.postMessage(ws, r.resourceRef, input);
          },
        };
      }
      case 'workflow': {
        const workflows = this.services.workflows;
        if (!workflows) return { run: unavailable('workflows') };
        const version = typeof r.config.version === 'number' ? r.config.version : null;
        return { run: async ([input], signal) => workflows.run(ws, r.resourceRef, { version, input, signal }) };
      }
      case 'http':
        fetchHosts.push(...r.resourceRef.split(',').map((h) => h.trim()).filter(Boolean));
        return null;
      default:
        return null;
    }
  }

  private async execute(run: RunRecord, a: AutomationRecord, signal: AbortSignal): Promise<RunRecord> {
    let result: RunResult;
    const release = await this.limiter.acquire(run.workspaceId, this.cfg.timeoutMs, signal);
    try {
      if (!release) {
        const message = signal.aborted
          ? 'The run was cancelled because the server is shutting down.'
          : `The workspace had ${this.cfg.maxConcurrentPerWorkspace} runs in progress on this server for ${this.cfg.timeoutMs} ms; this run was not started.`;
        result = { ok: false, output: null, error: { code: 'timeout', name: 'SandboxError', message }, logs: [], durationMs: 0, cpuMs: 0 };
      } else {
        result = await this.sandbox.run({ code: a.scriptSource, input: run.input, capabilities: this.bindings(a), signal, limits: { timeoutMs: this.cfg.timeoutMs } });
      }
    } catch (err) {
      this.log.error({ err, runId: run.id }, 'automation run failed in the host');
      result = { ok: false, output: null, error: { code: 'internal', name: 'InternalError', message: 'The run failed inside the server; see the server log.' }, logs: [], durationMs: 0, cpuMs: 0 };
    } finally {
      release?.();
    }
    if (signal.aborted && !result.ok) result.error.message = 'The run was cancelled because the server is shutting down.';
    const events: Row[] = result.logs.map((l, i) => ({ id: uuidv7(), seq: i + 1, type: 'log', level: l.level, message: l.message, meta: { method: l.method, at: l.at } }));
    const seq = events.length + 1;
    if (result.ok) events.push({ id: uuidv7(), seq, type: 'result', level: 'info', message: 'Run succeeded', payload: result.output, meta: { durationMs: result.durationMs, cpuMs: result.cpuMs } });
    else events.push({ id: uuidv7(), seq, type: 'error', level: 'error', message: `${result.error.code}: ${result.error.message}`, payload: result.error, meta: { durationMs: result.durationMs, cpuMs: result.cpuMs } });
    try {
      // One statement: the events and the final status commit together.
      const rows = await this.db.query(
        `WITH ev AS (
           INSERT INTO automations_run_events (id, workspace_id, run_id, seq, type, level, message, payload, meta)
           SELECT x.id, $1, $2, x.seq, x.type, x.level, x.message, x.payload, x.meta
           FROM jsonb_to_recordset($6::jsonb) AS x(id uuid, seq int, type text, level text, message text, payload jsonb, meta jsonb))
         UPDATE automations_runs SET status = $3, output = $4::jsonb, error = $5::jsonb, finished_at = clock_timestamp(),
           duration_ms = GREATEST(0, round(extract(epoch FROM clock_timestamp() - started_at) * 1000))::int
         WHERE workspace_id = $1 AND id = $2 AND status = 'running' RETURNING *`,
        [
          run.workspaceId,
          run.id,
          result.ok ? 'succeeded' : 'failed',
          result.ok ? JSON.stringify(result.output) : null,
          result.ok ? null : JSON.stringify(result.error),
          JSON.stringify(events.map((e) => ({ ...e, payload: e.payload === undefined ? null : e.payload }))),
        ],
      );
      return rows[0] ? runFromRow(rows[0]) : run;
    } catch (err) {
      this.log.error({ err, runId: run.id }, 'recording the run result failed');
      return run;
    }
  }

  /** Fails runs left `running` past their deadline (their process died). Returns how many. */
  async recover(): Promise<number> {
    const rows = await this.db.query<{ id: string; workspace_id: string; n: number }>(
      `WITH f AS (
         UPDATE automations_runs SET status = 'failed', finished_at = now(),
           duration_ms = GREATEST(0, round(extract(epoch FROM now() - started_at) * 1000))::int,
           error = jsonb_build_object('code', 'interrupted', 'name', 'RunInterrupted',
             'message', 'The server running this run stopped before it finished; the run was not retried.')
         WHERE status = 'running' AND deadline_at < now() RETURNING id, workspace_id)
       INSERT INTO automations_run_events (id, workspace_id, run_id, seq, type, level, message, payload)
       SELECT gen_random_uuid(), f.workspace_id, f.id, 1000000, 'error', 'error',
         'interrupted: The server running this run stopped before it finished; the run was not retried.', NULL FROM f
       RETURNING run_id AS id`,
    );
    if (rows.length) this.log.warn({ count: rows.length }, 'failed automation runs interrupted by a stopped server');
    return rows.length;
  }

  /** Cancels the runs in flight and waits until they are recorded. */
  async stop(): Promise<void> {
    this.stopping = true;
    const all = [...this.inflight.values()];
    for (const r of all) r.abort.abort();
    await Promise.allSettled(all.map((r) => r.done));
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  // --- reads ----------------------------------------------------------------------------

  async get(workspaceId: string, runId: string, automationId?: string) {
    if (!isUuid(runId) || (automationId !== undefined && !isUuid(automationId))) throw new NotFound('Run not found.');
    const rows = await this.db.query(
      `SELECT * FROM automations_runs WHERE workspace_id = $1 AND id = $2 ${automationId ? 'AND automation_id = $3' : ''}`,
      automationId ? [workspaceId, runId, automationId] : [workspaceId, runId],
    );
    if (rows.length === 0) throw new NotFound('Run not found.');
    const events = await this.db.query('SELECT * FROM automations_run_events WHERE workspace_id = $1 AND run_id = $2 ORDER BY seq', [workspaceId, runId]);
    return { ...runView(runFromRow(rows[0])), events: events.map(eventView) };
  }

  async list(workspaceId: string, q: { automationId?: string; status?: string; limit?: number; before?: string }) {
    const params: unknown[] = [workspaceId];
    const where = ['r.workspace_id = $1'];
    if (q.automationId) {
      if (!isUuid(q.automationId)) return [];
      params.push(q.automationId);
      where.push(`r.automation_id = $${params.length}`);
    }
    if (q.status) {
      params.push(q.status);
      where.push(`r.status = $${params.length}`);
    }
    if (q.before) {
      if (!isUuid(q.before)) return [];
      params.push(q.before);
      where.push(`r.id < $${params.length}`);
    }
    params.push(q.limit ?? 50);
    const rows = await this.db.query(
      `SELECT r.*, a.name AS a_name, a.handle AS a_handle FROM automations_runs r JOIN automations_automations a ON a.id = r.automation_id
       WHERE ${where.join(' AND ')} ORDER BY r.id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => {
      const run = runFromRow(r);
      return {
        automation: { id: run.automationId, name: r.a_name as string, handle: r.a_handle as string },
        trigger: { id: run.triggerId, name: run.triggerName, type: run.triggerType },
        run: runView(run),
      };
    });
  }
}
