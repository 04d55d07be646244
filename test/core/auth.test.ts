import pg from 'pg';
import t from 'tap';
import Type from 'typebox';
import { definePlugin } from '../../core/registry/index.ts';
import { buildTestApp, createApiKey, setupWorkspace, signUp } from '../../core/testing/index.ts';
import workspaces from '../../plugins/workspaces/index.ts';

/** A plugin with one route per kind of guard, echoing what the guard resolved. */
const probe = definePlugin({
  id: 'probe',
  description: 'test routes',
  permissions: {
    'probe.read': { description: 'read', roles: ['editor', 'viewer'] },
    'probe.write': { description: 'write', roles: ['editor'] },
    'probe.admin': { description: 'admin only', roles: [] },
  },
  setup(ctx) {
    ctx.routes((app) => {
      const echo = async (request: { principal: unknown; workspace: unknown }) => ({ principal: request.principal, workspace: request.workspace });
      app.get('/probe/read', { config: { permission: 'probe.read' } }, echo);
      app.post('/probe/write', { config: { permission: 'probe.write' }, schema: { body: Type.Object({ n: Type.Integer() }) } }, echo);
      app.get('/probe/admin', { config: { permission: 'probe.admin' } }, echo);
      app.get('/probe/session', { config: { auth: 'session' } }, echo);
      app.get('/probe/any', { config: { auth: 'principal' } }, echo);
    });
  },
});

const t0 = await buildTestApp({ plugins: [workspaces, probe] });
t.teardown(() => t0.close());
const ws = await setupWorkspace(t0);
const other = await setupWorkspace(t0);

const get = (url: string, headers: Record<string, string> = {}) => t0.inject({ method: 'GET', url, headers });

t.test('no credential: 401 authentication_required', async (t) => {
  const res = await get('/api/v1/probe/read');
  t.equal(res.statusCode, 401);
  t.same(res.json(), { code: 'authentication_required', message: res.json().message });
  t.ok(res.headers['x-request-id']);
});

t.test('malformed, unknown, revoked and expired keys: 401 invalid_api_key', async (t) => {
  for (const key of ['nonsense', 'trk_123', `trk_${'0'.repeat(32)}_${'A'.repeat(43)}`, ws.key.slice(0, -1) + (ws.key.endsWith('A') ? 'B' : 'A')]) {
    const res = await get('/api/v1/probe/read', { authorization: `Bearer ${key}` });
    t.equal(res.statusCode, 401, key);
    t.equal(res.json().code, 'invalid_api_key');
  }
  const { id, key } = await createApiKey(t0, ws.user, ws.handle, { name: 'to revoke' });
  t.equal((await get('/api/v1/probe/read', { 'x-api-key': key })).statusCode, 200, 'x-api-key works before revocation');
  const del = await t0.inject({ method: 'DELETE', url: `/api/v1/workspaces/${ws.handle}/api-keys/${id}`, headers: ws.user.headers(ws.handle) });
  t.equal(del.statusCode, 204);
  const after = await get('/api/v1/probe/read', { 'x-api-key': key });
  t.equal(after.statusCode, 401, 'refused on the very next request');
  t.equal(after.json().code, 'invalid_api_key');

  const short = await createApiKey(t0, ws.user, ws.handle, { name: 'short', expiresInMs: 1 });
  await new Promise((r) => setTimeout(r, 5));
  const exp = await get('/api/v1/probe/read', { authorization: `Bearer ${short.key}` });
  t.equal(exp.statusCode, 401);
  t.equal(exp.json().code, 'invalid_api_key');
});

t.test('session-only operation with an API key: 401 session_required', async (t) => {
  const res = await get('/api/v1/probe/session', ws.auth);
  t.equal(res.statusCode, 401);
  t.equal(res.json().code, 'session_required');
  const ws2 = await get(`/api/v1/workspaces`, ws.auth);
  t.equal(ws2.json().code, 'session_required');
});

t.test('a key resolves its own workspace; the workspace header is ignored', async (t) => {
  const res = await get('/api/v1/probe/read', { ...ws.auth, 'x-workspace-handle': other.handle });
  t.equal(res.statusCode, 200);
  t.equal(res.json().workspace.handle, ws.handle);
  t.equal(res.json().principal.kind, 'apiKey');
});

