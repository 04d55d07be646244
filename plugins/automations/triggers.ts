/**
 * Trigger plumbing: Standard Webhooks signature checks, pg-boss schedules (one per schedule
 * trigger, keyed by trigger id), and data events -> queued runs.
 *
 * Schedules: every node may (re)register a trigger's schedule (pg-boss keeps one row per key and
 * sends one job per tick however many nodes run). The job handler derives the tick from the cron
 * expression and records the run under the delivery key `schedule:<tick>`, so even a duplicated
 * job cannot start two runs for one tick. Ticks missed while every node was down are skipped
 * (pg-boss `missed: skip`, the default): no catch-up storm after an outage.
 *
 * Data events: `data.row.*` events (published after commit) are matched against enabled
 * data_event triggers and enqueued on the job queue (`automations.run`), so a run survives a
 * crash between the event and its execution; the delivery key `<topic>:<rowId>:<updatedAt>`
 * keeps a retried job from starting a second run.
 */
import { createHmac } from 'node:crypto';
import { CronExpressionParser } from 'cron-parser';
import type { FastifyBaseLogger } from 'fastify';
import type { EventBus, EventMeta } from '../../core/events/index.ts';
import type { Jobs } from '../../core/jobs/index.ts';
import { safeEqual } from '../../core/crypto/index.ts';
import { DATA_ROW_EVENTS, type DataRow, type DataRowEvent } from '../data/api.ts';
import type { AutomationsService, TriggerRecord } from './automations.service.ts';
import type { RunsService } from './runs.service.ts';

export const RUN_QUEUE = 'automations.run';
export const SCHEDULE_QUEUE = 'automations.schedule';

const TOLERANCE_S = 5 * 60;
const DATA_TRIGGER_CACHE_MS = 2000;

/** Standard Webhooks (https://www.standardwebhooks.com) signature check. */
export function verifyStandardWebhook(secret: string, headers: Record<string, string | string[] | undefined>, body: string, nowMs = Date.now()): string | null {
  const h = (n: string) => {
    const v = headers[n];
    return Array.isArray(v) ? v[0] : v;
  };
  const id = h('webhook-id');
  const ts = h('webhook-timestamp');
  const sig = h('webhook-signature');
  if (!id || !ts || !sig) return 'missing webhook-id, webhook-timestamp or webhook-signature header';
  const t = Number(ts);
  if (!Number.isInteger(t) || Math.abs(nowMs / 1000 - t) > TOLERANCE_S) return 'webhook-timestamp is outside the tolerance';
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  const ok = sig.split(' ').some((part) => {
    const [version, value] = part.split(',', 2);
    return version === 'v1' && typeof value === 'string' && safeEqual(value, expected);
  });
  return ok ? null : 'no valid v1 signature';
}

export interface QueuedRun {
  workspaceId: string;
  automationId: string;
  triggerId: string;
  input: unknown;
  deliveryKey: string | null;
}

function matchesFilter(filter: unknown, row: DataRow | null): boolean {
  if (!filter || typeof filter !== 'object') return true;
  if (!row) return false;
  for (const [k, v] of Object.entries(filter as Record<string, unknown>)) {
    if (JSON.stringify(row.data?.[k] ?? null) !== JSON.stringify(v ?? null)) return false;
  }
  return true;
}

export class TriggerRuntime {
  private readonly store: AutomationsService;
  private readonly runs: RunsService;
  private readonly jobs: Jobs;
  private readonly events: EventBus;
  private readonly log: FastifyBaseLogger;

  constructor(store: AutomationsService, runs: RunsService, jobs: Jobs, events: EventBus, log: FastifyBaseLogger) {
    this.store = store;
    this.runs = runs;
    this.jobs = jobs;
    this.events = events;
    this.log = log;
  }

  /** Starts the queue workers and the data-event subscription. */
  async start(opts: { dataEvents: boolean }): Promise<() => void> {
    await this.jobs.queue(RUN_QUEUE, { retryLimit: 3, retryDelay: 5, expireInSeconds: 15 * 60 });
    await this.jobs.queue(SCHEDULE_QUEUE, { retryLimit: 2, retryDelay: 5, expireInSeconds: 15 * 60 });
    await this.jobs.work<QueuedRun>(RUN_QUEUE, (data) => this.runQueued(data), { batchSize: 1, pollingIntervalSeconds: 0.5 });
    await this.jobs.work<{ workspaceId: string; triggerId: string }>(SCHEDULE_QUEUE, (data) => this.tick(data), { batchSize: 1, pollingIntervalSeconds: 1 });
    // Reconcile: every schedule trigger's pg-boss schedule matches its state (idempotent upserts).
    for (const { trigger, automationEnabled } of await this.store.scheduleTriggers()) await this.syncSchedule(trigger, automationEnabled);
    const unsubs: (() => void)[] = [];
    if (opts.dataEvents) {
      for (const topic of DATA_ROW_EVENTS) unsubs.push(this.events.subscribe<DataRowEvent>(topic, (payload, meta) => this.onDataEvent(payload, meta)));
    }
    return () => unsubs.forEach((u) => u());
  }

