/**
 * Users and first-party sessions. The session cookie carries a random token; the database keeps
 * only its SHA-256. Sign-in failures are throttled per (email, client address) in memory.
 */
import { isUuid } from '../tenancy/index.ts';
import type { Database } from '../db/index.ts';
import { DUMMY_PASSWORD_HASH, hashPassword, prefixedId, randomToken, sha256Hex, verifyPassword } from '../crypto/index.ts';
import { Conflict, Forbidden, InvalidCredentials, TooManyRequests } from '../errors/index.ts';

export const SESSION_COOKIE = 'trellis_session';

export interface SessionUser {
  id: string;
  email: string;
  name: string | null;
}

export interface ResolvedSession {
  sessionId: string;
  user: SessionUser;
}

export interface MemberWorkspace {
  id: string;
  handle: string;
  name: string;
  role: 'admin' | 'editor' | 'viewer';
}

export class SessionService {
  readonly #db: Database;
  readonly #ttlMs: number;
  readonly #maxFailures: number;
  readonly #lockoutMs: number;
  readonly #openSignup: boolean;
  readonly #failures = new Map<string, { count: number; until: number }>();

  constructor(db: Database, opts: { ttlMs: number; maxFailures: number; lockoutMs: number; openSignup: boolean }) {
    this.#db = db;
    this.#ttlMs = opts.ttlMs;
    this.#maxFailures = opts.maxFailures;
    this.#lockoutMs = opts.lockoutMs;
    this.#openSignup = opts.openSignup;
  }

  async signUp(email: string, password: string, name: string | null): Promise<SessionUser> {
    if (!this.#openSignup) {
      const [{ n }] = await this.#db.query<{ n: number }>('SELECT count(*)::int AS n FROM core_users');
      if (n > 0) throw new Forbidden('Sign-up is closed on this server; ask an administrator for an invitation.', undefined);
    }
    const id = prefixedId('usr');
    const hash = await hashPassword(password);
    try {
      await this.#db.query('INSERT INTO core_users (id, email, name, password_hash) VALUES ($1, $2, $3, $4)', [id, email, name, hash]);
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new Conflict('An account with this email already exists.');
      throw err;
    }
    return { id, email, name };
  }

  async signIn(email: string, password: string, clientKey: string): Promise<SessionUser> {
    const throttleKey = `${email.toLowerCase()}|${clientKey}`;
    const now = Date.now();
    const state = this.#failures.get(throttleKey);
    if (state && state.until > now) {
      const retry = Math.ceil((state.until - now) / 1000);
      throw new TooManyRequests(`Too many failed sign-ins; try again in ${retry} s.`, undefined, { 'retry-after': String(retry) });
    }
    const rows = await this.#db.query<{ id: string; email: string; name: string | null; password_hash: string }>(
      'SELECT id, email, name, password_hash FROM core_users WHERE lower(email) = lower($1)',
      [email],
    );
    const user = rows[0];
    // Verify against a dummy hash when the user is unknown, so timing does not reveal accounts.
    const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
    if (!user || !ok) {
      const count = (state && state.until <= now && state.until !== 0 ? 0 : state?.count ?? 0) + 1;
      this.#failures.set(throttleKey, { count, until: count >= this.#maxFailures ? now + this.#lockoutMs : 0 });
      if (this.#failures.size > 100_000) this.#failures.clear();
      throw new InvalidCredentials();
    }
    this.#failures.delete(throttleKey);
    return { id: user.id, email: user.email, name: user.name };
  }

  /** Creates a session and returns its token (only the hash is stored). */
  async createSession(userId: string): Promise<{ token: string; expiresAt: Date }> {
    const token = randomToken(32);
    const expiresAt = new Date(Date.now() + this.#ttlMs);
    await this.#db.query('INSERT INTO core_sessions (id, user_id, expires_at) VALUES ($1, $2, $3)', [sha256Hex(token), userId, expiresAt]);
    return { token, expiresAt };
  }

  async resolve(token: string): Promise<ResolvedSession | undefined> {
    if (!token || token.length > 128) return undefined;
    const id = sha256Hex(token);
    const rows = await this.#db.query<{ user_id: string; email: string; name: string | null }>(
      `SELECT s.user_id, u.email, u.name FROM core_sessions s JOIN core_users u ON u.id = s.user_id
        WHERE s.id = $1 AND s.expires_at > now()`,
      [id],
    );
    const r = rows[0];
    return r ? { sessionId: id, user: { id: r.user_id, email: r.email, name: r.name } } : undefined;
  }

  async destroy(sessionId: string): Promise<void> {
    await this.#db.query('DELETE FROM core_sessions WHERE id = $1', [sessionId]);
  }

  /** The workspace named by handle or id, when the user is a member of it. */
  async membership(userId: string, ref: { handle?: string; id?: string }): Promise<MemberWorkspace | undefined> {
    const byId = ref.id !== undefined;
    const value = byId ? ref.id! : ref.handle!;
    if (byId && !isUuid(value)) return undefined;
    const rows = await this.#db.query<MemberWorkspace>(
      `SELECT w.id, w.handle, w.name, m.role FROM core_workspaces w
         JOIN core_memberships m ON m.workspace_id = w.id AND m.user_id = $1
        WHERE ${byId ? 'w.id = $2::uuid' : 'w.handle = $2'} AND w.deleted_at IS NULL`,
      [userId, value],
    );
    return rows[0];
  }

  async workspacesOf(userId: string): Promise<MemberWorkspace[]> {
    return this.#db.query<MemberWorkspace>(
      `SELECT w.id, w.handle, w.name, m.role FROM core_workspaces w
         JOIN core_memberships m ON m.workspace_id = w.id AND m.user_id = $1
        WHERE w.deleted_at IS NULL ORDER BY w.created_at`,
      [userId],
    );
  }
}