t.test('roles map to permissions; missing permission is 403 with details.requiredPermission', async (t) => {
  const editor = await createApiKey(t0, ws.user, ws.handle, { role: 'editor' });
  const viewer = await createApiKey(t0, ws.user, ws.handle, { role: 'viewer' });
  const cases: [string, string, number][] = [
    [ws.key, '/api/v1/probe/admin', 200],
    [editor.key, '/api/v1/probe/read', 200],
    [editor.key, '/api/v1/probe/admin', 403],
    [viewer.key, '/api/v1/probe/read', 200],
    [viewer.key, '/api/v1/probe/admin', 403],
  ];
  for (const [key, url, status] of cases) t.equal((await get(url, { authorization: `Bearer ${key}` })).statusCode, status, url);
  const w = await t0.inject({ method: 'POST', url: '/api/v1/probe/write', headers: { authorization: `Bearer ${viewer.key}` }, payload: { n: 1 } });
  t.equal(w.statusCode, 403);
  t.same(w.json(), { code: 'insufficient_permissions', message: w.json().message, details: { requiredPermission: 'probe.write' } });
  const e = await t0.inject({ method: 'POST', url: '/api/v1/probe/write', headers: { authorization: `Bearer ${editor.key}` }, payload: { n: 1 } });
  t.equal(e.statusCode, 200);
});

t.test('explicit permissions are unioned with the role; unknown ones are refused', async (t) => {
  const custom = await createApiKey(t0, ws.user, ws.handle, { permissions: { probe: ['admin'] } });
  const res = await t0.inject({ method: 'GET', url: `/api/v1/workspaces/${ws.handle}/api-keys`, headers: ws.user.headers(ws.handle) });
  const rec = res.json().items.find((k: { id: string }) => k.id === custom.id);
  t.equal(rec.role, 'custom');
  t.same(rec.permissions, { probe: ['admin'] });
  t.notOk('key' in rec, 'no secret in the listing');
  t.equal((await get('/api/v1/probe/admin', { authorization: `Bearer ${custom.key}` })).statusCode, 200);
  t.equal((await get('/api/v1/probe/read', { authorization: `Bearer ${custom.key}` })).statusCode, 403, 'custom role has only what it was given');

  const viewerPlus = await createApiKey(t0, ws.user, ws.handle, { role: 'viewer', permissions: { probe: ['write'] } });
  const w = await t0.inject({ method: 'POST', url: '/api/v1/probe/write', headers: { authorization: `Bearer ${viewerPlus.key}` }, payload: { n: 1 } });
  t.equal(w.statusCode, 200);

  const bad = await t0.inject({
    method: 'POST',
    url: `/api/v1/workspaces/${ws.handle}/api-keys`,
    headers: ws.user.headers(ws.handle),
    payload: { name: 'x', permissions: { probe: ['fly'] } },
  });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().code, 'invalid_request');
  t.match(bad.json().message, /probe\.fly/);
});

t.test('sessions need a workspace header; a non-member gets 404', async (t) => {
  const res = await get('/api/v1/probe/read', { cookie: ws.user.cookie });
  t.equal(res.statusCode, 400);
  t.equal(res.json().code, 'workspace_context_required');
  const ok = await get('/api/v1/probe/read', ws.user.headers(ws.handle));
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().principal.kind, 'session');
  const wsRes = await t0.inject({ method: 'GET', url: '/api/v1/workspaces', headers: { cookie: ws.user.cookie } });
  const id = (await t0.inject({ method: 'GET', url: '/api/v1/auth/session', headers: { cookie: ws.user.cookie } })).json().workspaces[0].id;
  t.equal(wsRes.statusCode, 200);
  const byId = await get('/api/v1/probe/read', { cookie: ws.user.cookie, 'x-workspace-id': id });
  t.equal(byId.statusCode, 200);
  t.equal(byId.json().workspace.handle, ws.handle);
  const foreign = await get('/api/v1/probe/read', ws.user.headers(other.handle));
  t.equal(foreign.statusCode, 404);
  t.equal(foreign.json().code, 'not_found');
  const junkId = await get('/api/v1/probe/read', { cookie: ws.user.cookie, 'x-workspace-id': 'not-a-uuid' });
  t.equal(junkId.statusCode, 404);
});

t.test('a member role limits a session like a key role', async (t) => {
  const viewer = await signUp(t0);
  const inv = await t0.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/invitations`, headers: ws.user.headers(ws.handle), payload: { email: viewer.email, role: 'viewer' } });
  t.equal(inv.statusCode, 201);
  const acc = await t0.inject({ method: 'POST', url: '/api/v1/invitations/accept', headers: viewer.headers(), payload: { token: inv.json().token } });
  t.equal(acc.statusCode, 200);
  t.same(acc.json(), { workspace: { handle: ws.handle, name: acc.json().workspace.name }, role: 'viewer' });
  t.equal((await get('/api/v1/probe/read', viewer.headers(ws.handle))).statusCode, 200);
  const admin = await get('/api/v1/probe/admin', viewer.headers(ws.handle));
  t.equal(admin.statusCode, 403);
  t.equal(admin.json().details.requiredPermission, 'probe.admin');
  const keys = await t0.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/api-keys`, headers: viewer.headers(ws.handle), payload: { name: 'nope' } });
  t.equal(keys.statusCode, 403, 'a viewer cannot mint keys');
});