  // --- schedules ----------------------------------------------------------------------------

  async syncSchedule(t: TriggerRecord, automationEnabled: boolean): Promise<void> {
    if (t.enabled && automationEnabled) {
      await this.jobs.schedule(SCHEDULE_QUEUE, String(t.config.cron), { workspaceId: t.workspaceId, triggerId: t.id }, { tz: String(t.config.timezone ?? 'UTC'), key: t.id });
    } else {
      await this.removeSchedule(t.id);
    }
  }

  async removeSchedule(triggerId: string): Promise<void> {
    await this.jobs.unschedule(SCHEDULE_QUEUE, triggerId).catch((err: unknown) => this.log.warn({ err, triggerId }, 'unschedule failed'));
  }

  /** One schedule tick: the run is keyed by the tick, so a tick never starts two runs. */
  async tick(data: { workspaceId: string; triggerId: string }, now = new Date()): Promise<void> {
    const found = await this.store.triggerById(data.workspaceId, data.triggerId);
    if (!found || found.trigger.type !== 'schedule') {
      await this.removeSchedule(data.triggerId);
      return;
    }
    const { trigger, automationEnabled } = found;
    if (!trigger.enabled || !automationEnabled) return;
    const cron = String(trigger.config.cron);
    const timezone = String(trigger.config.timezone ?? 'UTC');
    // The tick this job belongs to: the latest occurrence at or before now (+1 s of clock skew).
    const tickAt = CronExpressionParser.parse(cron, { tz: timezone, currentDate: new Date(now.getTime() + 1000) }).prev().toDate().toISOString();
    const automation = await this.store.get(trigger.workspaceId, trigger.automationId).catch(() => null);
    if (!automation) return;
    const started = await this.runs.start(automation, trigger, 'schedule', { scheduledAt: tickAt, firedAt: now.toISOString(), cron, timezone }, `schedule:${tickAt}`);
    await started.done;
  }

  // --- data events --------------------------------------------------------------------------

  /**
   * Enabled data_event triggers per workspace, cached briefly so a bulk write (one event per row)
   * costs one lookup. Changes on this node clear the cache at once; another node's changes show
   * within DATA_TRIGGER_CACHE_MS (a trigger disabled meanwhile is re-checked when its run starts).
   */
  private readonly dataTriggerCache = new Map<string, { at: number; triggers: Promise<TriggerRecord[]> }>();

  invalidateDataTriggers(workspaceId: string): void {
    this.dataTriggerCache.delete(workspaceId);
  }

  private dataTriggers(workspaceId: string): Promise<TriggerRecord[]> {
    const hit = this.dataTriggerCache.get(workspaceId);
    if (hit && Date.now() - hit.at < DATA_TRIGGER_CACHE_MS) return hit.triggers;
    const triggers = this.store.dataEventTriggers(workspaceId);
    this.dataTriggerCache.set(workspaceId, { at: Date.now(), triggers });
    triggers.catch(() => this.dataTriggerCache.delete(workspaceId));
    if (this.dataTriggerCache.size > 10_000) this.dataTriggerCache.delete(this.dataTriggerCache.keys().next().value!);
    return triggers;
  }

  private async onDataEvent(payload: DataRowEvent, meta: EventMeta): Promise<void> {
    const event = meta.topic.split('.').pop() as 'created' | 'updated' | 'deleted';
    const triggers = await this.dataTriggers(meta.workspaceId);
    for (const t of triggers) {
      const def = String(t.config.definition ?? '');
      if (def !== payload.definitionId && def !== payload.definitionHandle) continue;
      const events = Array.isArray(t.config.events) ? (t.config.events as string[]) : ['created', 'updated', 'deleted'];
      if (!events.includes(event)) continue;
      if (!matchesFilter(t.config.filter, event === 'deleted' ? (payload.previous ?? payload.row) : payload.row)) continue;
      const input = { event, definitionId: payload.definitionId, definitionHandle: payload.definitionHandle, row: payload.row, previous: payload.previous, occurredAt: meta.occurredAt };
      const deliveryKey = `data:${t.id}:${meta.topic}:${payload.row.id}:${payload.row.updatedAt}:${payload.row.deletedAt ?? ''}`;
      await this.jobs.send<QueuedRun>(RUN_QUEUE, { workspaceId: meta.workspaceId, automationId: t.automationId, triggerId: t.id, input, deliveryKey });
    }
  }

  private async runQueued(data: QueuedRun): Promise<void> {
    const found = await this.store.triggerById(data.workspaceId, data.triggerId);
    if (!found || !found.trigger.enabled || !found.automationEnabled) return;
    const automation = await this.store.get(data.workspaceId, data.automationId).catch(() => null);
    if (!automation) return;
    const started = await this.runs.start(automation, found.trigger, found.trigger.type, data.input, data.deliveryKey);
    await started.done;
  }
}
