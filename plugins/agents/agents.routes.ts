import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import type { AgentsService } from './agents.service.ts';

const tags = ['agents'];
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const Capabilities = Type.Object({
  webAccess: Type.Boolean(),
  browserAccess: Type.Boolean(),
  objectsAccess: Type.Boolean(),
  linkedCredentialIds: Type.Array(Type.String({ minLength: 1 })),
});
const AgentSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String(),
  url: Type.String(),
  description: Nullable(Type.String()),
  model: Nullable(Type.String()),
  capabilities: Capabilities,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const Agent = Type.Intersect([AgentSummary, Type.Object({ instructions: Nullable(Type.String()) })]);
const CapabilitiesInput = Type.Partial(Type.Object({
  webAccess: Type.Boolean(),
  browserAccess: Type.Boolean(),
  objectsAccess: Type.Boolean(),
  linkedCredentialIds: Type.Array(Type.String({ minLength: 1 }), { maxItems: 50 }),
}), { additionalProperties: false });
const Fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  handle: Type.String({ minLength: 1, maxLength: 100 }),
  description: Nullable(Type.String({ maxLength: 2000 })),
  model: Nullable(Type.String({ minLength: 1, maxLength: 200 })),
  instructions: Nullable(Type.String({ maxLength: 100_000 })),
  capabilities: CapabilitiesInput,
};
const CreateBody = Type.Object(
  { name: Fields.name, handle: Type.Optional(Fields.handle), description: Type.Optional(Fields.description), model: Type.Optional(Fields.model), instructions: Type.Optional(Fields.instructions), capabilities: Type.Optional(Fields.capabilities) },
  { additionalProperties: false },
);
const PatchBody = Type.Partial(Type.Object(Fields), { additionalProperties: false });

const Chat = Type.Object({ id: Type.String(), agentId: Type.String(), title: Nullable(Type.String()), messageCount: Type.Integer(), lastMessageAt: Nullable(Type.String()), createdAt: Type.String(), updatedAt: Type.String() });
const ChatMessage = Type.Object({
  id: Type.String(),
  chatId: Type.String(),
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
  content: Type.String(),
  status: Type.Union([Type.Literal('completed'), Type.Literal('failed')]),
  error: Nullable(Type.String()),
  model: Nullable(Type.String()),
  usage: Nullable(Type.Object({ promptTokens: Type.Integer(), completionTokens: Type.Integer() })),
  createdAt: Type.String(),
});

const AgentParams = Type.Object({ agentId: Type.String({ minLength: 1, maxLength: 500, description: 'The agent id, a name-id slug, the handle or the legacy handle URL (the `url`)' }) });
const ChatParams = Type.Object({ agentId: AgentParams.properties.agentId, chatId: Type.String({ minLength: 1, maxLength: 100 }) });

const ws = (request: FastifyRequest) => request.workspace!;

export function agentsRoutes(app: App, service: AgentsService): void {
  app.get('/agents', { config: { permission: 'agents.read' }, schema: { tags, summary: 'List agents (summaries, newest first)', response: { 200: Type.Array(AgentSummary) } } }, async (request) =>
    (await service.list(ws(request).id)).map((a) => service.summary(a, ws(request).handle)),
  );

  app.post(
    '/agents',
    {
      config: { permission: 'agents.write' },
      schema: {
        tags,
        summary: 'Create an agent',
        description: 'The handle defaults to the name slugged; an existing handle answers 409. `model` null uses the model provider\'s default. `capabilities.linkedCredentialIds` must name credentials of this workspace.',
        body: CreateBody,
        response: { 201: Agent },
      },
    },
    async (request, reply) => reply.code(201).send(service.full(await service.create(ws(request).id, request.body), ws(request).handle)),
  );

  app.get('/agents/:agentId', { config: { permission: 'agents.read' }, schema: { tags, summary: 'One agent (full)', params: AgentParams, response: { 200: Agent } } }, async (request) =>
    service.full(await service.find(ws(request).id, request.params.agentId), ws(request).handle),
  );

  app.patch('/agents/:agentId', { config: { permission: 'agents.write' }, schema: { tags, summary: 'Change an agent', params: AgentParams, body: PatchBody, response: { 200: Agent } } }, async (request) =>
    service.full(await service.update(ws(request).id, request.params.agentId, request.body), ws(request).handle),
  );

  app.delete('/agents/:agentId', { config: { permission: 'agents.write' }, schema: { tags, summary: 'Delete an agent and its chats (204)', params: AgentParams } }, async (request, reply) => {
    await service.remove(ws(request).id, request.params.agentId);
    return reply.code(204).send();
  });

  app.get('/agents/:agentId/chats', { config: { permission: 'agents.chat' }, schema: { tags, summary: "The agent's chats, most recent activity first", params: AgentParams, response: { 200: Type.Array(Chat) } } }, async (request) =>
    service.chats(ws(request).id, request.params.agentId),
  );

  app.post(
    '/agents/:agentId/chats',
    { config: { permission: 'agents.chat' }, schema: { tags, summary: 'Start a chat', params: AgentParams, body: Type.Optional(Type.Object({ title: Type.Optional(Nullable(Type.String({ maxLength: 200 }))) }, { additionalProperties: false })), response: { 201: Chat } } },
    async (request, reply) => reply.code(201).send(await service.createChat(ws(request).id, request.params.agentId, (request.body as { title?: string | null } | undefined)?.title ?? null)),
  );

  app.get(
    '/agents/:agentId/chats/:chatId',
    { config: { permission: 'agents.chat' }, schema: { tags, summary: 'One chat with its messages (oldest first)', params: ChatParams, response: { 200: Type.Intersect([Chat, Type.Object({ messages: Type.Array(ChatMessage) })]) } } },
    async (request) => service.chat(ws(request).id, request.params.agentId, request.params.chatId),
  );

  app.post(
    '/agents/:agentId/chats/:chatId/messages',
    {
      config: { permission: 'agents.chat' },
      schema: {
        tags,
        summary: 'Send a message; the agent answers',
        description:
          'Stores the user message, sends the agent\'s instructions and the last 50 messages to the model provider, and answers 201 `{messages: [user, assistant]}`. When the provider fails, the assistant message has `status: failed` and `error` (the user message is kept).',
        params: ChatParams,
        body: Type.Object({ content: Type.String({ minLength: 1, maxLength: 100_000 }) }, { additionalProperties: false }),
        response: { 201: Type.Object({ messages: Type.Array(ChatMessage) }) },
      },
    },
    async (request, reply) => reply.code(201).send(await service.send(ws(request).id, request.params.agentId, request.params.chatId, request.body.content)),
  );
}
