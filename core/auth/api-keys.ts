/**
 * API key records: creation (the secret returned once), the public view, listing and revocation.
 * Used by every plugin that hands out keys (workspaces' API Keys routes, agent login) through
 * `ctx.identity.apiKeys`, always with an EntityManager scoped to the key's workspace.
 */
import { isUuid } from '../tenancy/index.ts';
import type { EntityManager } from '@mikro-orm/core';
import { NotFound } from '../errors/index.ts';
import { ApiKey, type KeyRole, type Role } from '../identity/entities.ts';
import { issueKey, type ApiKeyResolver } from './keys.ts';
import type { PermissionCatalogue } from './permissions.ts';

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export interface ApiKeyView {
  id: string;
  name: string;
  role: KeyRole;
  permissions: Record<string, string[]> | null;
  prefix: string;
  createdByUserId: string | null;
  createdAt: string;
  updatedAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface CreateApiKeyInput {
  workspaceId: string;
  name: string;
  role?: Role;
  permissions?: Record<string, string[]> | null;
  expiresInMs?: number;
  createdByUserId: string | null;
}

export class ApiKeys {
  readonly #resolver: ApiKeyResolver;
  readonly #catalogue: PermissionCatalogue;

  constructor(resolver: ApiKeyResolver, catalogue: PermissionCatalogue) {
    this.#resolver = resolver;
    this.#catalogue = catalogue;
  }

  view(k: ApiKey): ApiKeyView {
    const pending = this.#resolver.pendingLastUsed(k.id);
    const last = pending && (!k.lastUsedAt || pending > k.lastUsedAt) ? pending : k.lastUsedAt;
    return {
      id: k.id,
      name: k.name,
      role: k.role,
      permissions: k.permissions ?? null,
      prefix: k.prefix,
      createdByUserId: k.createdByUserId ?? null,
      createdAt: k.createdAt.toISOString(),
      updatedAt: k.updatedAt.toISOString(),
      expiresAt: iso(k.expiresAt),
      lastUsedAt: iso(last),
      revokedAt: iso(k.revokedAt),
    };
  }

  /**
   * Creates a key. Role: the given one; `custom` when only explicit permissions are given; `admin`
   * when neither is. Unknown permissions answer 400. The secret is in the result and nowhere else.
   */
  async create(em: EntityManager, input: CreateApiKeyInput): Promise<ApiKeyView & { key: string }> {
    this.#catalogue.validateExplicit(input.permissions);
    const role: KeyRole = input.role ?? (input.permissions && Object.keys(input.permissions).length ? 'custom' : 'admin');
    const issued = issueKey();
    const key = em.create(ApiKey, {
      id: issued.id,
      workspaceId: input.workspaceId,
      name: input.name,
      role,
      permissions: input.permissions ?? null,
      prefix: issued.prefix,
      secretHash: issued.secretHash,
      createdByUserId: input.createdByUserId,
      expiresAt: input.expiresInMs ? new Date(Date.now() + input.expiresInMs) : null,
    } as ApiKey);
    await em.flush();
    return { ...this.view(key), key: issued.key };
  }

  async list(em: EntityManager): Promise<ApiKeyView[]> {
    const keys = await em.find(ApiKey, {}, { orderBy: { createdAt: 'desc', id: 'desc' } });
    return keys.map((k) => this.view(k));
  }

  /** Revokes a key of the EntityManager's workspace; refused from the next request on, on every node. */
  async revoke(em: EntityManager, id: string): Promise<void> {
    const key = isUuid(id) ? await em.findOne(ApiKey, { id }) : null;
    if (!key) throw new NotFound('API key was not found.');
    if (!key.revokedAt) {
      key.revokedAt = new Date();
      await em.flush();
    }
    await this.#resolver.invalidate(id);
  }
}