t.test('CSRF: cookie-authenticated unsafe requests need same origin or a workspace header', async (t) => {
  const base = { method: 'POST' as const, url: '/api/v1/probe/write', payload: { n: 1 } };
  const cross = await t0.inject({ ...base, headers: { cookie: ws.user.cookie, origin: 'https://evil.example' } });
  t.equal(cross.statusCode, 403, 'a cross-site origin is refused before anything else');
  t.same(cross.json().details, { reason: 'csrf' });
  const crossWs = await t0.inject({ method: 'POST', url: '/api/v1/workspaces', headers: { cookie: ws.user.cookie, origin: 'https://evil.example' }, payload: { name: 'csrf' } });
  t.equal(crossWs.statusCode, 403);
  t.equal(crossWs.json().code, 'forbidden');
  const noOrigin = await t0.inject({ method: 'POST', url: '/api/v1/workspaces', headers: { cookie: ws.user.cookie }, payload: { name: 'csrf' } });
  t.equal(noOrigin.statusCode, 403);
  const same = await t0.inject({ ...base, headers: ws.user.headers(ws.handle) });
  t.equal(same.statusCode, 200);
});

t.test('sign-in, sign-out and throttling', async (t) => {
  const email = `throttle${Date.now()}@example.test`;
  await signUp(t0, email, 'right password');
  const ok = await t0.inject({ method: 'POST', url: '/api/v1/auth/sign-in', payload: { email, password: 'right password' } });
  t.equal(ok.statusCode, 200);
  const cookie = ok.cookies.find((c) => c.name === 'trellis_session')!;
  t.equal(cookie.httpOnly, true);
  t.equal(cookie.sameSite, 'Lax');
  const session = await t0.inject({ method: 'GET', url: '/api/v1/auth/session', headers: { cookie: `trellis_session=${cookie.value}` } });
  t.equal(session.json().user.email, email);
  const out = await t0.inject({ method: 'POST', url: '/api/v1/auth/sign-out', headers: { cookie: `trellis_session=${cookie.value}`, origin: 'http://localhost:80' } });
  t.equal(out.statusCode, 204);
  const gone = await t0.inject({ method: 'GET', url: '/api/v1/auth/session', headers: { cookie: `trellis_session=${cookie.value}` } });
  t.equal(gone.statusCode, 401);
  t.equal(gone.json().code, 'session_required');

  const codes: number[] = [];
  for (let i = 0; i < 6; i++) {
    codes.push((await t0.inject({ method: 'POST', url: '/api/v1/auth/sign-in', payload: { email, password: 'wrong password' } })).statusCode);
  }
  t.same(codes, [401, 401, 401, 401, 401, 429]);
  const locked = await t0.inject({ method: 'POST', url: '/api/v1/auth/sign-in', payload: { email, password: 'right password' } });
  t.equal(locked.statusCode, 429, 'even the right password waits out the cool-down');
  t.ok(Number(locked.headers['retry-after']) > 0);
  const dup = await t0.inject({ method: 'POST', url: '/api/v1/auth/sign-up', payload: { email: email.toUpperCase(), password: 'another password' } });
  t.equal(dup.statusCode, 409);
  t.equal(dup.json().code, 'conflict');
});

t.test('lastUsedAt is reported after use without a write per request', async (t) => {
  const k = await createApiKey(t0, ws.user, ws.handle, { name: 'usage' });
  await get('/api/v1/probe/read', { authorization: `Bearer ${k.key}` });
  const list = await t0.inject({ method: 'GET', url: `/api/v1/workspaces/${ws.handle}/api-keys`, headers: ws.user.headers(ws.handle) });
  t.ok(list.json().items.find((x: { id: string }) => x.id === k.id).lastUsedAt, 'pending use shows in the listing');
  const [row] = await t0.trellis.db.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM core_api_keys WHERE id = $1', [k.id]);
  t.equal(row.last_used_at, null, 'not yet written');
  await t0.trellis.close();
  const c = new pg.Client({ connectionString: t0.databaseUrl });
  await c.connect();
  const after = await c.query('SELECT last_used_at FROM core_api_keys WHERE id = $1', [k.id]);
  await c.end();
  t.ok(after.rows[0].last_used_at instanceof Date, 'flushed at shutdown');
});

t.test('closed sign-up refuses a second user', async (t) => {
  const closed = await buildTestApp({ plugins: [workspaces], env: { TRELLIS_OPEN_SIGNUP: 'false' } });
  t.teardown(() => closed.close());
  await signUp(closed);
  const res = await closed.inject({ method: 'POST', url: '/api/v1/auth/sign-up', payload: { email: 'second@example.test', password: 'password 2' } });
  t.equal(res.statusCode, 403);
});
