import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import { CreateWorkflowBody, PatchWorkflowBody, RunWorkflowBody, VersionParams, Workflow, WorkflowParams, WorkflowRunResult, WorkflowVersion } from './workflows.schemas.ts';
import { workflowView, type WorkflowInput, type WorkflowsStore } from './workflows.service.ts';

const tags = ['workflows'];
const ws = (request: FastifyRequest) => request.workspace!;

export function workflowsRoutes(app: App, store: WorkflowsStore): void {
  app.get(
    '/workflows',
    { config: { permission: 'workflows.read' }, schema: { tags, summary: 'List workflow definitions (oldest first)', response: { 200: Type.Array(Workflow) } } },
    async (request) => (await store.list(ws(request).id)).map((r) => workflowView(r, ws(request).handle)),
  );

  app.post(
    '/workflows',
    {
      config: { permission: 'workflows.write' },
      schema: { tags, summary: 'Create a workflow definition (version 1)', body: CreateWorkflowBody, response: { 201: Workflow } },
    },
    async (request, reply) => reply.code(201).send(workflowView(await store.create(ws(request).id, request.body as WorkflowInput), ws(request).handle)),
  );

  app.get(
    '/workflows/:workflowId',
    { config: { permission: 'workflows.read' }, schema: { tags, summary: 'One workflow definition (by id or handle), at its current version', params: WorkflowParams, response: { 200: Workflow } } },
    async (request) => workflowView(await store.get(ws(request).id, request.params.workflowId), ws(request).handle),
  );

  app.patch(
    '/workflows/:workflowId',
    {
      config: { permission: 'workflows.write' },
      schema: {
        tags,
        summary: 'Change a workflow definition',
        description: 'Fields left out are unchanged. `version` increments when `code`, `config` or `ui` changes (compared by value); a rename or a description change keeps it. Earlier versions stay readable at `GET /api/v1/workflows/{id}/versions/{version}` and runnable with `POST /api/v1/workflows/{id}/run {version}`.',
        params: WorkflowParams,
        body: PatchWorkflowBody,
        response: { 200: Workflow },
      },
    },
    async (request) => workflowView(await store.patch(ws(request).id, request.params.workflowId, request.body as Partial<WorkflowInput>), ws(request).handle),
  );

  app.delete(
    '/workflows/:workflowId',
    { config: { permission: 'workflows.write' }, schema: { tags, summary: 'Delete a workflow definition and all its versions', params: WorkflowParams } },
    async (request, reply) => {
      await store.delete(ws(request).id, request.params.workflowId);
      return reply.code(204).send();
    },
  );

  app.get(
    '/workflows/:workflowId/versions',
    { config: { permission: 'workflows.read' }, schema: { tags, summary: 'Every version of a workflow (newest first)', params: WorkflowParams, response: { 200: Type.Array(WorkflowVersion) } } },
    async (request) => store.versions(ws(request).id, request.params.workflowId),
  );

  app.get(
    '/workflows/:workflowId/versions/:version',
    { config: { permission: 'workflows.read' }, schema: { tags, summary: 'One version of a workflow: its code, config and ui as they were', params: VersionParams, response: { 200: WorkflowVersion } } },
    async (request) => store.version(ws(request).id, request.params.workflowId, request.params.version),
  );

  app.post(
    '/workflows/:workflowId/run',
    {
      config: { permission: 'workflows.run' },
      schema: {
        tags,
        summary: 'Run a workflow version through the sandbox and return its result',
        description: 'Body `{input?, version?}`. Runs synchronously (within the sandbox limits) and answers 200 with `{workflowId, version, status, output, error, logs, durationMs}`; a failing script is `status: failed` with the error, not an HTTP error. Workflows get no capabilities (`ctx.resources` is empty, no `ctx.fetch`). Automations run workflows through a `workflow` resource.',
        params: WorkflowParams,
        body: Type.Union([RunWorkflowBody, Type.Null()]),
        response: { 200: WorkflowRunResult },
      },
    },
    async (request) => {
      const body = (request.body ?? {}) as { input?: unknown; version?: number };
      return store.run(ws(request).id, request.params.workflowId, { input: body.input ?? null, version: body.version ?? null });
    },
  );
}
