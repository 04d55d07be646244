import t from 'tap';
import { buildTestApp, createApiKey, signUp, type SignedInUser } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

const app = await buildTestApp({ plugins: [workspaces] });
t.teardown(() => app.close());

const owner = await signUp(app);
const req = (user: SignedInUser, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, handle?: string, payload?: object) =>
  app.inject({ method, url, headers: user.headers(handle), ...(payload ? { payload } : {}) });

t.test('create and list workspaces; handles are slugged and unique', async (t) => {
  const res = await req(owner, 'POST', '/api/v1/workspaces', undefined, { name: 'Ünïcode  Café & Co!' });
  t.equal(res.statusCode, 201);
  t.same(res.json(), { handle: 'unicode-cafe-co', name: 'Ünïcode  Café & Co!' });
  const dup = await req(owner, 'POST', '/api/v1/workspaces', undefined, { name: 'Unicode Cafe Co' });
  t.equal(dup.statusCode, 409);
  t.equal(dup.json().code, 'conflict');
  const empty = await req(owner, 'POST', '/api/v1/workspaces', undefined, { name: '!!!' });
  t.equal(empty.statusCode, 400);
  t.equal(empty.json().code, 'invalid_request');
  const missing = await req(owner, 'POST', '/api/v1/workspaces', undefined, {});
  t.equal(missing.statusCode, 400);
  t.equal(missing.json()._tag, 'HttpApiDecodeError');
  const list = await app.inject({ method: 'GET', url: '/api/v1/workspaces', headers: { cookie: owner.cookie } });
  t.same(list.json(), { items: [{ handle: 'unicode-cafe-co', name: 'Ünïcode  Café & Co!' }] });
  const one = await req(owner, 'GET', '/api/v1/workspaces/unicode-cafe-co', 'unicode-cafe-co');
  t.equal(one.json().handle, 'unicode-cafe-co');
  t.equal(one.json().deletedAt, null);
  t.match(one.json().createdAt, /^\d{4}-\d\d-\d\dT/);
  const stranger = await signUp(app);
  const nope = await req(stranger, 'GET', '/api/v1/workspaces/unicode-cafe-co', 'unicode-cafe-co');
  t.equal(nope.statusCode, 404, 'a non-member cannot see that the workspace exists');
});

t.test('members: invite, accept, change role, remove; the last admin stays', async (t) => {
  const h = (await req(owner, 'POST', '/api/v1/workspaces', undefined, { name: 'Members Test' })).json().handle;
  const bob = await signUp(app);
  const inv = await req(owner, 'POST', `/api/v1/workspaces/${h}/invitations`, h, { email: bob.email.toUpperCase(), role: 'editor' });
  t.equal(inv.statusCode, 201);
  t.equal(inv.json().invitation.email, bob.email);
  t.equal(inv.json().invitation.acceptedAt, null);
  t.match(inv.json().acceptUrl, /token=/);
  const list = await req(owner, 'GET', `/api/v1/workspaces/${h}/invitations`, h);
  t.equal(list.json().items.length, 1);
  t.notOk('token' in list.json().items[0], 'tokens are not listed');

  const bad = await req(bob, 'POST', '/api/v1/invitations/accept', undefined, { token: 'nope' });
  t.equal(bad.statusCode, 404);
  const ok = await req(bob, 'POST', '/api/v1/invitations/accept', undefined, { token: inv.json().token });
  t.same(ok.json(), { workspace: { handle: h, name: 'Members Test' }, role: 'editor' });
  const again = await req(bob, 'POST', '/api/v1/invitations/accept', undefined, { token: inv.json().token });
  t.equal(again.statusCode, 200, 'accepting twice is idempotent for the same user');
  const carol = await signUp(app);
  const stolen = await req(carol, 'POST', '/api/v1/invitations/accept', undefined, { token: inv.json().token });
  t.equal(stolen.statusCode, 409, 'a used invitation cannot admit someone else');
  const revokeUsed = await req(owner, 'DELETE', `/api/v1/workspaces/${h}/invitations/${inv.json().invitation.id}`, h);
  t.equal(revokeUsed.statusCode, 409);

  const members = await req(owner, 'GET', `/api/v1/workspaces/${h}/users`, h);
  t.same(members.json().items.map((m: { userId: string; role: string }) => [m.userId, m.role]).sort(), [[owner.id, 'admin'], [bob.id, 'editor']].sort());

  const editorTries = await req(bob, 'DELETE', `/api/v1/workspaces/${h}/users/${owner.id}`, h);
  t.equal(editorTries.statusCode, 403);
  t.equal(editorTries.json().details.requiredPermission, 'members.write');

  const lastAdmin = await req(owner, 'DELETE', `/api/v1/workspaces/${h}/users/${owner.id}`, h);
  t.equal(lastAdmin.statusCode, 409);
  t.equal(lastAdmin.json().code, 'conflict');
  const demote = await req(owner, 'PATCH', `/api/v1/workspaces/${h}/users/${owner.id}`, h, { role: 'viewer' });
  t.equal(demote.statusCode, 409);

  const promote = await req(owner, 'PATCH', `/api/v1/workspaces/${h}/users/${bob.id}`, h, { role: 'admin' });
  t.equal(promote.json().role, 'admin');
  const leave = await req(bob, 'DELETE', `/api/v1/workspaces/${h}/users/${owner.id}`, h);
  t.equal(leave.statusCode, 204, 'with two admins one can go');
  const gone = await req(owner, 'GET', `/api/v1/workspaces/${h}/users`, h);
  t.equal(gone.statusCode, 404, 'a removed member no longer reaches the workspace');
  const unknown = await req(bob, 'DELETE', `/api/v1/workspaces/${h}/users/usr_nobody`, h);
  t.equal(unknown.statusCode, 404);

  const inv2 = await req(bob, 'POST', `/api/v1/workspaces/${h}/invitations`, h, { email: 'later@example.test' });
  const revoke = await req(bob, 'DELETE', `/api/v1/workspaces/${h}/invitations/${inv2.json().invitation.id}`, h);
  t.equal(revoke.statusCode, 204);
  const revokedAccept = await req(carol, 'POST', '/api/v1/invitations/accept', undefined, { token: inv2.json().token });
  t.equal(revokedAccept.statusCode, 404);
  const revokeTwice = await req(bob, 'DELETE', `/api/v1/workspaces/${h}/invitations/${inv2.json().invitation.id}`, h);
  t.equal(revokeTwice.statusCode, 404);
});

