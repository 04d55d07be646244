import Type from 'typebox';

const JsonObject = Type.Object({}, { additionalProperties: true, description: 'Object of JSON values, stored as given' });
const Id = Type.String({ minLength: 1, maxLength: 200 });

export const WorkflowParams = Type.Object({ workflowId: Id });
export const VersionParams = Type.Object({ workflowId: Id, version: Type.Integer({ minimum: 1 }) });

export const Workflow = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String(),
  url: Type.String({ description: 'Relative UI path: /w/<workspaceHandle>/workflows/<handle>' }),
  description: Type.Union([Type.String(), Type.Null()]),
  code: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  config: JsonObject,
  ui: JsonObject,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const WorkflowVersion = Type.Object({
  workflowId: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  code: Type.String(),
  config: JsonObject,
  ui: JsonObject,
  createdAt: Type.String(),
});

export const CreateWorkflowBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    handle: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,99}$', description: 'Defaults to the name slugged; unique in the workspace (409 `conflict`).' })),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 5000 }), Type.Null()])),
    code: Type.String({ maxLength: 1_000_000, description: 'An ES module whose default export is an (async) function `(input, ctx)`; runs in the sandbox with no capabilities.' }),
    config: Type.Optional(JsonObject),
    ui: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

export const PatchWorkflowBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    handle: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,99}$' })),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 5000 }), Type.Null()])),
    code: Type.Optional(Type.String({ maxLength: 1_000_000 })),
    config: Type.Optional(JsonObject),
    ui: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

export const RunWorkflowBody = Type.Object(
  {
    input: Type.Optional(Type.Unknown({ description: 'Any JSON: the first argument of the default export' })),
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the current version' })),
  },
  { additionalProperties: false },
);

export const WorkflowRunResult = Type.Object({
  workflowId: Type.String(),
  version: Type.Integer(),
  status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
  output: Type.Unknown(),
  error: Type.Unknown({ description: 'null, or `{code, name, message, stack?}` (codes as for automation runs)' }),
  logs: Type.Array(Type.Object({ level: Type.String(), method: Type.String(), message: Type.String(), at: Type.String() })),
  durationMs: Type.Number(),
});
