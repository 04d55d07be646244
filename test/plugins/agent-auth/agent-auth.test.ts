import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace, signUp } from '../../../core/testing/index.ts';
import agentAuth from '../../../plugins/agent-auth/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

const app = await buildTestApp({ plugins: [workspaces, agentAuth] });
t.teardown(() => app.close());
const ws = await setupWorkspace(app, 'Agent Home');

const start = (payload: object, url = '/api/v1/agent/auth/requests') => app.inject({ method: 'POST', url, payload });
const exchange = (deviceCode: string) => app.inject({ method: 'POST', url: '/api/v1/agent/auth/exchange', payload: { deviceCode } });
const approve = (code: string, headers: Record<string, string>, payload: object = {}) =>
  app.inject({ method: 'POST', url: `/api/v1/agent/auth/requests/${code}/approve`, headers, payload });

t.test('the whole flow: start, pending, approve, exchange once, use the key', async (t) => {
  const s = await start({ agentName: 'Claude', agentDescription: 'coding agent', workspaceHandle: ws.handle });
  t.equal(s.statusCode, 201);
  const body = s.json();
  t.match(body.userCode, /^[B-Z]{4}-[B-Z]{4}$/);
  t.equal(body.intervalSeconds, 5);
  t.equal(body.verificationUriComplete, `${body.verificationUri}?code=${body.userCode}`);
  t.equal(body.instructions.apiKeySecretField, 'apiKey.key');
  t.ok(Date.parse(body.expiresAt) > Date.now());

  const state = await app.inject({ method: 'GET', url: `/api/v1/agent/auth/requests/${body.userCode.toLowerCase().replace('-', '')}` });
  t.equal(state.statusCode, 200);
  t.match(state.json(), { status: 'pending', agentName: 'Claude', agentDescription: 'coding agent', requestedWorkspaceHandle: ws.handle, role: 'admin', permissions: null, apiKeyName: 'Claude', approvedWorkspace: null, approvedAt: null });

  const pending = await exchange(body.deviceCode);
  t.equal(pending.statusCode, 400);
  t.same(pending.json(), { code: 'authorization_pending', message: pending.json().message, details: { intervalSeconds: '5' } });
  const fast = await exchange(body.deviceCode);
  t.equal(fast.json().code, 'slow_down', 'polling faster than the interval is told to slow down');

  const ok = await approve(body.userCode, ws.user.headers());
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().status, 'approved');
  t.equal(ok.json().approvedWorkspace.handle, ws.handle);
  t.equal(ok.json().approvedWorkspace.name, 'Agent Home');

  const issued = await exchange(body.deviceCode);
  t.equal(issued.statusCode, 200);
  const key = issued.json().apiKey.key;
  t.match(key, /^trk_/);
  t.same(issued.json().workspace, { handle: ws.handle, name: 'Agent Home' });
  t.ok(Date.parse(issued.json().apiKey.expiresAt) > Date.now() + 80 * 24 * 3600 * 1000, 'agent keys last 90 days by default');

  const use = await app.inject({ method: 'GET', url: '/api/v1/plugins', headers: { authorization: `Bearer ${key}` } });
  t.equal(use.statusCode, 200, 'the key works and is an admin key');

  const again = await exchange(body.deviceCode);
  t.equal(again.statusCode, 400);
  t.equal(again.json().code, 'already_consumed');
  t.notOk(again.body.includes(key), 'the secret is never shown again');
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/agent/auth/requests/${body.userCode}` })).json().status, 'consumed');

  const keys = await app.inject({ method: 'GET', url: `/api/v1/workspaces/${ws.handle}/api-keys`, headers: ws.user.headers(ws.handle) });
  t.ok(keys.json().items.some((k: { name: string; id: string }) => k.name === 'Claude' && k.id === issued.json().apiKey.id));
});

t.test('the unversioned paths of the usage guide work too', async (t) => {
  const s = await start({ agentName: 'Guide' }, '/api/agent/auth/requests');
  t.equal(s.statusCode, 201);
  const g = await app.inject({ method: 'GET', url: `/api/agent/auth/requests/${s.json().userCode}` });
  t.equal(g.json().agentName, 'Guide');
});

t.test('concurrent exchanges issue exactly one key', async (t) => {
  const s = (await start({ agentName: 'Racer', workspaceHandle: ws.handle })).json();
  await approve(s.userCode, ws.user.headers());
  const results = await Promise.all(Array.from({ length: 6 }, () => exchange(s.deviceCode)));
  const codes = results.map((r) => r.statusCode).sort();
  t.same(codes, [200, 400, 400, 400, 400, 400]);
  t.ok(results.filter((r) => r.statusCode === 400).every((r) => r.json().code === 'already_consumed'));
});

t.test('who may approve or deny', async (t) => {
  const s = (await start({ agentName: 'Picky', workspaceHandle: ws.handle })).json();
  const stranger = await signUp(app);
  const nope = await approve(s.userCode, stranger.headers());
  t.equal(nope.statusCode, 404, 'a non-member cannot approve into the workspace');
  const denyByStranger = await app.inject({ method: 'POST', url: `/api/v1/agent/auth/requests/${s.userCode}/deny`, headers: stranger.headers() });
  t.equal(denyByStranger.statusCode, 404);

  const viewer = await signUp(app);
  const inv = await app.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/invitations`, headers: ws.user.headers(ws.handle), payload: { email: viewer.email, role: 'viewer' } });
  await app.inject({ method: 'POST', url: '/api/v1/invitations/accept', headers: viewer.headers(), payload: { token: inv.json().token } });
  const weak = await approve(s.userCode, viewer.headers());
  t.equal(weak.statusCode, 403);
  t.equal(weak.json().details.requiredPermission, 'apiKeys.write');

  const key = await createApiKey(app, ws.user, ws.handle);
  const byKey = await approve(s.userCode, { authorization: `Bearer ${key.key}` });
  t.equal(byKey.statusCode, 401);
  t.equal(byKey.json().code, 'session_required');

  const denied = await app.inject({ method: 'POST', url: `/api/v1/agent/auth/requests/${s.userCode}/deny`, headers: ws.user.headers() });
  t.equal(denied.statusCode, 200);
  t.equal(denied.json().status, 'denied');
  t.ok(denied.json().deniedAt);
  t.equal((await exchange(s.deviceCode)).json().code, 'access_denied');
  const late = await approve(s.userCode, ws.user.headers());
  t.equal(late.statusCode, 409);
});

