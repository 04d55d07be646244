import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import channels from '../../../plugins/channels/index.ts';
import apiAdapter from '../../../adapters/channels/api/index.ts';
import { definePlugin } from '../../../core/registry/index.ts';
import { channelsServiceRef, type ChannelsService, type MessageView } from '../../../plugins/channels/api.ts';

/** A consumer plugin, as automations would be: subscribes to the event and uses the service. */
const probe = {
  events: [] as { workspaceId: string; payload: { channelId: string; threadId: string | null; message: MessageView } }[],
  service: undefined as ChannelsService | undefined,
};
const consumer = definePlugin({
  id: 'probe',
  description: 'test consumer',
  deps: { channels: channelsServiceRef },
  setup(ctx) {
    probe.service = ctx.deps.channels;
    ctx.events.subscribe<(typeof probe.events)[number]['payload']>('channels.message.created', (payload, meta) => {
      probe.events.push({ workspaceId: meta.workspaceId, payload });
    });
  },
});

const app = await buildTestApp({ plugins: [workspaces, channels, consumer], adapters: [apiAdapter] });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

type Req = { method?: string; url: string; payload?: unknown; headers?: Record<string, string> };
const call = (r: Req, auth: Record<string, string> = ws.auth) =>
  app.inject({ method: (r.method ?? 'GET') as 'GET', url: `/api/v1${r.url}`, payload: r.payload as object, headers: { ...auth, ...(r.headers ?? {}) } });

const CHANNEL_KEYS = ['adapter', 'channelConnectionId', 'createdAt', 'description', 'externalId', 'id', 'kind', 'lastMessageAt', 'metadata', 'name', 'updatedAt'];
const THREAD_KEYS = ['channelId', 'closedAt', 'createdAt', 'externalId', 'id', 'lastMessageAt', 'metadata', 'status', 'title', 'updatedAt'];
const MESSAGE_KEYS = ['attachments', 'author', 'channelId', 'createdAt', 'direction', 'externalId', 'id', 'kind', 'metadata', 'parentMessageId', 'raw', 'status', 'text', 'threadId', 'updatedAt'];

