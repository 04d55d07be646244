/**
 * API keys. The secret is `trk_<key id, 32 hex>_<43 base64url chars>`: a recognisable prefix and
 * the public key id, so a lookup is by primary key and the secret part is compared in constant
 * time against its stored SHA-256 (keys are 256-bit random, so a fast hash is the right hash).
 *
 * Resolved keys are cached per node for a short time; a revocation evicts locally at once and on
 * every other node through NOTIFY. `lastUsedAt` is kept in memory and flushed in batches, so a
 * request never waits on a write.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from '../db/index.ts';
import { safeEqual, sha256Hex, uuidv7 } from '../crypto/index.ts';
import { InvalidApiKey } from '../errors/index.ts';
import type { KeyRole } from '../identity/entities.ts';

export const KEY_PATTERN = /^trk_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;
const CACHE_TTL_MS = 30_000;
const FLUSH_INTERVAL_MS = 15_000;
const AUTH_CHANNEL = 'trellis_auth';

export interface ResolvedKey {
  id: string;
  workspaceId: string;
  workspaceHandle: string;
  workspaceName: string;
  role: KeyRole;
  permissions: Record<string, string[]> | null;
}

interface CachedKey extends ResolvedKey {
  secretHash: string;
  expiresAt: number | null;
  revoked: boolean;
  fetchedAt: number;
}

export interface IssuedKey {
  id: string;
  key: string;
  prefix: string;
  secretHash: string;
}

export function issueKey(): IssuedKey {
  const id = uuidv7();
  const hexId = id.replace(/-/g, '');
  const secret = randomBytes(32).toString('base64url');
  return { id, key: `trk_${hexId}_${secret}`, prefix: `trk_${hexId.slice(0, 12)}`, secretHash: sha256Hex(secret) };
}

function hexToUuid(h: string): string {
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export class ApiKeyResolver {
  readonly #db: Database;
  readonly #cache = new Map<string, CachedKey>();
  readonly #lastUsed = new Map<string, Date>();
  #timer: NodeJS.Timeout | undefined;
  #unlisten: (() => void) | undefined;

  constructor(db: Database) {
    this.#db = db;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#db.listen(AUTH_CHANNEL, (payload) => {
      if (payload.startsWith('key:')) this.#cache.delete(payload.slice(4));
      else if (payload === 'all') this.#cache.clear();
    });
    this.#timer = setInterval(() => void this.flush().catch(() => undefined), FLUSH_INTERVAL_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#unlisten?.();
    await this.flush();
  }

  /** Resolves a presented secret or throws 401 `invalid_api_key`. */
  async resolve(secret: string): Promise<ResolvedKey> {
    const m = KEY_PATTERN.exec(secret);
    if (!m) throw new InvalidApiKey('The API key is malformed.');
    const id = hexToUuid(m[1]);
    const now = Date.now();
    let entry = this.#cache.get(id);
    if (!entry || now - entry.fetchedAt > CACHE_TTL_MS) {
      entry = await this.#load(id, now);
      if (!entry) throw new InvalidApiKey('The API key is unknown.');
      this.#cache.set(id, entry);
    }
    if (!safeEqual(sha256Hex(m[2]), entry.secretHash)) throw new InvalidApiKey('The API key is unknown.');
    if (entry.revoked) throw new InvalidApiKey('The API key has been revoked.');
    if (entry.expiresAt !== null && entry.expiresAt <= now) throw new InvalidApiKey('The API key has expired.');
    this.#lastUsed.set(id, new Date(now));
    return entry;
  }

  async #load(id: string, now: number): Promise<CachedKey | undefined> {
    const rows = await this.#db.query<{
      id: string; workspace_id: string; handle: string; wname: string; role: KeyRole;
      permissions: Record<string, string[]> | null; secret_hash: string; expires_at: Date | null; revoked_at: Date | null;
    }>(
      `SELECT k.id, k.workspace_id, w.handle, w.name AS wname, k.role, k.permissions, k.secret_hash, k.expires_at, k.revoked_at
         FROM core_api_keys k JOIN core_workspaces w ON w.id = k.workspace_id AND w.deleted_at IS NULL
        WHERE k.id = $1`,
      [id],
    );
    const r = rows[0];
    if (!r) return undefined;
    return {
      id: r.id, workspaceId: r.workspace_id, workspaceHandle: r.handle, workspaceName: r.wname, role: r.role,
      permissions: r.permissions, secretHash: r.secret_hash, expiresAt: r.expires_at ? r.expires_at.getTime() : null,
      revoked: r.revoked_at !== null, fetchedAt: now,
    };
  }

  /** Forgets a key on every node (after revocation or a change of its role/permissions). */
  async invalidate(id: string): Promise<void> {
    this.#cache.delete(id);
    await this.#db.notify(AUTH_CHANNEL, `key:${id}`);
  }

  /** The not-yet-flushed last use of a key, newer than what the database holds. */
  pendingLastUsed(id: string): Date | undefined {
    return this.#lastUsed.get(id);
  }

  async flush(): Promise<void> {
    if (this.#lastUsed.size === 0) return;
    const batch = [...this.#lastUsed].map(([id, t]) => ({ id, t: t.toISOString() }));
    this.#lastUsed.clear();
    await this.#db.query(
      `UPDATE core_api_keys k SET last_used_at = v.t
         FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, t timestamptz)
        WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.t)`,
      [JSON.stringify(batch)],
    );
  }
}
