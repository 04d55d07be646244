/**
 * Core identity and tenancy tables: users, sessions, workspaces, memberships, API keys.
 * They live in core because every request's principal and workspace are resolved from them;
 * the workspaces plugin owns the routes that manage them.
 */
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { Migration } from '../db/index.ts';
import { tenantFilter, tenantProperties } from '../tenancy/index.ts';

export const ROLES = ['admin', 'editor', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export type KeyRole = Role | 'custom';

export const User = defineEntity({
  name: 'User',
  tableName: 'core_users',
  properties: {
    id: p.string().primary(),
    email: p.string().unique(),
    name: p.string().nullable(),
    passwordHash: p.string().hidden(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type User = InferEntity<typeof User>;

export const Workspace = defineEntity({
  name: 'Workspace',
  tableName: 'core_workspaces',
  properties: {
    id: p.uuid().primary(),
    handle: p.string().unique(),
    name: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
    deletedAt: p.datetime().nullable(),
  },
});
export type Workspace = InferEntity<typeof Workspace>;

export const Membership = defineEntity({
  name: 'Membership',
  tableName: 'core_memberships',
  filters: tenantFilter,
  properties: {
    workspaceId: p.uuid().primary(),
    userId: p.string().primary(),
    role: p.string().$type<Role>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Membership = InferEntity<typeof Membership>;

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'core_api_keys',
  filters: tenantFilter,
  properties: {
    id: p.uuid().primary(),
    ...tenantProperties,
    name: p.string(),
    role: p.string().$type<KeyRole>(),
    permissions: p.json<Record<string, string[]>>().nullable(),
    prefix: p.string(),
    secretHash: p.string().hidden(),
    createdByUserId: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
    expiresAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;

export const coreEntities = [User, Workspace, Membership, ApiKey];

export const coreMigrations: Migration[] = [
  {
    name: '0001_identity',
    up: `
      CREATE TABLE core_users (
        id text PRIMARY KEY,
        email text NOT NULL,
        name text,
        password_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX core_users_email_key ON core_users (lower(email));
      CREATE TABLE core_sessions (
        id text PRIMARY KEY,
        user_id text NOT NULL REFERENCES core_users(id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX core_sessions_user_idx ON core_sessions (user_id);
      CREATE TABLE core_workspaces (
        id uuid PRIMARY KEY,
        handle text NOT NULL UNIQUE,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE TABLE core_memberships (
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        user_id text NOT NULL REFERENCES core_users(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('admin','editor','viewer')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, user_id)
      );
      CREATE INDEX core_memberships_user_idx ON core_memberships (user_id);
      CREATE TABLE core_api_keys (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        name text NOT NULL,
        role text NOT NULL CHECK (role IN ('admin','editor','viewer','custom')),
        permissions jsonb,
        prefix text NOT NULL,
        secret_hash text NOT NULL,
        created_by_user_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz,
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      CREATE INDEX core_api_keys_workspace_idx ON core_api_keys (workspace_id, created_at);
    `,
  },
];
