import Type from 'typebox';

export const JsonObject = Type.Object({}, { additionalProperties: true });
export const AnyJson = Type.Unknown({ description: 'Any JSON value or null' });
const Id = Type.String({ minLength: 1, maxLength: 100 });

export const AutomationParams = Type.Object({ automationId: Id });
export const RunParams = Type.Object({ runId: Id });
export const AutomationRunParams = Type.Object({ automationId: Id, runId: Id });
export const WebhookParams = Type.Object({ publicId: Type.String({ minLength: 1, maxLength: 200 }), secret: Type.String({ minLength: 1, maxLength: 500 }) });

export const RESOURCE_TYPES = ['data_definition', 'channel', 'workflow', 'http'] as const;
export const TRIGGER_TYPES = ['manual', 'schedule', 'webhook', 'data_event'] as const;

export const RESOURCE_TYPES_DOC = [
  'Allowed `resourceType` values (the script sees `ctx.resources.<label>`):',
  '- `data_definition`: `resourceRef` is a data definition id, handle or name-id slug. Methods: `query(params)` (the data list query string as an object; returns the page `{items,total,page,pageSize,pageCount,hasMore}`), `get(rowId)` (row or null), `upsert(rowOrRows)` (`{id?, data}` or an array of them; all or nothing; returns the rows). Needs the data plugin.',
  '- `channel`: `resourceRef` is a channel id. Method: `post(textOrMessage)` where the message is `{text, threadId?, kind?, direction?, author?, metadata?}`; returns `{id, channelId, threadId, status}`. Needs the channels plugin.',
  '- `workflow`: `resourceRef` is a workflow id; `config.version` pins a version (default: the latest at run time). Method: `run(input)` returns `{workflowId, version, status, output, error, logs, durationMs}`. Needs the workflows plugin.',
  '- `http`: grants `ctx.fetch(url, init)` (through the server\'s SSRF guard) to the hosts in `resourceRef` (comma-separated host names, `*.example.com`, or `*` for any public host). `ctx.fetch` is undefined without an `http` resource. `ctx.resources.<label>.fetch(url, init)` is the same function.',
  'A resource whose type is unavailable (its plugin switched off) or whose target does not exist in the workspace is refused with 400 `invalid_request`. Every resource is scoped to the automation\'s workspace.',
].join('\n');

export const TRIGGERS_DOC = [
  'Trigger `type` and its `config`:',
  '- `manual`: no config; run with `POST /api/v1/automations/{id}/run`.',
  '- `webhook`: `config.signingSecret` (optional, write-only, Standard Webhooks `whsec_<base64>`): when set, deliveries must carry valid `webhook-id`, `webhook-timestamp` (within 5 minutes) and `webhook-signature` headers, else 401 `invalid_signature`. The response shows `config.hasSigningSecret` instead. `webhookUrl` is `{base_url}/api/v1/automations/webhooks/{publicId}/{secret}` (the secret is random, stored encrypted, and kept across PATCHes of the trigger). A repeated delivery id (`webhook-id` or `idempotency-key` header) does not start a second run.',
  '- `schedule`: `config.cron` (5-field cron, minute granularity) and `config.timezone` (IANA name, default `UTC`). Fires once per tick however many server instances run. Ticks missed while every instance was down are skipped (no catch-up storm); the next tick fires normally.',
  '- `data_event`: `config.definition` (data definition id or handle), `config.events` (non-empty subset of `created`, `updated`, `deleted`; default all) and optional `config.filter` (object of field -> value; the row\'s `data` must equal every one, for deleted rows the row before deletion). Fires after the data change commits, through the job queue (a run survives a server restart). With several server instances, a trigger change made on one instance applies to data changes handled by the others within 2 s. The run input is `{event, definitionId, definitionHandle, row, previous, occurredAt}` where `row`/`previous` are data rows `{id, definitionHandle, data, createdAt, updatedAt, deletedAt}` (`previous` is null for created).',
  'A disabled automation or trigger does nothing (its webhook answers 404). `metadata` is stored as given.',
].join('\n');

