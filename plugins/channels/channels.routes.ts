import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import {
  AdapterInfo,
  Channel,
  ChannelParams,
  CreateChannelBody,
  CreateMessageBody,
  CreateThreadBody,
  ListMessagesQuery,
  Message,
  Thread,
  ThreadParams,
  UpdateChannelBody,
  UpdateThreadBody,
} from './channels.schemas.ts';
import type { ChannelsService } from './channels.service.ts';

const tags = ['channels'];
const ws = (request: FastifyRequest) => request.workspace!.id;

const MESSAGE_CREATE_DOC =
  'Answers 201 with the created Message. An `externalId` already stored in this channel answers 200 with the stored message instead ' +
  '(idempotent retries; nothing new is stored). Defaults: `kind` text, `raw` null, `attachments` [], `status` received for inbound, ' +
  'internal and system messages; an outbound message is `pending` and queued for delivery through the channel adapter ' +
  '(then `sent`/`delivered`, or `failed` with `metadata.delivery.error`); adapters without outbound delivery (`api`) record it as `sent`. ' +
  'A `parentMessageId` must name a message of the same channel (400 otherwise). Publishes `channels.message.created`.';

export function channelsRoutes(app: App, service: ChannelsService, inboundBodyLimit: number): void {
  app.get(
    '/channels',
    { config: { permission: 'channels.read' }, schema: { tags, summary: 'List channels, most recently updated first', response: { 200: Type.Array(Channel) } } },
    async (request) => service.listChannels(ws(request)),
  );

  app.post(
    '/channels',
    {
      config: { permission: 'channels.write' },
      schema: {
        tags,
        summary: 'Create a channel',
        description:
          "`adapter` defaults to the kind (required for kind `custom`); an unknown adapter, or one that does not serve the kind, answers 400. `config` holds the adapter's settings; its secret fields are stored encrypted and never returned.",
        body: CreateChannelBody,
        response: { 201: Channel },
      },
    },
    async (request, reply) => reply.code(201).send(await service.createChannel(ws(request), request.body as never)),
  );

  app.get(
    '/channels/:channelId',
    { config: { permission: 'channels.read' }, schema: { tags, summary: 'One channel', params: ChannelParams, response: { 200: Channel } } },
    async (request) => service.getChannel(ws(request), request.params.channelId),
  );

  app.patch(
    '/channels/:channelId',
    {
      config: { permission: 'channels.write' },
      schema: { tags, summary: 'Update a channel (name, description, externalId, metadata, adapter config); kind and adapter are fixed', params: ChannelParams, body: UpdateChannelBody, response: { 200: Channel } },
    },
    async (request) => service.updateChannel(ws(request), request.params.channelId, request.body as never),
  );

  app.delete(
    '/channels/:channelId',
    { config: { permission: 'channels.write' }, schema: { tags, summary: 'Delete a channel with its threads and messages (204)', params: ChannelParams } },
    async (request, reply) => {
      await service.deleteChannel(ws(request), request.params.channelId);
      return reply.code(204).send();
    },
  );

  app.get(
    '/channels/:channelId/adapter',
    {
      config: { permission: 'channels.read' },
      schema: {
        tags,
        summary: "The channel's adapter settings without secrets, and its inbound URL (Trellis extension)",
        params: ChannelParams,
        response: { 200: AdapterInfo },
      },
    },
    async (request) => service.adapterInfo(ws(request), request.params.channelId),
  );

  app.get(
    '/channels/:channelId/threads',
    { config: { permission: 'channels.read' }, schema: { tags, summary: 'List threads by most recent activity (last message, else creation)', params: ChannelParams, response: { 200: Type.Array(Thread) } } },
    async (request) => service.listThreads(ws(request), request.params.channelId),
  );

  app.post(
    '/channels/:channelId/threads',
    {
      config: { permission: 'channels.write' },
      schema: {
        tags,
        summary: 'Create a thread',
        description: '`status` defaults to open; a thread created closed gets `closedAt`. An `externalId` already used by a thread of this channel answers 409.',
        params: ChannelParams,
        body: CreateThreadBody,
        response: { 201: Thread },
      },
    },
    async (request, reply) => reply.code(201).send(await service.createThread(ws(request), request.params.channelId, request.body as never)),
  );

  app.get(
    '/channels/:channelId/threads/:threadId',
    { config: { permission: 'channels.read' }, schema: { tags, summary: 'One thread', params: ThreadParams, response: { 200: Thread } } },
    async (request) => service.getThread(ws(request), request.params.channelId, request.params.threadId),
  );

  app.patch(
    '/channels/:channelId/threads/:threadId',
    {
      config: { permission: 'channels.write' },
      schema: {
        tags,
        summary: 'Update a thread: title, status, externalId, metadata (Trellis extension)',
        description: 'Status moves freely between open, closed and archived; closing sets `closedAt`, reopening clears it, archiving keeps it. An `externalId` used by another thread of the channel answers 409.',
        params: ThreadParams,
        body: UpdateThreadBody,
        response: { 200: Thread },
      },
    },
    async (request) => service.updateThread(ws(request), request.params.channelId, request.params.threadId, request.body as never),
  );

  app.get(
    '/channels/:channelId/messages',
    {
      config: { permission: 'channels.read' },
      schema: { tags, summary: 'Top-level messages of the channel (not in a thread), oldest first', params: ChannelParams, querystring: ListMessagesQuery, response: { 200: Type.Array(Message) } },
    },
    async (request) => service.listMessages(ws(request), request.params.channelId, null, request.query.limit),
  );

  app.post(
    '/channels/:channelId/messages',
    {
      config: { permission: 'channels.write' },
      schema: { tags, summary: 'Create a channel-level message (no thread)', description: MESSAGE_CREATE_DOC, params: ChannelParams, body: CreateMessageBody, response: { 200: Message, 201: Message } },
    },
    async (request, reply) => {
      const { message, created } = await service.createMessage(ws(request), request.params.channelId, null, request.body as never);
      return reply.code(created ? 201 : 200).send(message);
    },
  );

  app.get(
    '/channels/:channelId/threads/:threadId/messages',
    {
      config: { permission: 'channels.read' },
      schema: { tags, summary: 'Messages of a thread, oldest first', params: ThreadParams, querystring: ListMessagesQuery, response: { 200: Type.Array(Message) } },
    },
    async (request) => service.listMessages(ws(request), request.params.channelId, request.params.threadId, request.query.limit),
  );

  app.post(
    '/channels/:channelId/threads/:threadId/messages',
    {
      config: { permission: 'channels.write' },
      schema: { tags, summary: 'Create a message in a thread', description: MESSAGE_CREATE_DOC, params: ThreadParams, body: CreateMessageBody, response: { 200: Message, 201: Message } },
    },
    async (request, reply) => {
      const { message, created } = await service.createMessage(ws(request), request.params.channelId, request.params.threadId, request.body as never);
      return reply.code(created ? 201 : 200).send(message);
    },
  );

  // Inbound webhooks: public (the platform's signature is the credential), verified on the raw body.
  app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: inboundBodyLimit }, (_req, body, done) => done(null, body));
    raw.post(
      '/channels/:channelId/inbound',
      {
        config: { auth: 'public' },
        bodyLimit: inboundBodyLimit,
        schema: {
          tags,
          summary: "Inbound webhook of a channel's adapter (Slack Events, Discord interactions, Telegram updates, Twilio SMS, Standard Webhooks, raw MIME e-mail)",
          description:
            "No API key: the adapter verifies the platform's signature on the raw body (401 `invalid_signature` when missing, wrong, stale or replayed; nothing is stored). Messages are stored once per `externalId`. Default answer 200 `{received, duplicates}`; some platforms get their protocol's answer (url_verification challenge, PING, TwiML).",
          params: ChannelParams,
        },
      },
      async (request, reply) => {
        const headers: Record<string, string | undefined> = {};
        for (const [k, v] of Object.entries(request.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
        const out = await service.inbound((request.params as { channelId: string }).channelId, {
          method: request.method,
          headers,
          rawBody: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
          query: Object.fromEntries(Object.entries((request.query as Record<string, unknown>) ?? {}).map(([k, v]) => [k, String(v)])),
          url: service.publicUrl(request.url),
          now: Math.floor(Date.now() / 1000),
        });
        if (out.contentType) reply.type(out.contentType);
        return reply.code(out.status).send(out.body as never);
      },
    );
  });
}
