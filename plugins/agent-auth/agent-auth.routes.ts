import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import { SessionRequired } from '../../core/errors/index.ts';
import type { App } from '../../core/registry/index.ts';
import type { AgentAuthService } from './agent-auth.service.ts';

const tags = ['agent login'];
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const NonEmpty = Type.String({ minLength: 1 });
const Role = Type.Union([Type.Literal('admin'), Type.Literal('editor'), Type.Literal('viewer')]);
const Permissions = Type.Record(NonEmpty, Type.Array(NonEmpty, { minItems: 1 }));
const PositiveInt = Type.Integer({ minimum: 1 });

const Workspace = Type.Object({ handle: Type.String(), name: Type.String(), createdAt: Type.String(), updatedAt: Type.String(), deletedAt: Nullable(Type.String()) });
export const PublicState = Type.Object({
  userCode: Type.String(),
  status: Type.String({ enum: ['pending', 'approved', 'denied', 'issuing', 'consumed', 'expired'] }),
  agentName: Type.String(),
  agentDescription: Nullable(Type.String()),
  requestedWorkspaceHandle: Nullable(Type.String()),
  role: Type.String({ enum: ['admin', 'editor', 'viewer', 'custom'] }),
  permissions: Nullable(Permissions),
  apiKeyName: Type.String(),
  expiresAt: Type.String(),
  approvedAt: Nullable(Type.String()),
  deniedAt: Nullable(Type.String()),
  consumedAt: Nullable(Type.String()),
  approvedWorkspace: Nullable(Workspace),
});

const StartBody = Type.Object(
  {
    agentName: NonEmpty,
    agentDescription: Type.Optional(NonEmpty),
    workspaceHandle: Type.Optional(NonEmpty),
    apiKeyName: Type.Optional(NonEmpty),
    role: Type.Optional(Role),
    permissions: Type.Optional(Permissions),
    apiKeyExpiresInMs: Type.Optional(PositiveInt),
    loginExpiresInMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 3600 * 1000 })),
  },
  { additionalProperties: false },
);

const StartResponse = Type.Object({
  deviceCode: Type.String(),
  userCode: Type.String(),
  verificationUri: Type.String(),
  verificationUriComplete: Type.String(),
  expiresAt: Type.String(),
  intervalSeconds: PositiveInt,
  instructions: Type.Object({ verificationMessage: Type.String(), exchangeMessage: Type.String(), apiKeySecretField: Type.String(), apiKeySaveHint: Type.String() }),
});

const ApiKeyWithSecret = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.String(),
  permissions: Nullable(Permissions),
  prefix: Type.String(),
  createdByUserId: Nullable(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  expiresAt: Nullable(Type.String()),
  lastUsedAt: Nullable(Type.String()),
  revokedAt: Nullable(Type.String()),
  key: Type.String(),
});

const CodeParams = Type.Object({ userCode: Type.String({ minLength: 1, maxLength: 32 }) });

function userOf(request: FastifyRequest) {
  if (request.principal?.kind !== 'session') throw new SessionRequired();
  return request.principal.user;
}

/** The agent login routes; mounted under /api/v1 and, hidden from the docs, under /api (the usage guide's form). */
export function agentAuthRoutes(app: App, service: AgentAuthService, documented: boolean): void {
  const hide = documented ? {} : { hide: true };
  app.post(
    '/agent/auth/requests',
    {
      config: { auth: 'public' },
      schema: {
        ...hide,
        tags,
        summary: 'Start an agent login (no credential needed)',
        description:
          'Show the customer `userCode` or `verificationUriComplete`; poll `POST /agent/auth/exchange` no faster than `intervalSeconds`. Defaults: the role is `admin` when neither `role` nor `permissions` is given (`custom` with only `permissions`); the login request expires after 15 minutes; the issued key after 90 days.',
        body: StartBody,
        response: { 201: StartResponse },
      },
    },
    async (request, reply) => reply.code(201).send(await service.start(request.body)),
  );

  app.get(
    '/agent/auth/requests/:userCode',
    { config: { auth: 'public' }, schema: { ...hide, tags, summary: 'The public state of an agent login request', description: 'The user code is accepted with or without its dash, in any case.', params: CodeParams, response: { 200: PublicState } } },
    async (request) => service.get(request.params.userCode),
  );

  app.post(
    '/agent/auth/requests/:userCode/approve',
    {
      config: { auth: 'session' },
      schema: {
        ...hide,
        tags,
        summary: 'Approve an agent login for one workspace (signed-in user who may create API keys there)',
        description: 'Body `{workspaceHandle?}`; defaults to the workspace the agent asked for. 404 when not a member, 403 without `apiKeys.write`, 409 when the request is no longer pending.',
        params: CodeParams,
        body: Type.Optional(Type.Object({ workspaceHandle: Type.Optional(NonEmpty) }, { additionalProperties: false })),
        response: { 200: PublicState },
      },
    },
    async (request) => service.approve(request.params.userCode, userOf(request).id, (request.body as { workspaceHandle?: string } | undefined)?.workspaceHandle),
  );

  app.post(
    '/agent/auth/requests/:userCode/deny',
    { config: { auth: 'session' }, schema: { ...hide, tags, summary: 'Deny a pending agent login', params: CodeParams, response: { 200: PublicState } } },
    async (request) => service.deny(request.params.userCode, userOf(request).id),
  );

  app.post(
    '/agent/auth/exchange',
    {
      config: { auth: 'public' },
      schema: {
        ...hide,
        tags,
        summary: 'Exchange the device code for the API key (once approved)',
        description:
          '200 `{apiKey: {..., key}, workspace}` once, after approval; the secret is at `apiKey.key` and is never shown again. Otherwise 400 with `code` `authorization_pending` (poll again after `details.intervalSeconds`), `slow_down` (polling faster than the interval), `access_denied`, `expired_token`, `already_consumed` or `invalid_device_code`.',
        body: Type.Object({ deviceCode: NonEmpty }, { additionalProperties: false }),
        response: { 200: Type.Object({ apiKey: ApiKeyWithSecret, workspace: Type.Object({ handle: Type.String(), name: Type.String() }) }) },
      },
    },
    async (request) => service.exchange(request.body.deviceCode),
  );
}