async function newChannel(body: Record<string, unknown> = {}, auth = ws.auth) {
  const res = await call({ method: 'POST', url: '/channels', payload: { name: 'Support', kind: 'api', ...body } }, auth);
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.statusCode} ${res.body}`);
  return res.json();
}

t.test('create, get, list, patch and delete a channel with exactly the spec fields', async (t) => {
  const c = await newChannel({ description: 'help desk', externalId: 'ext-1', metadata: { team: 'a' } });
  t.same(Object.keys(c).sort(), CHANNEL_KEYS);
  t.match(c, { name: 'Support', kind: 'api', adapter: 'api', description: 'help desk', externalId: 'ext-1', metadata: { team: 'a' }, channelConnectionId: null, lastMessageAt: null });
  const minimal = await newChannel({ name: 'Minimal' });
  t.match(minimal, { description: null, externalId: null, metadata: null });

  const got = await call({ url: `/channels/${c.id}` });
  t.equal(got.statusCode, 200);
  t.same(got.json(), c);

  const patched = await call({ method: 'PATCH', url: `/channels/${c.id}`, payload: { name: 'Support 2', description: null } });
  t.equal(patched.statusCode, 200);
  t.match(patched.json(), { name: 'Support 2', description: null, externalId: 'ext-1', metadata: { team: 'a' } });
  t.ok(patched.json().updatedAt >= c.updatedAt);

  const list = await call({ url: '/channels' });
  t.equal(list.statusCode, 200);
  t.ok(Array.isArray(list.json()), 'bare array');
  t.same(list.json().map((x: { id: string }) => x.id).slice(0, 2), [c.id, minimal.id], 'most recently updated first');

  const kindChange = await call({ method: 'PATCH', url: `/channels/${c.id}`, payload: { kind: 'sms' } });
  t.equal(kindChange.statusCode, 400);
  t.equal(kindChange.json()._tag, 'HttpApiDecodeError');

  const del = await call({ method: 'DELETE', url: `/channels/${minimal.id}` });
  t.equal(del.statusCode, 204);
  t.equal((await call({ url: `/channels/${minimal.id}` })).statusCode, 404);
});

t.test('bad channel bodies answer 400 in the spec shapes', async (t) => {
  const missing = await call({ method: 'POST', url: '/channels', payload: { kind: 'api' } });
  t.equal(missing.statusCode, 400);
  t.equal(missing.json()._tag, 'HttpApiDecodeError');
  t.match(missing.json().issues, [{ _tag: 'Missing', path: ['name'] }]);
  const empty = await call({ method: 'POST', url: '/channels', payload: { name: '', kind: 'api' } });
  t.equal(empty.statusCode, 400);
  const badKind = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'pigeon' } });
  t.equal(badKind.statusCode, 400);
  const extra = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'api', colour: 'red' } });
  t.equal(extra.statusCode, 400);
  t.match(extra.json().issues, [{ _tag: 'Unexpected', path: ['colour'] }]);
  const unknownAdapter = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'custom', adapter: 'carrier-pigeon' } });
  t.equal(unknownAdapter.statusCode, 400);
  t.equal(unknownAdapter.json().code, 'invalid_request');
  const slackNotLoaded = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'slack' } });
  t.equal(slackNotLoaded.statusCode, 400, 'kind slack defaults to adapter slack, which is not loaded here');
  const customNoAdapter = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'custom' } });
  t.equal(customNoAdapter.statusCode, 400);
  const apiForSlackKind = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'slack', adapter: 'api' } });
  t.equal(apiForSlackKind.statusCode, 201, 'the api adapter serves every kind');
  const configForApi = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'api', config: { token: 'x' } } });
  t.equal(configForApi.statusCode, 400, 'the api adapter takes no config');
  const notJson = await call({ method: 'POST', url: '/channels', payload: 'name=x', headers: { 'content-type': 'text/plain' } });
  t.ok([400, 415].includes(notJson.statusCode));
});

t.test('threads: create with defaults and options, list by activity, get one', async (t) => {
  const c = await newChannel();
  const a = await call({ method: 'POST', url: `/channels/${c.id}/threads`, payload: {} });
  t.equal(a.statusCode, 201);
  t.same(Object.keys(a.json()).sort(), THREAD_KEYS);
  t.match(a.json(), { channelId: c.id, title: null, status: 'open', externalId: null, metadata: null, lastMessageAt: null, closedAt: null });
  const b = await call({ method: 'POST', url: `/channels/${c.id}/threads`, payload: { title: 'Order 42', status: 'closed', externalId: 'T-42', metadata: { p: 1 } } });
  t.equal(b.statusCode, 201);
  t.match(b.json(), { title: 'Order 42', status: 'closed', externalId: 'T-42', metadata: { p: 1 } });
  t.ok(b.json().closedAt, 'a thread created closed has closedAt');
  const dup = await call({ method: 'POST', url: `/channels/${c.id}/threads`, payload: { externalId: 'T-42' } });
  t.equal(dup.statusCode, 409);
  t.equal(dup.json().code, 'conflict');
  const badStatus = await call({ method: 'POST', url: `/channels/${c.id}/threads`, payload: { status: 'snoozed' } });
  t.equal(badStatus.statusCode, 400);

  let list = (await call({ url: `/channels/${c.id}/threads` })).json();
  t.same(list.map((x: { id: string }) => x.id), [b.json().id, a.json().id], 'newest first before any message');
  const m = await call({ method: 'POST', url: `/channels/${c.id}/threads/${a.json().id}/messages`, payload: { direction: 'inbound', author: { role: 'user' }, text: 'hi' } });
  t.equal(m.statusCode, 201);
  list = (await call({ url: `/channels/${c.id}/threads` })).json();
  t.same(list.map((x: { id: string }) => x.id), [a.json().id, b.json().id], 'the thread with the latest message first');
  t.equal(list[0].lastMessageAt, m.json().createdAt, 'thread lastMessageAt maintained');

  const closed = await call({ method: 'PATCH', url: `/channels/${c.id}/threads/${a.json().id}`, payload: { status: 'closed', title: 'Renamed' } });
  t.equal(closed.statusCode, 200);
  t.match(closed.json(), { status: 'closed', title: 'Renamed' });
  t.ok(closed.json().closedAt);
  const archived = await call({ method: 'PATCH', url: `/channels/${c.id}/threads/${a.json().id}`, payload: { status: 'archived' } });
  t.equal(archived.json().closedAt, closed.json().closedAt, 'archiving keeps closedAt');
  const reopened = await call({ method: 'PATCH', url: `/channels/${c.id}/threads/${a.json().id}`, payload: { status: 'open', title: null } });
  t.match(reopened.json(), { status: 'open', closedAt: null, title: null });
  t.equal((await call({ method: 'PATCH', url: `/channels/${c.id}/threads/${a.json().id}`, payload: { externalId: 'T-42' } })).statusCode, 409);
  t.equal((await call({ method: 'PATCH', url: `/channels/${c.id}/threads/${a.json().id}`, payload: { status: 'gone' } })).statusCode, 400);

  const one = await call({ url: `/channels/${c.id}/threads/${a.json().id}` });
  t.equal(one.statusCode, 200);
  t.equal(one.json().lastMessageAt, m.json().createdAt);
  const wrongChannel = await call({ url: `/channels/${(await newChannel()).id}/threads/${a.json().id}` });
  t.equal(wrongChannel.statusCode, 404, 'a thread is addressed under its own channel');
  t.equal((await call({ url: `/channels/${c.id}/threads/not-a-uuid` })).statusCode, 404);
});

t.test('messages: defaults, all fields, raw always present, top-level listing and lastMessageAt', async (t) => {
  const c = await newChannel();
  const first = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user', name: 'Ada', email: 'ada@example.test' }, text: 'hello' } });
  t.equal(first.statusCode, 201);
  const m = first.json();
  t.same(Object.keys(m).sort(), MESSAGE_KEYS);
  t.match(m, { channelId: c.id, threadId: null, parentMessageId: null, externalId: null, direction: 'inbound', status: 'received', kind: 'text', text: 'hello', raw: null, metadata: null, attachments: [] });
  t.same(m.author, { role: 'user', name: 'Ada', email: 'ada@example.test' });

  const full = await call({
    method: 'POST',
    url: `/channels/${c.id}/messages`,
    payload: {
      direction: 'outbound',
      author: { role: 'agent', name: 'Bot', phone: '+15550100', avatarUrl: 'https://x.test/a.png', externalId: 'U1' },
      parentMessageId: m.id,
      externalId: 'ext-7',
      kind: 'comment',
      text: null,
      raw: { any: ['json', 1] },
      metadata: { k: 'v' },
      attachments: [{ name: 'a.pdf', contentType: 'application/pdf', url: 'https://x.test/a.pdf', sizeBytes: 12, metadata: { pages: 1 } }, { name: 'b.txt', contentType: 'text/plain' }],
    },
  });
  t.equal(full.statusCode, 201, full.body);
  t.match(full.json(), { direction: 'outbound', status: 'sent', kind: 'comment', text: null, raw: { any: ['json', 1] }, parentMessageId: m.id, externalId: 'ext-7', metadata: { k: 'v' } });
  t.equal(full.json().attachments.length, 2);
  t.same(full.json().attachments[1], { name: 'b.txt', contentType: 'text/plain' });

  const raw0 = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'system', author: { role: 'system' }, raw: 0, status: 'delivered', kind: 'system' } });
  t.equal(raw0.statusCode, 201);
  t.equal(raw0.json().raw, 0);
  t.equal(raw0.json().status, 'delivered', 'a given status is kept');

  const thread = (await call({ method: 'POST', url: `/channels/${c.id}/threads`, payload: { title: 't' } })).json();
  const reply = await call({ method: 'POST', url: `/channels/${c.id}/threads/${thread.id}/messages`, payload: { direction: 'internal', author: { role: 'assistant' }, text: 'in thread' } });
  t.equal(reply.statusCode, 201);
  t.equal(reply.json().threadId, thread.id);

  const top = await call({ url: `/channels/${c.id}/messages` });
  t.equal(top.statusCode, 200);
  t.same(top.json().map((x: { id: string }) => x.id), [m.id, full.json().id, raw0.json().id], 'top-level only, oldest first');
  t.ok(top.json().every((x: { raw?: unknown }) => 'raw' in x));
  const inThread = await call({ url: `/channels/${c.id}/threads/${thread.id}/messages` });
  t.same(inThread.json().map((x: { id: string }) => x.id), [reply.json().id]);
  const limited = await call({ url: `/channels/${c.id}/messages?limit=2` });
  t.same(limited.json().map((x: { id: string }) => x.id), [full.json().id, raw0.json().id], 'limit keeps the latest');

  const ch = (await call({ url: `/channels/${c.id}` })).json();
  t.equal(ch.lastMessageAt, reply.json().createdAt, 'channel lastMessageAt covers thread messages too');
});

t.test('message validation and idempotency by externalId', async (t) => {
  const c = await newChannel();
  const noAuthor = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound' } });
  t.equal(noAuthor.statusCode, 400);
  t.match(noAuthor.json().issues, [{ _tag: 'Missing', path: ['author'] }]);
  const badRole = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'robot' } } });
  t.equal(badRole.statusCode, 400);
  const emptyName = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user', name: '' } } });
  t.equal(emptyName.statusCode, 400);
  const badAttachment = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' }, attachments: [{ name: 'x' }] } });
  t.equal(badAttachment.statusCode, 400);
  const threadIdInBody = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' }, threadId: 'x' } });
  t.equal(threadIdInBody.statusCode, 400, 'the path decides where the message goes');
  const badParent = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' }, parentMessageId: 'nope' } });
  t.equal(badParent.statusCode, 400);
  t.equal(badParent.json().code, 'invalid_request');

  const body = { direction: 'inbound', author: { role: 'user' }, text: 'once', externalId: 'evt-1' };
  const a = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: body });
  const b = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: body });
  t.equal(a.statusCode, 201);
  t.equal(b.statusCode, 200, 'a repeated externalId returns the stored message');
  t.equal(b.json().id, a.json().id);
  t.equal((await call({ url: `/channels/${c.id}/messages` })).json().length, 1);
});

t.test('tenant isolation: another workspace gets 404 on every path-id route', async (t) => {
  const c = await newChannel();
  const th = (await call({ method: 'POST', url: `/channels/${c.id}/threads`, payload: {} })).json();
  const o = other.auth;
  const routes: Req[] = [
    { url: `/channels/${c.id}` },
    { method: 'PATCH', url: `/channels/${c.id}`, payload: { name: 'stolen' } },
    { method: 'DELETE', url: `/channels/${c.id}` },
    { url: `/channels/${c.id}/adapter` },
    { url: `/channels/${c.id}/threads` },
    { method: 'POST', url: `/channels/${c.id}/threads`, payload: {} },
    { url: `/channels/${c.id}/threads/${th.id}` },
    { method: 'PATCH', url: `/channels/${c.id}/threads/${th.id}`, payload: { status: 'closed' } },
    { url: `/channels/${c.id}/messages` },
    { method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' } } },
    { url: `/channels/${c.id}/threads/${th.id}/messages` },
    { method: 'POST', url: `/channels/${c.id}/threads/${th.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' } } },
  ];
  for (const r of routes) {
    const res = await call(r, o);
    t.equal(res.statusCode, 404, `${r.method ?? 'GET'} ${r.url}`);
    t.equal(res.json().code, 'not_found');
  }
  t.notOk((await call({ url: '/channels' }, o)).json().some((x: { id: string }) => x.id === c.id), 'not listed in the other workspace');
  const still = await call({ url: `/channels/${c.id}` });
  t.equal(still.json().name, 'Support', 'nothing changed');
  t.equal((await call({ url: `/channels/${c.id}/messages` })).json().length, 0);
});