t.test('a request without a workspace is approved into the one the user names', async (t) => {
  const s = (await start({ agentName: 'Roamer', role: 'viewer', permissions: { workspace: ['read'] }, apiKeyName: 'roamer key', apiKeyExpiresInMs: 60_000 })).json();
  const missing = await approve(s.userCode, ws.user.headers());
  t.equal(missing.statusCode, 409);
  const ok = await approve(s.userCode, ws.user.headers(), { workspaceHandle: ws.handle });
  t.equal(ok.json().role, 'viewer');
  t.same(ok.json().permissions, { workspace: ['read'] });
  const issued = (await exchange(s.deviceCode)).json().apiKey;
  t.equal(issued.name, 'roamer key');
  t.equal(issued.role, 'viewer');
  t.ok(Date.parse(issued.expiresAt) <= Date.now() + 60_000);
  const admin = await app.inject({ method: 'GET', url: '/api/v1/plugins', headers: { authorization: `Bearer ${issued.key}` } });
  t.equal(admin.statusCode, 403, 'the viewer key gets what a viewer gets');
});

t.test('expiry, bad input and unknown codes', async (t) => {
  const s = (await start({ agentName: 'Slow', loginExpiresInMs: 1 })).json();
  await new Promise((r) => setTimeout(r, 5));
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/agent/auth/requests/${s.userCode}` })).json().status, 'expired');
  t.equal((await approve(s.userCode, ws.user.headers(), { workspaceHandle: ws.handle })).statusCode, 409);
  t.equal((await exchange(s.deviceCode)).json().code, 'expired_token');

  t.equal((await exchange('not-a-device-code')).json().code, 'invalid_device_code');
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/agent/auth/requests/BBBB-BBBB' })).statusCode, 404);
  const noName = await start({});
  t.equal(noName.statusCode, 400);
  t.same(noName.json().issues.map((i: { _tag: string; path: string[] }) => [i._tag, i.path]), [['Missing', ['agentName']]]);
  const badPerm = await start({ agentName: 'x', permissions: { data: ['fly'] } });
  t.equal(badPerm.statusCode, 400);
  t.equal(badPerm.json().code, 'invalid_request');
  const badTtl = await start({ agentName: 'x', apiKeyExpiresInMs: 0 });
  t.equal(badTtl.statusCode, 400);
});
