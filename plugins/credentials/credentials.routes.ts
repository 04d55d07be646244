import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import { SessionRequired } from '../../core/errors/index.ts';
import type { App } from '../../core/registry/index.ts';
import type { CredentialsService } from './credentials.service.ts';

const tags = ['credentials'];
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const NonEmpty = Type.String({ minLength: 1, maxLength: 4096 });
const Kind = Type.Union([Type.Literal('mcp'), Type.Literal('native')]);
const CredType = Type.Union([Type.Literal('oauth'), Type.Literal('bearerToken')]);

const Tool = Type.Object({ name: Type.String(), title: Type.String(), description: Type.String(), tags: Type.Array(Type.String()) });
export const Credential = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  credentialKind: Kind,
  integrationKey: Nullable(Type.String()),
  type: CredType,
  mcpServerName: Nullable(Type.String()),
  mcpServerUrl: Type.String(),
  hasAccessToken: Type.Boolean(),
  hasClientId: Type.Boolean(),
  hasClientSecret: Type.Boolean(),
  availableTools: Nullable(Type.Array(Tool)),
  toolDiscoveryError: Nullable(Type.String()),
  lastValidatedAt: Nullable(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

const Handle = Type.Object({ workspaceHandle: Type.String({ minLength: 1, maxLength: 100 }) });
const One = Type.Object({ workspaceHandle: Type.String({ minLength: 1, maxLength: 100 }), credentialId: Type.String({ minLength: 1, maxLength: 100 }) });

const CreateBody = Type.Object(
  {
    name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    credentialKind: Kind,
    integrationKey: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    type: CredType,
    mcpServerName: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    mcpServerUrl: Type.String({ minLength: 1, maxLength: 2048 }),
    accessToken: Type.Optional(NonEmpty),
    clientId: Type.Optional(NonEmpty),
    clientSecret: Type.Optional(NonEmpty),
  },
  { additionalProperties: false },
);

const PatchBody = Type.Object(
  {
    name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    integrationKey: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    type: Type.Optional(CredType),
    mcpServerName: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    mcpServerUrl: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    accessToken: Type.Optional(Nullable(NonEmpty)),
    clientId: Type.Optional(Nullable(NonEmpty)),
    clientSecret: Type.Optional(Nullable(NonEmpty)),
  },
  { additionalProperties: false },
);

function userId(request: FastifyRequest): string {
  if (request.principal?.kind !== 'session') throw new SessionRequired();
  return request.principal.user.id;
}
const ws = (request: FastifyRequest) => request.workspace!.id;

export function credentialsRoutes(app: App, service: CredentialsService): void {
  const base = '/workspaces/:workspaceHandle/credentials';
  app.get(
    base,
    { config: { auth: 'session', permission: 'credentials.read' }, schema: { tags, summary: 'Shared credentials (secrets omitted), newest first', params: Handle, response: { 200: Type.Object({ items: Type.Array(Credential) }) } } },
    async (request) => ({ items: await service.list(ws(request)) }),
  );

  app.post(
    base,
    {
      config: { auth: 'session', permission: 'credentials.write' },
      schema: {
        tags,
        summary: 'Create a credential and discover its MCP tools',
        description:
          '`bearerToken` needs `accessToken`; `oauth` needs `clientId` or `accessToken`; `native` needs `integrationKey`. Tokens are encrypted at rest and never returned. The server at `mcpServerUrl` is contacted (Streamable HTTP, through the SSRF guard) to list its tools: on failure the credential is still created, with `toolDiscoveryError` set and `availableTools` null.',
        params: Handle,
        body: CreateBody,
        response: { 201: Credential },
      },
    },
    async (request, reply) => reply.code(201).send(await service.create(ws(request), userId(request), request.body)),
  );

  app.get(
    `${base}/:credentialId`,
    { config: { auth: 'session', permission: 'credentials.read' }, schema: { tags, summary: 'One credential', params: One, response: { 200: Credential } } },
    async (request) => service.get(ws(request), request.params.credentialId),
  );

  app.patch(
    `${base}/:credentialId`,
    {
      config: { auth: 'session', permission: 'credentials.write' },
      schema: { tags, summary: 'Change a credential; a new URL or access token re-runs tool discovery; null clears a secret', params: One, body: PatchBody, response: { 200: Credential } },
    },
    async (request) => service.update(ws(request), request.params.credentialId, request.body),
  );

  app.post(
    `${base}/:credentialId/discover`,
    { config: { auth: 'session', permission: 'credentials.write' }, schema: { tags, summary: 'Discover the MCP tools again (updates availableTools, toolDiscoveryError, lastValidatedAt)', params: One, response: { 200: Credential } } },
    async (request) => service.discover(ws(request), request.params.credentialId),
  );

  app.delete(
    `${base}/:credentialId`,
    { config: { auth: 'session', permission: 'credentials.write' }, schema: { tags, summary: 'Delete a credential (204)', params: One } },
    async (request, reply) => {
      await service.remove(ws(request), request.params.credentialId);
      return reply.code(204).send();
    },
  );
}