t.test('permissions: editors and viewers have no channel access unless granted; grants work', async (t) => {
  const c = await newChannel();
  for (const role of ['viewer', 'editor']) {
    const { key } = await createApiKey(app, ws.user, ws.handle, { role });
    const auth = { authorization: `Bearer ${key}` };
    const list = await call({ url: '/channels' }, auth);
    t.equal(list.statusCode, 403, role);
    t.same(list.json().details, { requiredPermission: 'channels.read' });
    const msgs = await call({ url: `/channels/${c.id}/messages` }, auth);
    t.equal(msgs.statusCode, 403);
    const write = await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' } } }, auth);
    t.equal(write.statusCode, 403);
    t.equal(write.json().details.requiredPermission, 'channels.write');
  }
  const reader = await createApiKey(app, ws.user, ws.handle, { role: 'viewer', permissions: { channels: ['read'] } });
  const rauth = { authorization: `Bearer ${reader.key}` };
  t.equal((await call({ url: `/channels/${c.id}/threads` }, rauth)).statusCode, 200, 'viewer granted channels.read reads');
  const denied = await call({ method: 'POST', url: '/channels', payload: { name: 'x', kind: 'api' } }, rauth);
  t.equal(denied.statusCode, 403, 'but cannot write');
  t.equal(denied.json().code, 'insufficient_permissions');
  const writer = await createApiKey(app, ws.user, ws.handle, { role: 'editor', permissions: { channels: ['read', 'write'] } });
  const wauth = { authorization: `Bearer ${writer.key}` };
  t.equal((await call({ method: 'POST', url: `/channels/${c.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' } } }, wauth)).statusCode, 201);
  t.equal((await call({ url: '/channels' }, {})).statusCode, 401, 'no credential');
});

t.test('a session with a workspace header works like a key', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/api/v1/channels', headers: ws.user.headers(ws.handle), payload: { name: 'From the app', kind: 'api' } });
  t.equal(res.statusCode, 201);
});

t.test('the channels.message.created event carries {channelId, threadId, message}; postMessage for other plugins', async (t) => {
  const c = await newChannel();
  const thread = (await call({ method: 'POST', url: `/channels/${c.id}/threads`, payload: {} })).json();
  const res = await call({ method: 'POST', url: `/channels/${c.id}/threads/${thread.id}/messages`, payload: { direction: 'inbound', author: { role: 'user' }, text: 'evt' } });
  t.equal(res.statusCode, 201);
  await app.trellis.app.ready();
  const deadline = Date.now() + 5000;
  while (!probe.events.some((e) => e.payload.message.id === res.json().id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const e = probe.events.find((x) => x.payload.message.id === res.json().id)!;
  t.ok(e, 'event published');
  t.same(e.payload, { channelId: c.id, threadId: thread.id, message: res.json() });
  t.equal(e.workspaceId.length, 36);

  const posted = await probe.service!.postMessage(e.workspaceId, c.id, { text: 'from an automation' });
  t.match(posted, { channelId: c.id, threadId: null, status: 'sent' });
  const listed = (await call({ url: `/channels/${c.id}/messages` })).json();
  t.match(listed.at(-1), { id: posted.id, direction: 'outbound', author: { role: 'system' }, text: 'from an automation' });
  await t.rejects(probe.service!.postMessage(e.workspaceId, c.id, { text: 'x', threadId: '00000000-0000-7000-8000-000000000000' }), { code: 'not_found' });
  const otherWs = probe.events.find((x) => x.workspaceId !== e.workspaceId);
  t.notOk(otherWs, 'only this workspace published so far');
  await t.rejects(probe.service!.postMessage('00000000-0000-7000-8000-000000000000', c.id, { text: 'x' }), { code: 'not_found' }, 'another workspace id: not found');
  await t.rejects(probe.service!.postMessage(e.workspaceId, c.id, { text: 'x', kind: 'shout' as never }), { code: 'invalid_request' }, 'bad kind');
  await t.rejects(probe.service!.postMessage(e.workspaceId, c.id, { text: 'x', author: { role: 'robot' } as never }), { code: 'invalid_request' }, 'bad author');
  await t.rejects(probe.service!.postMessage(e.workspaceId, c.id, { text: 5 } as never), { code: 'invalid_request' }, 'bad text');
  const inThread = await probe.service!.postMessage(e.workspaceId, c.id, { text: 'in thread', threadId: thread.id, direction: 'internal', kind: 'comment', author: { role: 'agent', name: 'Bot' }, metadata: { a: 1 } });
  t.match(inThread, { threadId: thread.id, status: 'received' });
});
