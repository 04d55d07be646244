import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import type { SecretBox } from '../../core/crypto/index.ts';
import { InvalidRequest, NotFound, TooManyRequests, defineError } from '../../core/errors/index.ts';
import { safeEqual } from '../../core/crypto/index.ts';
import {
  Automation,
  AutomationParams,
  AutomationRunParams,
  CreateAutomationBody,
  ManualRunBody,
  PatchAutomationBody,
  RESOURCE_TYPES_DOC,
  RunParams,
  RunSummary,
  RunWithEvents,
  RunsQuery,
  TRIGGERS_DOC,
  WebhookAccepted,
  WebhookParams,
} from './automations.schemas.ts';
import type { AutomationInput, AutomationsService } from './automations.service.ts';
import type { RunsService } from './runs.service.ts';
import { verifyStandardWebhook } from './triggers.ts';

const tags = ['automations'];
const ws = (request: FastifyRequest) => request.workspace!;

export const InvalidSignature = defineError('invalid_signature', 401, 'The webhook signature is missing, invalid or stale.');
export const AutomationDisabled = defineError('invalid_request', 400, 'The automation is disabled.');


export interface RouteDeps {
  store: AutomationsService;
  runs: RunsService;
  secrets: SecretBox;
  manualWaitMs: number;
  /** Webhook deliveries answer 429 while this many runs of the workspace wait for a slot. */
  maxQueuedRuns: number;
}

