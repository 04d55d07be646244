import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { tenantFilter, tenantProperties } from '../../core/tenancy/index.ts';
import type { Migration } from '../../core/db/index.ts';
import type { Role } from '../../core/identity/entities.ts';

export const Invitation = defineEntity({
  name: 'Invitation',
  tableName: 'workspaces_invitations',
  filters: tenantFilter,
  properties: {
    id: p.uuid().primary(),
    ...tenantProperties,
    email: p.string(),
    role: p.string().$type<Role>(),
    tokenHash: p.string().hidden(),
    invitedByUserId: p.string(),
    acceptedAt: p.datetime().nullable(),
    acceptedByUserId: p.string().nullable(),
    revokedAt: p.datetime().nullable(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Invitation = InferEntity<typeof Invitation>;

export const migrations: Migration[] = [
  {
    name: '0001_invitations',
    up: `
      CREATE TABLE workspaces_invitations (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        email text NOT NULL,
        role text NOT NULL CHECK (role IN ('admin','editor','viewer')),
        token_hash text NOT NULL UNIQUE,
        invited_by_user_id text NOT NULL,
        accepted_at timestamptz,
        accepted_by_user_id text,
        revoked_at timestamptz,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX workspaces_invitations_ws_idx ON workspaces_invitations (workspace_id, created_at);
    `,
  },
];
