/**
 * The device-style agent login (RFC 8628 in spirit): an agent starts a request and gets a
 * `deviceCode` (secret, kept by the agent) and a `userCode` (shown to the customer). The customer,
 * signed in, approves one workspace; the agent's next exchange receives a workspace-scoped API key,
 * once.
 *
 * States: pending -> approved | denied | expired; approved -> consumed (the exchange that issues
 * the key) | expired. The key is created and the request marked consumed in one transaction under
 * a row lock, so two concurrent exchanges never issue two keys and a crash in between leaves the
 * request approved (the next exchange issues it); `issuing` is the state inside that transaction.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { randomInt } from 'node:crypto';
import { randomToken, sha256Hex, uuidv7 } from '../../core/crypto/index.ts';
import type { Database } from '../../core/db/index.ts';
import { Conflict, NotFound, defineError, insufficientPermissions } from '../../core/errors/index.ts';
import type { Role } from '../../core/identity/entities.ts';
import type { Identity } from '../../core/registry/index.ts';
import { TENANT_FILTER } from '../../core/tenancy/index.ts';

/** Exchange answers while no key can be issued, in the spec's error shape (RFC 8628 names). */
export const AuthorizationPending = defineError('authorization_pending', 400, 'The customer has not approved the request yet; poll again after intervalSeconds.');
export const SlowDown = defineError('slow_down', 400, 'Polling too fast; wait intervalSeconds between exchanges.');
export const AccessDenied = defineError('access_denied', 400, 'The customer denied the request.');
export const ExpiredToken = defineError('expired_token', 400, 'The login request has expired; start a new one.');
export const AlreadyConsumed = defineError('already_consumed', 400, 'The API key for this request was already issued; it is shown only once.');
export const InvalidDeviceCode = defineError('invalid_device_code', 400, 'The device code is unknown.');

const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'; // no vowels (no words), no look-alikes
export const INTERVAL_SECONDS = 5;
export const DEFAULT_LOGIN_TTL_MS = 15 * 60 * 1000;
export const DEFAULT_KEY_TTL_MS = 90 * 24 * 3600 * 1000;

export interface StartInput {
  agentName: string;
  agentDescription?: string;
  workspaceHandle?: string;
  apiKeyName?: string;
  role?: Role;
  permissions?: Record<string, string[]>;
  apiKeyExpiresInMs?: number;
  loginExpiresInMs?: number;
}

interface Row {
  id: string;
  user_code: string;
  status: string;
  agent_name: string;
  agent_description: string | null;
  requested_workspace_handle: string | null;
  role: string;
  permissions: Record<string, string[]> | null;
  api_key_name: string;
  api_key_expires_in_ms: string | null;
  expires_at: Date;
  approved_at: Date | null;
  denied_at: Date | null;
  consumed_at: Date | null;
  approved_workspace_id: string | null;
  last_polled_at: Date | null;
}

export function normalizeUserCode(code: string): string {
  const c = code.toUpperCase().replace(/[^A-Z]/g, '');
  return c.length === 8 ? `${c.slice(0, 4)}-${c.slice(4)}` : code;
}