async function waitFor<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function automationsRoutes(app: App, d: RouteDeps): void {
  const { store, runs } = d;
  const view = async (request: FastifyRequest, idOrHandle: string) => store.view(await store.get(ws(request).id, idOrHandle), ws(request).handle);

  app.get(
    '/automations',
    { config: { permission: 'automations.read' }, schema: { tags, summary: 'List automations (oldest first)', response: { 200: Type.Array(Automation) } } },
    async (request) => (await store.list(ws(request).id)).map((a) => store.view(a, ws(request).handle)),
  );

  app.post(
    '/automations',
    {
      config: { permission: 'automations.write' },
      schema: {
        tags,
        summary: 'Create an automation with its resources and triggers',
        description: `${RESOURCE_TYPES_DOC}\n\n${TRIGGERS_DOC}`,
        body: CreateAutomationBody,
        response: { 201: Automation },
      },
    },
    async (request, reply) => {
      const a = await store.create(ws(request).id, request.body as AutomationInput);
      return reply.code(201).send(store.view(a, ws(request).handle) as never);
    },
  );

  app.get(
    '/automations/:automationId',
    { config: { permission: 'automations.read' }, schema: { tags, summary: 'One automation (by id or handle)', params: AutomationParams, response: { 200: Automation } } },
    async (request) => view(request, request.params.automationId),
  );

  app.patch(
    '/automations/:automationId',
    {
      config: { permission: 'automations.write' },
      schema: {
        tags,
        summary: 'Change an automation',
        description: `Fields left out are unchanged. \`resources\` and \`triggers\`, when given, replace the lists (entries with an \`id\` are updated in place, so a webhook trigger keeps its URL).\n\n${RESOURCE_TYPES_DOC}\n\n${TRIGGERS_DOC}`,
        params: AutomationParams,
        body: PatchAutomationBody,
        response: { 200: Automation },
      },
    },
    async (request) => {
      const a = await store.patch(ws(request).id, request.params.automationId, request.body as Partial<AutomationInput>);
      return store.view(a, ws(request).handle);
    },
  );

  app.delete(
    '/automations/:automationId',
    { config: { permission: 'automations.write' }, schema: { tags, summary: 'Delete an automation with its triggers, resources and runs', params: AutomationParams } },
    async (request, reply) => {
      await store.delete(ws(request).id, request.params.automationId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/automations/:automationId/run',
    {
      config: { permission: 'automations.run' },
      schema: {
        tags,
        summary: 'Run an automation now (manual trigger)',
        description: `Body \`{input?}\` (any JSON, the script's first argument). Waits for the run to finish for up to ${Math.round(d.manualWaitMs / 1000)} s and returns it with its events; a run still going after that is returned with status \`running\` (poll \`GET /api/v1/runs/{runId}\`). A disabled automation answers 400 \`invalid_request\`. The run's trigger is the automation's first enabled manual trigger, if any.`,
        params: AutomationParams,
        body: Type.Union([ManualRunBody, Type.Null()]),
        response: { 200: RunWithEvents },
      },
    },
    async (request) => {
      const a = await store.get(ws(request).id, request.params.automationId);
      if (!a.enabled) throw new AutomationDisabled();
      const manual = a.triggers.find((t) => t.type === 'manual' && t.enabled) ?? null;
      const started = await runs.start(a, manual, 'manual', (request.body as { input?: unknown } | undefined)?.input ?? null);
      await waitFor(started.done, d.manualWaitMs);
      return runs.get(a.workspaceId, started.run.id);
    },
  );

  app.get(
    '/automations/:automationId/runs',
    {
      config: { permission: 'automations.read' },
      schema: { tags, summary: "An automation's runs (summaries, newest first)", params: AutomationParams, querystring: RunsQuery, response: { 200: Type.Array(RunSummary) } },
    },
    async (request) => {
      const a = await store.get(ws(request).id, request.params.automationId);
      const q = request.query as { status?: string; limit?: number; before?: string };
      return runs.list(ws(request).id, { ...q, automationId: a.id });
    },
  );

  app.get(
    '/automations/:automationId/runs/:runId',
    { config: { permission: 'automations.read' }, schema: { tags, summary: 'One run of an automation, with its events', params: AutomationRunParams, response: { 200: RunWithEvents } } },
    async (request) => {
      const a = await store.get(ws(request).id, request.params.automationId);
      return runs.get(ws(request).id, request.params.runId, a.id);
    },
  );

  app.get(
    '/runs',
    {
      config: { permission: 'automations.read' },
      schema: {
        tags,
        summary: 'Run summaries across all automations (newest first)',
        description: 'Each item is `{automation: {id, name, handle}, trigger: {id, name, type}, run}`. Filters: `status`, `automationId`; paging: `limit` (default 50, max 200) and `before` (a run id).',
        querystring: RunsQuery,
        response: { 200: Type.Array(RunSummary) },
      },
    },
    async (request) => runs.list(ws(request).id, request.query as never),
  );

  app.get(
    '/runs/:runId',
    {
      config: { permission: 'automations.read' },
      schema: {
        tags,
        summary: 'One run with its events',
        description: 'Events in order: `received` (payload: the input), `log` per console call (`meta.method` is the console method; warn/error are level `error`), then `result` (payload: the output) or `error` (payload: `{code, name, message, stack?}`).',
        params: RunParams,
        response: { 200: RunWithEvents },
      },
    },
    async (request) => runs.get(ws(request).id, request.params.runId),
  );
}

const HIDDEN_HEADERS = new Set(['authorization', 'cookie', 'x-api-key', 'proxy-authorization']);

/** The public webhook endpoint, in its own context: it reads every body as raw text. */
export function webhookRoutes(app: App, d: RouteDeps): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  app.post(
    '/automations/webhooks/:publicId/:secret',
    {
      config: { auth: 'public' },
      // The URL carries the webhook secret: never log it.
      logSerializers: {
        req: (req: { method: string; url: string; id?: string }) => ({ method: req.method, url: req.url.replace(/(\/webhooks\/[^/]+\/)[^/?]+/, '$1[redacted]'), id: req.id }),
      },
      schema: {
        tags,
        summary: 'Deliver a webhook: starts the automation',
        description:
          'Any content type. The run input is `{method, headers, query, body}` (`body` parsed as JSON when the content type is JSON, else the raw text; credential headers are dropped). Answers 202 `{runId, status, duplicate}` as soon as the run is recorded (it then runs asynchronously). Unknown id, wrong secret, disabled trigger or automation: 404 and no run. With a signing secret, a missing or bad Standard Webhooks signature is 401 `invalid_signature`. A repeated `webhook-id` (or `idempotency-key`) header returns the first run with `duplicate: true` and starts nothing. While the workspace has `maxQueuedRunsPerWorkspace` runs waiting on this server, deliveries answer 429 `too_many_requests` with `retry-after` and record no run (senders retry).',
        params: WebhookParams,
        response: { 202: WebhookAccepted },
      },
    },
    async (request, reply) => {
      const { publicId, secret } = request.params as { publicId: string; secret: string };
      const found = await d.store.webhookTrigger(publicId);
      const expected = found?.trigger.secretBox ? d.secrets.decrypt(found.trigger.secretBox) : null;
      if (!found || !safeEqual(secret, expected ?? `\u0000${secret}`) || !found.trigger.enabled || !found.automationEnabled) throw new NotFound('Not found.');
      const raw = typeof request.body === 'string' ? request.body : '';
      if (found.trigger.signingSecretBox) {
        const problem = verifyStandardWebhook(d.secrets.decrypt(found.trigger.signingSecretBox), request.headers, raw);
        if (problem) throw new InvalidSignature(`The webhook signature check failed: ${problem}.`);
      }
      let body: unknown = raw;
      const ct = String(request.headers['content-type'] ?? '');
      if (/[/+]json\b/i.test(ct) && raw.length > 0) {
        try {
          body = JSON.parse(raw);
        } catch {
          throw new InvalidRequest('The body is not valid JSON.');
        }
      } else if (raw.length === 0) body = null;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(request.headers)) if (!HIDDEN_HEADERS.has(k) && v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      const deliveryId = request.headers['webhook-id'] ?? request.headers['idempotency-key'];
      const deliveryKey = typeof deliveryId === 'string' && deliveryId ? `webhook:${found.trigger.id}:${deliveryId.slice(0, 200)}` : null;
      if (d.runs.backlog(found.automation.workspaceId) >= d.maxQueuedRuns) {
        throw new TooManyRequests('This workspace has too many runs waiting; retry the delivery shortly.', undefined, { 'retry-after': '1' });
      }
      const started = await d.runs.start(found.automation, found.trigger, 'webhook', { method: request.method, headers, query: request.query ?? {}, body }, deliveryKey);
      started.done.catch(() => undefined);
      return reply.code(202).send({ runId: started.run.id, status: started.run.status, duplicate: started.duplicate });
    },
  );
}