export const ResourceInput = Type.Object(
  {
    id: Type.Optional(Type.String({ description: 'An existing resource id, to update it in place on PATCH' })),
    label: Type.String({ pattern: '^[A-Za-z_$][A-Za-z0-9_$]{0,63}$', description: 'The name under `ctx.resources`' }),
    resourceType: Type.Union([Type.Literal('data_definition'), Type.Literal('channel'), Type.Literal('workflow'), Type.Literal('http')]),
    resourceRef: Type.String({ minLength: 1, maxLength: 1000 }),
    config: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

export const TriggerInput = Type.Object(
  {
    id: Type.Optional(Type.String({ description: 'An existing trigger id, to update it in place on PATCH (keeps its webhook URL)' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    type: Type.Union([Type.Literal('manual'), Type.Literal('schedule'), Type.Literal('webhook'), Type.Literal('data_event')]),
    enabled: Type.Optional(Type.Boolean()),
    config: Type.Optional(JsonObject),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

export const CreateAutomationBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    handle: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,99}$', description: 'Defaults to the name slugged; unique in the workspace (409 `conflict`).' })),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 5000 }), Type.Null()])),
    enabled: Type.Optional(Type.Boolean()),
    scriptSource: Type.String({ maxLength: 1_000_000, description: 'An ES module whose default export is an (async) function `(input, ctx)`.' }),
    resources: Type.Optional(Type.Array(ResourceInput, { maxItems: 50 })),
    triggers: Type.Optional(Type.Array(TriggerInput, { maxItems: 50 })),
  },
  { additionalProperties: false },
);

export const PatchAutomationBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    handle: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,99}$' })),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 5000 }), Type.Null()])),
    enabled: Type.Optional(Type.Boolean()),
    scriptSource: Type.Optional(Type.String({ maxLength: 1_000_000 })),
    resources: Type.Optional(Type.Array(ResourceInput, { maxItems: 50, description: 'Replaces the list: entries with an `id` update that resource, others are created, missing ones are deleted.' })),
    triggers: Type.Optional(Type.Array(TriggerInput, { maxItems: 50, description: 'Replaces the list: entries with an `id` update that trigger, others are created, missing ones are deleted.' })),
  },
  { additionalProperties: false },
);

export const Resource = Type.Object({
  id: Type.String(),
  label: Type.String(),
  resourceType: Type.String(),
  resourceRef: Type.String(),
  config: JsonObject,
  position: Type.Number(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const Trigger = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Union([Type.Literal('manual'), Type.Literal('schedule'), Type.Literal('webhook'), Type.Literal('data_event')]),
  enabled: Type.Boolean(),
  position: Type.Number(),
  config: JsonObject,
  metadata: JsonObject,
  webhookUrl: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const Automation = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String(),
  url: Type.String({ description: 'Relative UI path: /w/<workspaceHandle>/automations/<handle>' }),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  scriptSource: Type.String(),
  resources: Type.Array(Resource),
  triggers: Type.Array(Trigger),
  lastRunAt: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const RunStatus = Type.Union([Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')]);

export const Run = Type.Object({
  id: Type.String(),
  automationId: Type.String(),
  triggerId: Type.Union([Type.String(), Type.Null()]),
  status: RunStatus,
  triggerType: Type.String(),
  input: AnyJson,
  output: AnyJson,
  error: Type.Unknown({ description: 'null, or `{code, name, message, stack?}`; `code` is one of script_error, invalid_module, timeout, cpu_limit, memory_limit, stack_overflow, log_limit, output_limit, never_settled, invalid_input, interrupted, internal' }),
  startedAt: Type.String(),
  finishedAt: Type.Union([Type.String(), Type.Null()]),
  durationMs: Type.Union([Type.Number(), Type.Null()]),
  createdAt: Type.String(),
});

export const RunEvent = Type.Object({
  id: Type.String(),
  runId: Type.String(),
  type: Type.Union([Type.Literal('received'), Type.Literal('log'), Type.Literal('result'), Type.Literal('error')]),
  level: Type.Union([Type.Literal('info'), Type.Literal('error')]),
  message: Type.String(),
  payload: AnyJson,
  meta: AnyJson,
  createdAt: Type.String(),
});

export const RunWithEvents = Type.Object({ ...Run.properties, events: Type.Array(RunEvent) });

export const RunSummary = Type.Object({
  automation: Type.Object({ id: Type.String(), name: Type.String(), handle: Type.String() }),
  trigger: Type.Object({ id: Type.Union([Type.String(), Type.Null()]), name: Type.String(), type: Type.String() }),
  run: Run,
});

export const RunsQuery = Type.Object(
  {
    status: Type.Optional(RunStatus),
    automationId: Type.Optional(Type.String()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    before: Type.Optional(Type.String({ description: 'A run id: only runs created before it (pagination, newest first)' })),
  },
  { additionalProperties: false },
);

export const ManualRunBody = Type.Object({ input: Type.Optional(AnyJson) }, { additionalProperties: false });

export const WebhookAccepted = Type.Object({
  runId: Type.String(),
  status: RunStatus,
  duplicate: Type.Boolean({ description: 'true when this delivery id was already received: no new run was started' }),
});
