import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace, signUp } from '../../../core/testing/index.ts';
import pushExpo from '../../../adapters/push/expo/index.ts';
import notifications from '../../../plugins/notifications/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

/** An Expo-style push service on 127.0.0.1 speaking its wire protocol. */
const received: Record<string, unknown>[] = [];
let down = false;
let seq = 0;
const deadLater = new Set<string>();
const expo = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString() || 'null');
  res.setHeader('content-type', 'application/json');
  if (down) return res.writeHead(503).end(JSON.stringify({ errors: [{ code: 'INTERNAL', message: 'Service unavailable' }] }));
  if (req.url === '/--/api/v2/push/send') {
    const data = (body as { to: string }[]).map((m) => {
      received.push(m as Record<string, unknown>);
      if (m.to.includes('dead')) return { status: 'error', message: `"${m.to}" is not a registered push notification recipient`, details: { error: 'DeviceNotRegistered' } };
      const id = `ticket-${++seq}`;
      if (m.to.includes('fading')) deadLater.add(id);
      return { status: 'ok', id };
    });
    return res.end(JSON.stringify({ data }));
  }
  if (req.url === '/--/api/v2/push/getReceipts') {
    const data: Record<string, unknown> = {};
    for (const id of (body as { ids: string[] }).ids) {
      if (id === 'ticket-1') continue; // not ready yet
      data[id] = deadLater.has(id) ? { status: 'error', message: 'gone', details: { error: 'DeviceNotRegistered' } } : { status: 'ok' };
    }
    return res.end(JSON.stringify({ data }));
  }
  res.writeHead(404).end('{}');
});
await new Promise<void>((r) => expo.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => expo.close(() => r())));

