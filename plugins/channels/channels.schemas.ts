import Type from 'typebox';

export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
export const Timestamp = Type.String({ format: 'date-time' });
export const NonEmptyString = Type.String({ minLength: 1 });
const JsonObject = Type.Object({}, { additionalProperties: true });


export const ChannelKindSchema = Type.Union([Type.Literal('api'), Type.Literal('cron'), Type.Literal('email'), Type.Literal('sms'), Type.Literal('webhook'), Type.Literal('custom'), Type.Literal('slack'), Type.Literal('discord'), Type.Literal('telegram')]);
export const ThreadStatusSchema = Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('archived')]);
export const DirectionSchema = Type.Union([Type.Literal('inbound'), Type.Literal('outbound'), Type.Literal('internal'), Type.Literal('system')]);
export const MessageStatusSchema = Type.Union([Type.Literal('pending'), Type.Literal('received'), Type.Literal('sent'), Type.Literal('delivered'), Type.Literal('failed')]);
export const MessageKindSchema = Type.Union([Type.Literal('text'), Type.Literal('event'), Type.Literal('call'), Type.Literal('comment'), Type.Literal('system')]);

export const Channel = Type.Object({
  id: Type.String(),
  channelConnectionId: Nullable(Type.String()),
  name: Type.String(),
  description: Nullable(Type.String()),
  kind: ChannelKindSchema,
  adapter: Type.String(),
  externalId: Nullable(Type.String()),
  metadata: Nullable(JsonObject),
  lastMessageAt: Nullable(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const Thread = Type.Object({
  id: Type.String(),
  channelId: Type.String(),
  title: Nullable(Type.String()),
  status: ThreadStatusSchema,
  externalId: Nullable(Type.String()),
  metadata: Nullable(JsonObject),
  lastMessageAt: Nullable(Timestamp),
  closedAt: Nullable(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const Author = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('agent'), Type.Literal('system'), Type.Literal('unknown')]),
    name: Type.Optional(NonEmptyString),
    email: Type.Optional(NonEmptyString),
    phone: Type.Optional(NonEmptyString),
    avatarUrl: Type.Optional(NonEmptyString),
    externalId: Type.Optional(NonEmptyString),
  },
  { additionalProperties: false },
);

export const AttachmentSchema = Type.Object(
  {
    name: Type.String(),
    contentType: Type.String(),
    url: Type.Optional(NonEmptyString),
    sizeBytes: Type.Optional(Type.Number({ minimum: 0 })),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

export const Message = Type.Object({
  id: Type.String(),
  channelId: Type.String(),
  threadId: Nullable(Type.String()),
  parentMessageId: Nullable(Type.String()),
  externalId: Nullable(Type.String()),
  direction: DirectionSchema,
  status: MessageStatusSchema,
  kind: MessageKindSchema,
  text: Nullable(Type.String()),
  raw: Type.Unknown({ description: 'The payload as received from (or sent to) the platform; `null` when there is none. Always present.' }),
  author: Author,
  metadata: Nullable(JsonObject),
  attachments: Type.Array(AttachmentSchema),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const CreateChannelBody = Type.Object(
  {
    name: NonEmptyString,
    kind: ChannelKindSchema,
    description: Type.Optional(Nullable(Type.String())),
    adapter: Type.Optional(NonEmptyString),
    externalId: Type.Optional(Nullable(Type.String())),
    metadata: Type.Optional(Nullable(JsonObject)),
    config: Type.Optional(
      Type.Object({}, {
        additionalProperties: true,
        description:
          "Adapter settings (Trellis extension), validated by the adapter's schema. Secret fields (tokens, signing secrets) are encrypted at rest and never returned; read the non-secret part with GET /channels/{channelId}/adapter.",
      }),
    ),
  },
  { additionalProperties: false },
);

export const UpdateChannelBody = Type.Object(
  {
    name: Type.Optional(NonEmptyString),
    description: Type.Optional(Nullable(Type.String())),
    externalId: Type.Optional(Nullable(Type.String())),
    metadata: Type.Optional(Nullable(JsonObject)),
    config: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'Merged into the adapter settings: omitted fields (secrets included) keep their stored value, `null` unsets an optional field.' }),
    ),
  },
  { additionalProperties: false },
);

export const CreateThreadBody = Type.Object(
  {
    title: Type.Optional(Nullable(Type.String())),
    status: Type.Optional(ThreadStatusSchema),
    externalId: Type.Optional(Nullable(Type.String())),
    metadata: Type.Optional(Nullable(JsonObject)),
  },
  { additionalProperties: false },
);

export const UpdateThreadBody = Type.Object(
  {
    title: Type.Optional(Nullable(Type.String())),
    status: Type.Optional(ThreadStatusSchema),
    externalId: Type.Optional(Nullable(Type.String())),
    metadata: Type.Optional(Nullable(JsonObject)),
  },
  { additionalProperties: false },
);

export const CreateMessageBody = Type.Object(
  {
    direction: DirectionSchema,
    author: Author,
    parentMessageId: Type.Optional(Nullable(Type.String())),
    externalId: Type.Optional(Nullable(Type.String())),
    status: Type.Optional(MessageStatusSchema),
    kind: Type.Optional(MessageKindSchema),
    text: Type.Optional(Nullable(Type.String())),
    raw: Type.Optional(Type.Unknown()),
    metadata: Type.Optional(Nullable(JsonObject)),
    attachments: Type.Optional(Type.Array(AttachmentSchema)),
  },
  { additionalProperties: false },
);

export const AdapterInfo = Type.Object({
  adapter: Type.String(),
  kind: ChannelKindSchema,
  config: JsonObject,
  secrets: Type.Record(Type.String(), Type.Boolean(), { description: 'For each secret field: whether a value is stored (values are never returned).' }),
  inboundUrl: Nullable(Type.String()),
  outbound: Type.Boolean(),
});

export const ChannelParams = Type.Object({ channelId: NonEmptyString });
export const ThreadParams = Type.Object({ channelId: NonEmptyString, threadId: NonEmptyString });
export const ListMessagesQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'At most this many of the latest messages (default 200), oldest first.' })) },
  { additionalProperties: false },
);

/** The service-level `postMessage` input (api.ts `PostMessageInput`), checked like the route body. */
export const PostMessageInputSchema = Type.Object(
  {
    text: Nullable(Type.String()),
    threadId: Type.Optional(Nullable(Type.String())),
    direction: Type.Optional(DirectionSchema),
    kind: Type.Optional(MessageKindSchema),
    author: Type.Optional(Author),
    metadata: Type.Optional(Nullable(JsonObject)),
  },
  { additionalProperties: false },
);
