/**
 * Test support (used by test/ only): `buildTestApp` builds the app with the plugins under test on
 * a fresh database of its own, so test files never see each other's data, and fixtures that go
 * through the HTTP API the way a user would.
 *
 * The PostgreSQL server comes from TRELLIS_TEST_ADMIN_URL (set by `test/run.ts`, which starts an
 * embedded server for the whole run) or DATABASE_URL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp, type Trellis } from '../app.ts';
import { loadConfig, type CoreConfig } from '../config/index.ts';
import { randomToken } from '../crypto/index.ts';
import { createDatabase } from '../db/index.ts';
import type { AnyAdapter, AnyPlugin } from '../registry/index.ts';

export function adminUrl(): string {
  const url = process.env.TRELLIS_TEST_ADMIN_URL ?? process.env.DATABASE_URL;
  if (!url) throw new Error('No test database: run the suite with `npm test` (it starts embedded PostgreSQL) or set DATABASE_URL');
  return url;
}

/** Creates an empty database for one test app; returns its URL and a function that drops it. */
export function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `trellis_t_${Date.now().toString(36)}_${randomToken(6).replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
  return createDatabase(adminUrl(), name);
}

export interface TestApp {
  trellis: Trellis;
  config: CoreConfig;
  databaseUrl: string;
  inject: Trellis['app']['inject'];
  close(): Promise<void>;
}

export interface BuildTestAppOptions {
  plugins?: AnyPlugin[];
  adapters?: AnyAdapter[];
  /** Extra environment-style config (e.g. `{TRELLIS_OPEN_SIGNUP: 'false'}`). */
  env?: Record<string, string>;
  /** Plugin config sections, as in the config file's `plugins`. */
  pluginConfig?: Record<string, Record<string, unknown>>;
  /**
   * Build on an existing database (another test app's `databaseUrl`), e.g. a second server
   * instance sharing one PostgreSQL; that database is left in place on close.
   */
  databaseUrl?: string;
}

export async function buildTestApp(opts: BuildTestAppOptions = {}): Promise<TestApp> {
  const { url, drop } = opts.databaseUrl ? { url: opts.databaseUrl, drop: async () => undefined } : await createTestDatabase();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'trellis-test-'));
  const config = loadConfig({ TRELLIS_DATA_DIR: dataDir, TRELLIS_LOG_LEVEL: 'silent', PORT: '0', ...opts.env });
  for (const [id, section] of Object.entries(opts.pluginConfig ?? {})) config.plugins[id] = { ...(config.plugins[id] ?? {}), ...section };
  let trellis: Trellis;
  try {
    trellis = await buildApp({ config, plugins: opts.plugins ?? [], adapters: opts.adapters ?? [], databaseUrl: url, logger: opts.env?.TRELLIS_LOG_LEVEL === "error" ? { level: "error" } : false });
  } catch (err) {
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    trellis,
    config,
    databaseUrl: url,
    inject: trellis.app.inject.bind(trellis.app),
    async close() {
      await trellis.close();
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Fixtures through the API

export interface SignedInUser {
  id: string;
  email: string;
  cookie: string;
  /** Headers for a cookie-authenticated request in a workspace (the header also satisfies CSRF). */
  headers(handle?: string): Record<string, string>;
}

function sessionCookie(res: LightMyRequestResponse): string {
  const c = res.cookies.find((x) => x.name === 'trellis_session');
  if (!c) throw new Error(`no session cookie in response ${res.statusCode}: ${res.body}`);
  return `trellis_session=${c.value}`;
}

function expectStatus(res: LightMyRequestResponse, status: number, what: string): void {
  if (res.statusCode !== status) throw new Error(`${what}: expected ${status}, got ${res.statusCode}: ${res.body}`);
}

export async function signUp(t: Pick<TestApp, 'inject'>, email = `u${randomToken(6).toLowerCase().replace(/[^a-z0-9]/g, '')}@example.test`, password = 'correct horse battery'): Promise<SignedInUser> {
  const res = await t.inject({ method: 'POST', url: '/api/v1/auth/sign-up', payload: { email, password } });
  expectStatus(res, 201, 'sign-up');
  const cookie = sessionCookie(res);
  return {
    id: res.json().user.id,
    email,
    cookie,
    headers: (handle) => ({ cookie, ...(handle ? { 'x-workspace-handle': handle } : { origin: 'http://localhost:80' }) }),
  };
}

export async function createWorkspace(t: Pick<TestApp, 'inject'>, user: SignedInUser, name = `Workspace ${randomToken(4)}`): Promise<string> {
  const res = await t.inject({ method: 'POST', url: '/api/v1/workspaces', headers: user.headers(), payload: { name } });
  expectStatus(res, 201, 'create workspace');
  return res.json().handle;
}

export async function createApiKey(
  t: Pick<TestApp, 'inject'>,
  user: SignedInUser,
  handle: string,
  body: { name?: string; role?: string; permissions?: Record<string, string[]>; expiresInMs?: number } = {},
): Promise<{ id: string; key: string }> {
  const res = await t.inject({
    method: 'POST',
    url: `/api/v1/workspaces/${handle}/api-keys`,
    headers: user.headers(handle),
    payload: { name: 'test key', ...body },
  });
  expectStatus(res, 201, 'create API key');
  return { id: res.json().apiKey.id, key: res.json().apiKey.key };
}

export interface WorkspaceFixture {
  user: SignedInUser;
  handle: string;
  /** An admin key of this workspace. */
  key: string;
  auth: { authorization: string };
}

/** A user with a fresh workspace and an admin API key. */
export async function setupWorkspace(t: Pick<TestApp, 'inject'>, name?: string): Promise<WorkspaceFixture> {
  const user = await signUp(t);
  const handle = await createWorkspace(t, user, name);
  const { key } = await createApiKey(t, user, handle, { name: 'admin key' });
  return { user, handle, key, auth: { authorization: `Bearer ${key}` } };
}