function newUserCode(): string {
  let s = '';
  for (let i = 0; i < 8; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return `${s.slice(0, 4)}-${s.slice(4)}`;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const isLive = (r: Row) => r.status === 'pending' || r.status === 'approved';

export class AgentAuthService {
  readonly #db: Database;
  readonly #identity: Identity;
  readonly #baseUrl: string;

  constructor(db: Database, identity: Identity, baseUrl: string) {
    this.#db = db;
    this.#identity = identity;
    this.#baseUrl = baseUrl;
  }

  async start(input: StartInput) {
    this.#identity.catalogue.validateExplicit(input.permissions);
    const role = input.role ?? (input.permissions && Object.keys(input.permissions).length ? 'custom' : 'admin');
    const deviceCode = randomToken(32);
    const expiresAt = new Date(Date.now() + (input.loginExpiresInMs ?? DEFAULT_LOGIN_TTL_MS));
    let userCode = '';
    for (let attempt = 0; ; attempt++) {
      userCode = newUserCode();
      try {
        await this.#db.query(
          `INSERT INTO agent_auth_requests (id, user_code, device_code_hash, status, agent_name, agent_description,
             requested_workspace_handle, role, permissions, api_key_name, api_key_expires_in_ms, expires_at)
           VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $11)`,
          [
            uuidv7(), userCode, sha256Hex(deviceCode), input.agentName, input.agentDescription ?? null, input.workspaceHandle ?? null,
            role, input.permissions ? JSON.stringify(input.permissions) : null, input.apiKeyName ?? input.agentName,
            input.apiKeyExpiresInMs ?? DEFAULT_KEY_TTL_MS, expiresAt,
          ],
        );
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== '23505' || attempt > 5) throw err;
      }
    }
    const verificationUri = `${this.#baseUrl}/agent-login`;
    const verificationUriComplete = `${verificationUri}?code=${userCode}`;
    return {
      deviceCode,
      userCode,
      verificationUri,
      verificationUriComplete,
      expiresAt: expiresAt.toISOString(),
      intervalSeconds: INTERVAL_SECONDS,
      instructions: {
        verificationMessage: `Ask the user to open ${verificationUriComplete} (or ${verificationUri} and enter the code ${userCode}), sign in and approve one workspace.`,
        exchangeMessage: `Then call POST ${this.#baseUrl}/api/v1/agent/auth/exchange with {"deviceCode": "<deviceCode>"} every ${INTERVAL_SECONDS} seconds until it answers 200 (400 authorization_pending means not yet).`,
        apiKeySecretField: 'apiKey.key',
        apiKeySaveHint: 'The key is returned once: store it securely and send it as "Authorization: Bearer <key>" on every request until it is revoked or expires.',
      },
    };
  }

  async #byUserCode(userCode: string): Promise<Row> {
    const [row] = await this.#db.query<Row>('SELECT * FROM agent_auth_requests WHERE user_code = $1', [normalizeUserCode(userCode)]);
    if (!row) throw new NotFound('Agent login request was not found.');
    return row;
  }

  async #publicState(r: Row) {
    let approvedWorkspace = null;
    if (r.approved_workspace_id) {
      const [w] = await this.#db.query<{ handle: string; name: string; created_at: Date; updated_at: Date; deleted_at: Date | null }>(
        'SELECT handle, name, created_at, updated_at, deleted_at FROM core_workspaces WHERE id = $1',
        [r.approved_workspace_id],
      );
      if (w) approvedWorkspace = { handle: w.handle, name: w.name, createdAt: w.created_at.toISOString(), updatedAt: w.updated_at.toISOString(), deletedAt: iso(w.deleted_at) };
    }
    const expired = isLive(r) && r.expires_at.getTime() <= Date.now();
    return {
      userCode: r.user_code,
      status: expired ? 'expired' : r.status,
      agentName: r.agent_name,
      agentDescription: r.agent_description,
      requestedWorkspaceHandle: r.requested_workspace_handle,
      role: r.role,
      permissions: r.permissions,
      apiKeyName: r.api_key_name,
      expiresAt: r.expires_at.toISOString(),
      approvedAt: iso(r.approved_at),
      deniedAt: iso(r.denied_at),
      consumedAt: iso(r.consumed_at),
      approvedWorkspace,
    };
  }

  async get(userCode: string) {
    return this.#publicState(await this.#byUserCode(userCode));
  }

  /** The signed-in user approves into a workspace where they may create API keys. */
  async approve(userCode: string, userId: string, workspaceHandle: string | undefined) {
    const r = await this.#byUserCode(userCode);
    const handle = workspaceHandle ?? r.requested_workspace_handle;
    if (!handle) throw new Conflict('Name the workspace to approve for: {"workspaceHandle": "..."}.', { reason: 'workspace_required' });
    const m = await this.#identity.sessions.membership(userId, { handle });
    if (!m) throw new NotFound(`Workspace '${handle}' was not found.`);
    if (!this.#identity.catalogue.forRole(m.role).has('apiKeys.write')) throw insufficientPermissions('apiKeys.write');
    const [updated] = await this.#db.query<Row>(
      `UPDATE agent_auth_requests SET status = 'approved', approved_at = now(), approved_workspace_id = $2, approved_by_user_id = $3, updated_at = now()
        WHERE id = $1 AND status = 'pending' AND expires_at > now() RETURNING *`,
      [r.id, m.id, userId],
    );
    if (!updated) throw new Conflict(`The request is ${(await this.#publicState(r)).status}; only a pending request can be approved.`, { reason: 'not_pending' });
    return this.#publicState(updated);
  }

  /** Denies a pending request; one that names a workspace can only be denied by its members. */
  async deny(userCode: string, userId: string) {
    const r = await this.#byUserCode(userCode);
    if (r.requested_workspace_handle && !(await this.#identity.sessions.membership(userId, { handle: r.requested_workspace_handle }))) {
      throw new NotFound('Agent login request was not found.');
    }
    const [updated] = await this.#db.query<Row>(
      `UPDATE agent_auth_requests SET status = 'denied', denied_at = now(), updated_at = now()
        WHERE id = $1 AND status = 'pending' AND expires_at > now() RETURNING *`,
      [r.id],
    );
    if (!updated) throw new Conflict(`The request is ${(await this.#publicState(r)).status}; only a pending request can be denied.`, { reason: 'not_pending' });
    return this.#publicState(updated);
  }

  /** Issues the key once the request is approved (one transaction, row-locked). */
  async exchange(deviceCode: string) {
    const em = this.#db.orm.em.fork() as EntityManager;
    return em.transactional(async (tem) => {
      const conn = tem.getConnection();
      const ctx = tem.getTransactionContext();
      const [r] = (await conn.execute('SELECT * FROM agent_auth_requests WHERE device_code_hash = ? FOR UPDATE', [sha256Hex(deviceCode)], 'all', ctx)) as Row[];
      if (!r) throw new InvalidDeviceCode();
      const expiresAt = new Date(r.expires_at);
      if (isLive(r) && expiresAt.getTime() <= Date.now()) {
        await conn.execute(`UPDATE agent_auth_requests SET status = 'expired', updated_at = now() WHERE id = ?`, [r.id], 'run', ctx);
        return { error: new ExpiredToken() };
      }
      if (r.status === 'expired') return { error: new ExpiredToken() };
      if (r.status === 'denied') return { error: new AccessDenied() };
      if (r.status === 'consumed') return { error: new AlreadyConsumed() };
      const last = r.last_polled_at ? new Date(r.last_polled_at).getTime() : 0;
      await conn.execute('UPDATE agent_auth_requests SET last_polled_at = now() WHERE id = ?', [r.id], 'run', ctx);
      if (r.status === 'pending') {
        // A little slack for network jitter; faster pollers are told to slow down.
        const tooFast = Date.now() - last < INTERVAL_SECONDS * 1000 - 1000;
        return { error: tooFast ? new SlowDown(undefined, { intervalSeconds: String(INTERVAL_SECONDS) }) : new AuthorizationPending(undefined, { intervalSeconds: String(INTERVAL_SECONDS) }) };
      }
      // approved: issue the key and consume the request atomically.
      await conn.execute(`UPDATE agent_auth_requests SET status = 'issuing' WHERE id = ?`, [r.id], 'run', ctx);
      // The transaction's own EntityManager, scoped to the approved workspace.
      tem.setFilterParams(TENANT_FILTER, { workspaceId: r.approved_workspace_id! });
      const apiKey = await this.#identity.apiKeys.create(tem, {
        workspaceId: r.approved_workspace_id!,
        name: r.api_key_name,
        role: r.role === 'custom' ? undefined : (r.role as Role),
        permissions: r.permissions,
        expiresInMs: r.api_key_expires_in_ms ? Number(r.api_key_expires_in_ms) : undefined,
        createdByUserId: null,
      });
      await conn.execute(
        `UPDATE agent_auth_requests SET status = 'consumed', consumed_at = now(), api_key_id = ?, updated_at = now() WHERE id = ?`,
        [apiKey.id, r.id],
        'run',
        ctx,
      );
      const [w] = (await conn.execute('SELECT handle, name FROM core_workspaces WHERE id = ?', [r.approved_workspace_id], 'all', ctx)) as { handle: string; name: string }[];
      return { apiKey, workspace: { handle: w.handle, name: w.name } };
    }).then((result) => {
      // Errors are returned (not thrown) so the last-poll time above is committed with them.
      if ('error' in result) throw result.error;
      return result;
    });
  }
}
