import Type from 'typebox';

export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
export const Timestamp = Type.String({ format: 'date-time' });
export const NonEmptyString = Type.String({ minLength: 1 });
export const RoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('editor'), Type.Literal('viewer')]);
export const PermissionsMap = Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }));

export const WorkspaceSummary = Type.Object({ handle: Type.String(), name: Type.String() });
export const WorkspaceFull = Type.Object({
  handle: Type.String(),
  name: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  deletedAt: Nullable(Timestamp),
});

export const HandleParams = Type.Object({ workspaceHandle: Type.String({ minLength: 1, maxLength: 100 }) });

export const Member = Type.Object({
  userId: Type.String(),
  email: Type.String(),
  name: Nullable(Type.String()),
  role: RoleSchema,
  joinedAt: Timestamp,
});

export const Invitation = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: RoleSchema,
  invitedByUserId: Type.String(),
  acceptedAt: Nullable(Timestamp),
  revokedAt: Nullable(Timestamp),
  expiresAt: Timestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const ApiKeyRecord = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  role: Type.Union([RoleSchema, Type.Literal('custom')]),
  permissions: Nullable(PermissionsMap),
  prefix: Type.String({ description: 'The first characters of the secret, to recognise a key' }),
  createdByUserId: Nullable(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  expiresAt: Nullable(Timestamp),
  lastUsedAt: Nullable(Timestamp),
  revokedAt: Nullable(Timestamp),
});

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    role: Type.Optional(RoleSchema),
    permissions: Type.Optional(PermissionsMap),
    expiresInMs: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