const app = await buildTestApp({
  plugins: [workspaces, notifications],
  adapters: [pushExpo],
  pluginConfig: { 'push-expo': { baseUrl: `http://127.0.0.1:${(expo.address() as AddressInfo).port}` } },
});
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);
const member = await signUp(app);
const inv = await app.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/invitations`, headers: ws.user.headers(ws.handle), payload: { email: member.email, role: 'viewer' } });
await app.inject({ method: 'POST', url: '/api/v1/invitations/accept', headers: member.headers(), payload: { token: inv.json().token } });

const register = (headers: Record<string, string>, installationId: string, pushToken: string) =>
  app.inject({ method: 'POST', url: '/api/v1/notifications/devices', headers, payload: { installationId, pushToken, platform: 'ios', permissionStatus: 'granted', deviceName: 'Phone' } });
const send = (headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url: '/api/v1/notifications/send', headers, payload });

t.test('members register their devices; tokens are masked and encrypted', async (t) => {
  const a = await register(ws.user.headers(ws.handle), 'inst-a', 'ExponentPushToken[aaaaaaaaaaaaaaaaaaaa]');
  t.equal(a.statusCode, 200);
  t.match(a.json(), { installationId: 'inst-a', userId: ws.user.id, userEmail: ws.user.email, platform: 'ios', permissionStatus: 'granted', deviceName: 'Phone', disabledAt: null });
  t.equal(a.json().providerPushTokenPreview, 'Exponent…aaa]');
  t.equal((await register(ws.user.headers(ws.handle), 'inst-dead', 'ExponentPushToken[dead-dead-dead]')).statusCode, 200);
  t.equal((await register(member.headers(ws.handle), 'inst-m', 'ExponentPushToken[fading-member-token]')).statusCode, 200);
  t.equal((await register(other.user.headers(other.handle), 'inst-o', 'ExponentPushToken[other-workspace]')).statusCode, 200);

  const byKey = await register(ws.auth, 'inst-k', 'ExponentPushToken[key]');
  t.equal(byKey.statusCode, 401);
  t.equal(byKey.json().code, 'session_required');
  const bad = await register(ws.user.headers(ws.handle), 'inst-x', 'not-a-push-token');
  t.equal(bad.statusCode, 400);

  const list = await app.inject({ method: 'GET', url: '/api/v1/notifications/devices', headers: ws.auth });
  t.same(list.json().items.map((d: { installationId: string }) => d.installationId).sort(), ['inst-a', 'inst-dead', 'inst-m']);
  t.notMatch(list.body, /aaaaaaaaaaaaaaaaaaaa|fading-member-token/, 'no token in any response');
  const [row] = await app.trellis.db.query<{ push_token_enc: string }>("SELECT push_token_enc FROM notifications_devices WHERE installation_id = 'inst-a'");
  t.notMatch(row.push_token_enc, /aaaa/, 'stored encrypted');
});

t.test('send to everyone: tickets, counts, DeviceNotRegistered deactivates', async (t) => {
  const res = await send(ws.auth, { title: 'Hello', body: 'World', ttlSeconds: 60, badge: 1, priority: 'high', data: { k: 1 } });
  t.equal(res.statusCode, 200);
  const r = res.json();
  t.match(r, { registrationCount: 3, acceptedCount: 2, failedCount: 1 });
  const dead = r.results.find((x: { installationId: string }) => x.installationId === 'inst-dead');
  t.match(dead, { status: 'error', ticketId: null, error: 'DeviceNotRegistered' });
  t.ok(r.results.filter((x: { status: string }) => x.status === 'ok').every((x: { ticketId: string }) => /^ticket-/.test(x.ticketId)));
  t.match(received.at(-1), { title: 'Hello', body: 'World', ttl: 60, badge: 1, priority: 'high', data: { k: 1 } }, 'the provider got the Expo wire format');
  t.notOk(received.some((m) => m.to === 'ExponentPushToken[other-workspace]'), 'no other workspace device targeted');
  const list = await app.inject({ method: 'GET', url: '/api/v1/notifications/devices', headers: ws.auth });
  t.same(list.json().items.map((d: { installationId: string }) => d.installationId).sort(), ['inst-a', 'inst-m']);

  const onlyMember = await send(ws.auth, { title: 'Hi', body: 'member', userIds: [member.id] });
  t.same(onlyMember.json().results.map((x: { installationId: string }) => x.installationId), ['inst-m']);
  const none = await send(ws.auth, { title: 'Hi', body: 'nobody', installationIds: ['inst-o'] });
  t.match(none.json(), { registrationCount: 0, acceptedCount: 0, failedCount: 0, results: [] }, "another workspace's device cannot be targeted");

  const again = await register(ws.user.headers(ws.handle), 'inst-dead', 'ExponentPushToken[revived-token]');
  t.equal(again.json().disabledAt, null, 're-registering re-enables the device');
});

t.test('receipts: ok, not ready, DeviceNotRegistered, unknown', async (t) => {
  const sent = (await send(ws.auth, { title: 'R', body: 'receipts', installationIds: ['inst-a', 'inst-m'] })).json();
  const ticketOf = (id: string) => sent.results.find((x: { installationId: string }) => x.installationId === id).ticketId;
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/notifications/receipts',
    headers: ws.auth,
    payload: { items: [{ installationId: 'inst-a', receiptId: ticketOf('inst-a') }, { installationId: 'inst-m', receiptId: ticketOf('inst-m') }, { installationId: 'inst-a', receiptId: 'ticket-1' }, { installationId: 'inst-a', receiptId: 'forged' }] },
  });
  t.equal(res.statusCode, 200);
  const [ok, fading, notReady, unknown] = res.json().items;
  t.match(ok, { status: 'ok', deactivated: false });
  t.match(fading, { status: 'error', error: 'DeviceNotRegistered', deactivated: true });
  t.match(notReady, { status: 'error', error: 'ReceiptNotReady', deactivated: false });
  t.match(unknown, { status: 'error', error: 'UnknownReceipt' });
  const list = await app.inject({ method: 'GET', url: '/api/v1/notifications/devices', headers: ws.auth });
  t.notOk(list.json().items.some((d: { installationId: string }) => d.installationId === 'inst-m'), 'the dead device is no longer active');

  const foreign = await app.inject({ method: 'POST', url: '/api/v1/notifications/receipts', headers: other.auth, payload: { items: [{ installationId: 'inst-a', receiptId: ticketOf('inst-a') }] } });
  t.equal(foreign.json().items[0].error, 'UnknownReceipt', "another workspace cannot read this workspace's receipts");
});

t.test('a provider outage fails the send cleanly and deactivates nothing', async (t) => {
  down = true;
  t.teardown(() => void (down = false));
  const res = await send(ws.auth, { title: 'Down', body: 'provider' });
  t.equal(res.statusCode, 200);
  t.ok(res.json().results.every((x: { status: string; error: string }) => x.status === 'error' && x.error === 'ProviderError'));
  t.equal(res.json().acceptedCount, 0);
  const list = await app.inject({ method: 'GET', url: '/api/v1/notifications/devices', headers: ws.auth });
  t.ok(list.json().items.length >= 2, 'devices stay active');
});

t.test('permissions and validation', async (t) => {
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const denied = await send({ authorization: `Bearer ${viewer.key}` }, { title: 'x', body: 'y' });
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().details.requiredPermission, 'notifications.send');
  const devices = await app.inject({ method: 'GET', url: '/api/v1/notifications/devices', headers: { authorization: `Bearer ${viewer.key}` } });
  t.equal(devices.statusCode, 403);
  for (const body of [{ title: '', body: 'x' }, { title: 'x', body: 'y', badge: -1 }, { title: 'x', body: 'y', userIds: [] }, { title: 'x', body: 'y', sound: 'loud' }, { title: 'x', body: 'y', ttlSeconds: 0 }]) {
    const res = await send(ws.auth, body);
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.equal(res.json()._tag, 'HttpApiDecodeError');
  }
  const empty = await app.inject({ method: 'POST', url: '/api/v1/notifications/receipts', headers: ws.auth, payload: { items: [] } });
  t.equal(empty.statusCode, 400);
  const unreg = await app.inject({ method: 'DELETE', url: '/api/v1/notifications/devices/inst-a', headers: member.headers(ws.handle) });
  t.equal(unreg.statusCode, 404, "a member cannot remove someone else's device");
  const own = await app.inject({ method: 'DELETE', url: '/api/v1/notifications/devices/inst-a', headers: ws.user.headers(ws.handle) });
  t.equal(own.statusCode, 204);
});
