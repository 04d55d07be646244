import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import { SessionRequired } from '../../core/errors/index.ts';
import type { App } from '../../core/registry/index.ts';
import type { NotificationsService } from './notifications.service.ts';

const tags = ['notifications'];
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const NonEmpty = Type.String({ minLength: 1 });
const Short = Type.String({ minLength: 1, maxLength: 200 });
const JsonObject = Type.Record(Type.String(), Type.Unknown());

const Registration = Type.Object({
  installationId: Type.String(),
  userId: Type.String(),
  userName: Type.String(),
  userEmail: Type.String(),
  platform: Type.String(),
  permissionStatus: Type.String(),
  providerPushTokenPreview: Type.String(),
  deviceName: Nullable(Type.String()),
  deviceModel: Nullable(Type.String()),
  osName: Nullable(Type.String()),
  osVersion: Nullable(Type.String()),
  appVersion: Nullable(Type.String()),
  disabledAt: Nullable(Type.String()),
  disabledReason: Nullable(Type.String()),
  lastRegisteredAt: Type.String(),
  lastSeenAt: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

const RegisterBody = Type.Object(
  {
    installationId: Type.String({ minLength: 1, maxLength: 200 }),
    pushToken: Type.String({ minLength: 1, maxLength: 4096 }),
    platform: Type.Union([Type.Literal('ios'), Type.Literal('android'), Type.Literal('web')]),
    permissionStatus: Type.Union([Type.Literal('granted'), Type.Literal('denied'), Type.Literal('undetermined')]),
    deviceName: Type.Optional(Nullable(Short)),
    deviceModel: Type.Optional(Nullable(Short)),
    osName: Type.Optional(Nullable(Short)),
    osVersion: Type.Optional(Nullable(Short)),
    appVersion: Type.Optional(Nullable(Short)),
  },
  { additionalProperties: false },
);

const SendBody = Type.Object(
  {
    title: NonEmpty,
    body: NonEmpty,
    data: Type.Optional(JsonObject),
    subtitle: Type.Optional(NonEmpty),
    sound: Type.Optional(Type.Literal('default')),
    badge: Type.Optional(Type.Integer({ minimum: 0 })),
    channelId: Type.Optional(NonEmpty),
    ttlSeconds: Type.Optional(Type.Integer({ minimum: 1 })),
    priority: Type.Optional(Type.Union([Type.Literal('default'), Type.Literal('normal'), Type.Literal('high')])),
    userIds: Type.Optional(Type.Array(NonEmpty, { minItems: 1 })),
    installationIds: Type.Optional(Type.Array(NonEmpty, { minItems: 1 })),
  },
  { additionalProperties: false },
);

const Outcome = {
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
  message: Nullable(Type.String()),
  error: Nullable(Type.String()),
  details: Nullable(JsonObject),
};

const SendResponse = Type.Object({
  registrationCount: Type.Integer({ minimum: 0 }),
  acceptedCount: Type.Integer({ minimum: 0 }),
  failedCount: Type.Integer({ minimum: 0 }),
  results: Type.Array(Type.Object({ installationId: Type.String(), userId: Type.String(), providerPushTokenPreview: Type.String(), ticketId: Nullable(Type.String()), ...Outcome })),
});

const ReceiptsBody = Type.Object(
  { items: Type.Array(Type.Object({ installationId: NonEmpty, receiptId: NonEmpty }, { additionalProperties: false }), { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false },
);
const ReceiptsResponse = Type.Object({ items: Type.Array(Type.Object({ installationId: Type.String(), receiptId: Type.String(), ...Outcome, deactivated: Type.Boolean() })) });

function sessionUser(request: FastifyRequest): string {
  if (request.principal?.kind !== 'session') throw new SessionRequired('A device registers as the signed-in user: use a session, not an API key.');
  return request.principal.user.id;
}
const ws = (request: FastifyRequest) => request.workspace!.id;

export function notificationsRoutes(app: App, service: NotificationsService): void {
  app.get(
    '/notifications/devices',
    { config: { permission: 'notifications.read' }, schema: { tags, summary: 'Active push registrations of workspace members', response: { 200: Type.Object({ items: Type.Array(Registration) }) } } },
    async (request) => ({ items: await service.devices(ws(request)) }),
  );

  app.post(
    '/notifications/devices',
    {
      config: { auth: 'session', permission: 'notifications.register' },
      schema: {
        tags,
        summary: "Register (or refresh) the signed-in user's device",
        description: 'Session only (with a workspace header). Idempotent by `installationId`: registering again updates the token and details and re-enables a deactivated device. The push token is stored encrypted; responses show only a masked preview.',
        body: RegisterBody,
        response: { 200: Registration },
      },
    },
    async (request) => service.register(ws(request), sessionUser(request), request.body),
  );

  app.delete(
    '/notifications/devices/:installationId',
    {
      config: { auth: 'session', permission: 'notifications.register' },
      schema: { tags, summary: "Remove one of the signed-in user's devices (204)", params: Type.Object({ installationId: Type.String({ minLength: 1, maxLength: 200 }) }) },
    },
    async (request, reply) => {
      await service.unregister(ws(request), sessionUser(request), request.params.installationId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/notifications/send',
    {
      config: { permission: 'notifications.send' },
      schema: {
        tags,
        summary: 'Send a push notification',
        description: 'Without `userIds`/`installationIds` every active registration in the workspace is targeted. A ticket error `DeviceNotRegistered` deactivates that device.',
        body: SendBody,
        response: { 200: SendResponse },
      },
    },
    async (request) => service.send(ws(request), request.body),
  );

  app.post(
    '/notifications/receipts',
    {
      config: { permission: 'notifications.send' },
      schema: {
        tags,
        summary: 'Resolve delivery receipts of sent tickets',
        description: '`DeviceNotRegistered` deactivates the device (`deactivated: true`). A receipt the provider has not produced yet answers `error: ReceiptNotReady`; a ticket this workspace did not send to that installation answers `error: UnknownReceipt`.',
        body: ReceiptsBody,
        response: { 200: ReceiptsResponse },
      },
    },
    async (request) => service.receipts(ws(request), request.body.items),
  );
}
