import Type from 'typebox';
import type { App } from '../../core/registry/index.ts';
import { SessionRequired } from '../../core/errors/index.ts';
import type { FastifyRequest } from 'fastify';
import {
  ApiKeyRecord,
  CreateApiKeyBody,
  HandleParams,
  Invitation,
  Member,
  NonEmptyString,
  RoleSchema,
  WorkspaceFull,
  WorkspaceSummary,
} from './workspaces.schemas.ts';
import { invitationView, type WorkspacesService } from './workspaces.service.ts';

const tags = ['workspaces'];

function sessionUser(request: FastifyRequest) {
  if (request.principal?.kind !== 'session') throw new SessionRequired();
  return request.principal.user;
}

/** `request.workspace` is always set on routes with `:workspaceHandle` (the guard resolved it). */
const ws = (request: FastifyRequest) => request.workspace!;

export function workspacesRoutes(app: App, service: WorkspacesService, baseUrl: string): void {
  app.get(
    '/workspaces',
    { config: { auth: 'session' }, schema: { tags, summary: 'Workspaces the signed-in user belongs to', response: { 200: Type.Object({ items: Type.Array(WorkspaceSummary) }) } } },
    async (request) => ({ items: await service.list(sessionUser(request).id) }),
  );

  app.post(
    '/workspaces',
    {
      config: { auth: 'session' },
      schema: {
        tags,
        summary: 'Create a workspace; the creator becomes its admin',
        description: 'The handle is the name slugged (lowercase letters, digits and dashes); an existing handle answers 409 `conflict`.',
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 201: WorkspaceSummary },
      },
    },
    async (request, reply) => reply.code(201).send(await service.create(sessionUser(request).id, request.body.name)),
  );

  app.get(
    '/workspaces/:workspaceHandle',
    { config: { auth: 'session', permission: 'workspace.read' }, schema: { tags, summary: 'One workspace (full representation)', params: HandleParams, response: { 200: WorkspaceFull } } },
    async (request) => service.get(ws(request)),
  );

  app.get(
    '/workspaces/:workspaceHandle/users',
    { config: { auth: 'session', permission: 'workspace.read' }, schema: { tags, summary: 'Members of the workspace', params: HandleParams, response: { 200: Type.Object({ items: Type.Array(Member) }) } } },
    async (request) => ({ items: await service.members(ws(request)) }),
  );

  const UserParams = Type.Object({ workspaceHandle: HandleParams.properties.workspaceHandle, userId: NonEmptyString });

  app.patch(
    '/workspaces/:workspaceHandle/users/:userId',
    {
      config: { auth: 'session', permission: 'members.write' },
      schema: { tags, summary: "Change a member's role (409 when it would leave no admin)", params: UserParams, body: Type.Object({ role: RoleSchema }, { additionalProperties: false }), response: { 200: Member } },
    },
    async (request) => {
      await service.changeMember(ws(request), request.params.userId, { role: request.body.role });
      return (await service.members(ws(request))).find((m) => m.userId === request.params.userId)!;
    },
  );

  app.delete(
    '/workspaces/:workspaceHandle/users/:userId',
    { config: { auth: 'session', permission: 'members.write' }, schema: { tags, summary: 'Remove a member (409 when it would remove the last admin)', params: UserParams } },
    async (request, reply) => {
      await service.changeMember(ws(request), request.params.userId, { remove: true });
      return reply.code(204).send();
    },
  );

  // --- invitations ------------------------------------------------------------------------

  app.post(
    '/workspaces/:workspaceHandle/invitations',
    {
      config: { auth: 'session', permission: 'members.write' },
      schema: {
        tags,
        summary: 'Invite someone by email',
        description: 'Returns the invitation and, only in this response, its `token` and `acceptUrl`. The invitee signs in and calls `POST /api/v1/invitations/accept {token}`. Invitations expire after 7 days.',
        params: HandleParams,
        body: Type.Object({ email: Type.String({ format: 'email', maxLength: 320 }), role: Type.Optional(RoleSchema) }, { additionalProperties: false }),
        response: { 201: Type.Object({ invitation: Invitation, token: Type.String(), acceptUrl: Type.String() }) },
      },
    },
    async (request, reply) => {
      const { invitation, token } = await service.invite(request.em, ws(request), sessionUser(request).id, request.body.email, request.body.role ?? 'editor');
      return reply.code(201).send({ invitation: invitationView(invitation), token, acceptUrl: `${baseUrl}/invitations/accept?token=${encodeURIComponent(token)}` });
    },
  );

  app.get(
    '/workspaces/:workspaceHandle/invitations',
    { config: { auth: 'session', permission: 'members.write' }, schema: { tags, summary: 'List invitations (newest first)', params: HandleParams, response: { 200: Type.Object({ items: Type.Array(Invitation) }) } } },
    async (request) => ({ items: (await service.invitations(request.em)).map(invitationView) }),
  );

  app.delete(
    '/workspaces/:workspaceHandle/invitations/:invitationId',
    {
      config: { auth: 'session', permission: 'members.write' },
      schema: { tags, summary: 'Revoke a pending invitation (409 when already accepted)', params: Type.Object({ workspaceHandle: HandleParams.properties.workspaceHandle, invitationId: NonEmptyString }) },
    },
    async (request, reply) => {
      await service.revokeInvitation(request.em, request.params.invitationId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/invitations/accept',
    {
      config: { auth: 'session' },
      schema: {
        tags,
        summary: 'Accept an invitation as the signed-in user',
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 200: Type.Object({ workspace: WorkspaceSummary, role: RoleSchema }) },
      },
    },
    async (request) => service.accept(request.em, request.body.token, sessionUser(request).id),
  );

  // --- API keys ---------------------------------------------------------------------------

  app.post(
    '/workspaces/:workspaceHandle/api-keys',
    {
      config: { auth: 'session', permission: 'apiKeys.write' },
      schema: {
        tags,
        summary: 'Create an API key; the secret `key` is in this response only',
        description:
          'Role defaults to `admin`; with only `permissions` the role is `custom`. `permissions` (`{resource: [action]}`) is unioned with the role; unknown permissions answer 400.',
        params: HandleParams,
        body: CreateApiKeyBody,
        response: { 201: Type.Object({ apiKey: Type.Intersect([ApiKeyRecord, Type.Object({ key: Type.String() })]) }) },
      },
    },
    async (request, reply) => {
      const apiKey = await service.createApiKey(request.em, ws(request), { ...request.body, createdByUserId: sessionUser(request).id });
      return reply.code(201).send({ apiKey });
    },
  );

  app.get(
    '/workspaces/:workspaceHandle/api-keys',
    { config: { auth: 'session', permission: 'apiKeys.read' }, schema: { tags, summary: 'List API keys (never their secrets)', params: HandleParams, response: { 200: Type.Object({ items: Type.Array(ApiKeyRecord) }) } } },
    async (request) => ({ items: await service.apiKeys(request.em) }),
  );

  app.delete(
    '/workspaces/:workspaceHandle/api-keys/:keyId',
    {
      config: { auth: 'session', permission: 'apiKeys.write' },
      schema: { tags, summary: 'Revoke an API key; refused from the next request on', params: Type.Object({ workspaceHandle: HandleParams.properties.workspaceHandle, keyId: NonEmptyString }) },
    },
    async (request, reply) => {
      await service.revokeApiKey(request.em, request.params.keyId);
      return reply.code(204).send();
    },
  );
}
