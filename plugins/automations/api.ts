/**
 * Public API of the automations plugin (the only file other plugins may import).
 *
 * Automations run user scripts through the core sandbox. Resource types, trigger configs and the
 * data_event payload are documented in the OpenAPI description of `POST /api/v1/automations`
 * (automations.schemas.ts: RESOURCE_TYPES_DOC, TRIGGERS_DOC). Job queues: `automations.run`
 * (queued runs: data events), `automations.schedule` (one pg-boss schedule per schedule trigger,
 * keyed by the trigger id).
 */
export type AutomationTriggerType = 'manual' | 'schedule' | 'webhook' | 'data_event';
export type AutomationResourceType = 'data_definition' | 'channel' | 'workflow' | 'http';
export type RunStatus = 'running' | 'succeeded' | 'failed';

/** The input a data_event trigger's run receives. */
export interface DataEventRunInput {
  event: 'created' | 'updated' | 'deleted';
  definitionId: string;
  definitionHandle: string;
  row: unknown;
  previous: unknown;
  occurredAt: string;
}

/** The input a schedule trigger's run receives. */
export interface ScheduleRunInput {
  scheduledAt: string;
  firedAt: string;
  cron: string;
  timezone: string;
}