t.test('API keys: secret shown once, listed without it, revoked keys refused', async (t) => {
  const h = (await req(owner, 'POST', '/api/v1/workspaces', undefined, { name: 'Keys Test' })).json().handle;
  const created = await req(owner, 'POST', `/api/v1/workspaces/${h}/api-keys`, h, { name: 'ci', role: 'viewer', expiresInMs: 3_600_000 });
  t.equal(created.statusCode, 201);
  const k = created.json().apiKey;
  t.match(k.key, /^trk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
  t.equal(k.role, 'viewer');
  t.ok(Date.parse(k.expiresAt) > Date.now());
  t.ok(k.key.startsWith(k.prefix));
  const list = await req(owner, 'GET', `/api/v1/workspaces/${h}/api-keys`, h);
  t.equal(list.json().items.length, 1);
  t.notOk(JSON.stringify(list.json()).includes(k.key.split('_')[2]), 'the secret never appears again');
  const [row] = await app.trellis.db.query<{ secret_hash: string }>('SELECT secret_hash FROM core_api_keys WHERE id = $1', [k.id]);
  t.not(row.secret_hash, k.key.split('_')[2], 'only a hash is stored');
  t.match(row.secret_hash, /^[0-9a-f]{64}$/);

  const defaults = await createApiKey(app, owner, h, { name: 'default role' });
  const d = (await req(owner, 'GET', `/api/v1/workspaces/${h}/api-keys`, h)).json().items.find((x: { id: string }) => x.id === defaults.id);
  t.equal(d.role, 'admin', 'manual keys default to admin');

  const bad = await req(owner, 'POST', `/api/v1/workspaces/${h}/api-keys`, h, { name: 'x', role: 'owner' });
  t.equal(bad.statusCode, 400);
  const del = await req(owner, 'DELETE', `/api/v1/workspaces/${h}/api-keys/${k.id}`, h);
  t.equal(del.statusCode, 204);
  const after = (await req(owner, 'GET', `/api/v1/workspaces/${h}/api-keys`, h)).json().items.find((x: { id: string }) => x.id === k.id);
  t.ok(after.revokedAt);
  const missing = await req(owner, 'DELETE', `/api/v1/workspaces/${h}/api-keys/not-a-key`, h);
  t.equal(missing.statusCode, 404);
});
