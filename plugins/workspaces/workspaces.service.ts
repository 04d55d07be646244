/**
 * Workspaces, members, invitations and API keys. Every method that touches one workspace takes
 * its `WorkspaceRef` (resolved by the core guard) or works through the request's scoped
 * EntityManager, so nothing here can reach another tenant's rows.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../../core/db/index.ts';
import { randomToken, sha256Hex, uuidv7 } from '../../core/crypto/index.ts';
import { Conflict, InvalidRequest, NotFound } from '../../core/errors/index.ts';
import type { Role } from '../../core/identity/entities.ts';
import type { WorkspaceRef } from '../../core/auth/guard.ts';
import type { Identity } from '../../core/registry/index.ts';
import { isUuid, slugify } from '../../core/tenancy/index.ts';
import { Invitation } from './entities.ts';

const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export function invitationView(i: Invitation) {
  return {
    id: i.id,
    email: i.email,
    role: i.role,
    invitedByUserId: i.invitedByUserId,
    acceptedAt: iso(i.acceptedAt),
    revokedAt: iso(i.revokedAt),
    expiresAt: i.expiresAt.toISOString(),
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
  };
}

export class WorkspacesService {
  readonly #db: Database;
  readonly #identity: Identity;

  constructor(db: Database, identity: Identity) {
    this.#db = db;
    this.#identity = identity;
  }

  async create(userId: string, name: string) {
    const handle = slugify(name).slice(0, 48).replace(/-+$/g, '');
    if (!handle) throw new InvalidRequest('The workspace name needs at least one letter or digit.');
    const id = uuidv7();
    try {
      return await this.#db.transaction(async (c) => {
        const { rows } = await c.query<{ handle: string; name: string }>(
          'INSERT INTO core_workspaces (id, handle, name) VALUES ($1, $2, $3) RETURNING handle, name',
          [id, handle, name],
        );
        await c.query(`INSERT INTO core_memberships (workspace_id, user_id, role) VALUES ($1, $2, 'admin')`, [id, userId]);
        return rows[0];
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new Conflict(`A workspace with the handle '${handle}' already exists.`, { handle });
      throw err;
    }
  }

  async list(userId: string) {
    return (await this.#identity.sessions.workspacesOf(userId)).map((w) => ({ handle: w.handle, name: w.name }));
  }

  async get(ws: WorkspaceRef) {
    const rows = await this.#db.query<{ handle: string; name: string; created_at: Date; updated_at: Date; deleted_at: Date | null }>(
      'SELECT handle, name, created_at, updated_at, deleted_at FROM core_workspaces WHERE id = $1',
      [ws.id],
    );
    const w = rows[0];
    return { handle: w.handle, name: w.name, createdAt: w.created_at.toISOString(), updatedAt: w.updated_at.toISOString(), deletedAt: iso(w.deleted_at) };
  }

  async members(ws: WorkspaceRef) {
    const rows = await this.#db.query<{ user_id: string; email: string; name: string | null; role: Role; created_at: Date }>(
      `SELECT m.user_id, u.email, u.name, m.role, m.created_at FROM core_memberships m
         JOIN core_users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY m.created_at, m.user_id`,
      [ws.id],
    );
    return rows.map((r) => ({ userId: r.user_id, email: r.email, name: r.name, role: r.role, joinedAt: r.created_at.toISOString() }));
  }

  /** Changes a member's role or removes them; refuses (409) to leave the workspace without an admin. */
  async changeMember(ws: WorkspaceRef, userId: string, change: { remove: true } | { role: Role }): Promise<void> {
    await this.#db.transaction(async (c) => {
      const { rows } = await c.query<{ user_id: string; role: Role }>(
        `SELECT user_id, role FROM core_memberships WHERE workspace_id = $1 ORDER BY user_id FOR UPDATE`,
        [ws.id],
      );
      const target = rows.find((r) => r.user_id === userId);
      if (!target) throw new NotFound(`User '${userId}' is not a member of this workspace.`);
      const admins = rows.filter((r) => r.role === 'admin').length;
      const losesAdmin = target.role === 'admin' && ('remove' in change || change.role !== 'admin');
      if (losesAdmin && admins <= 1) throw new Conflict('The workspace must keep at least one admin.', { reason: 'last_admin' });
      if ('remove' in change) await c.query('DELETE FROM core_memberships WHERE workspace_id = $1 AND user_id = $2', [ws.id, userId]);
      else await c.query('UPDATE core_memberships SET role = $3, updated_at = now() WHERE workspace_id = $1 AND user_id = $2', [ws.id, userId, change.role]);
    });
  }

  // --- invitations --------------------------------------------------------------------------

  async invite(em: EntityManager, ws: WorkspaceRef, by: string, email: string, role: Role) {
    const token = randomToken(32);
    const inv = em.create(Invitation, {
      id: uuidv7(),
      workspaceId: ws.id,
      email: email.toLowerCase(),
      role,
      tokenHash: sha256Hex(token),
      invitedByUserId: by,
      expiresAt: new Date(Date.now() + INVITATION_TTL_MS),
    } as Invitation);
    await em.flush();
    return { invitation: inv, token };
  }

  async invitations(em: EntityManager) {
    return em.find(Invitation, {}, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  async revokeInvitation(em: EntityManager, id: string): Promise<void> {
    const inv = isUuid(id) ? await em.findOne(Invitation, { id }) : null;
    if (!inv || inv.revokedAt) throw new NotFound('Invitation was not found.');
    if (inv.acceptedAt) throw new Conflict('The invitation has already been accepted.', { reason: 'accepted' });
    inv.revokedAt = new Date();
    await em.flush();
  }

  /** Accepts an invitation by its token for the signed-in user; idempotent for the same user. */
  async accept(em: EntityManager, token: string, userId: string) {
    const inv = await em.findOne(Invitation, { tokenHash: sha256Hex(token) }, { filters: { tenant: false } });
    if (!inv || inv.revokedAt) throw new NotFound('Invitation was not found.');
    if (inv.acceptedAt && inv.acceptedByUserId !== userId) throw new Conflict('The invitation has already been used.', { reason: 'accepted' });
    if (!inv.acceptedAt && inv.expiresAt.getTime() <= Date.now()) throw new Conflict('The invitation has expired.', { reason: 'expired' });
    await this.#db.transaction(async (c) => {
      await c.query(
        `INSERT INTO core_memberships (workspace_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT (workspace_id, user_id) DO NOTHING`,
        [inv.workspaceId, userId, inv.role],
      );
      await c.query(
        `UPDATE workspaces_invitations SET accepted_at = coalesce(accepted_at, now()), accepted_by_user_id = $2, updated_at = now() WHERE id = $1`,
        [inv.id, userId],
      );
    });
    const [w] = await this.#db.query<{ handle: string; name: string }>('SELECT handle, name FROM core_workspaces WHERE id = $1', [inv.workspaceId]);
    return { workspace: { handle: w.handle, name: w.name }, role: inv.role };
  }

  // --- API keys (records are core's: ctx.identity.apiKeys) ----------------------------------

  createApiKey(em: EntityManager, ws: WorkspaceRef, input: { name: string; role?: Role; permissions?: Record<string, string[]>; expiresInMs?: number; createdByUserId: string | null }) {
    return this.#identity.apiKeys.create(em, { ...input, workspaceId: ws.id });
  }

  apiKeys(em: EntityManager) {
    return this.#identity.apiKeys.list(em);
  }

  revokeApiKey(em: EntityManager, id: string) {
    return this.#identity.apiKeys.revoke(em, id);
  }
}
