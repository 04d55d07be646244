import t from 'tap';
import Type from 'typebox';
import { Conflict, DecodeError } from '../../core/errors/index.ts';
import { definePlugin } from '../../core/registry/index.ts';
import { buildTestApp, setupWorkspace } from '../../core/testing/index.ts';
import workspaces from '../../plugins/workspaces/index.ts';

const logged: unknown[] = [];
const thrower = definePlugin({
  id: 'thrower',
  description: 'routes that fail in every way',
  permissions: { 'thrower.use': { description: 'use', roles: ['viewer', 'editor'] } },
  setup(ctx) {
    ctx.routes((app) => {
      app.get('/boom', { config: { permission: 'thrower.use' } }, async () => {
        throw new Error('password=hunter2 at SELECT * FROM core_users');
      });
      app.get('/sql', { config: { permission: 'thrower.use' } }, async () => {
        await ctx.db.query('SELECT * FROM no_such_table');
      });
      app.get('/conflict', { config: { permission: 'thrower.use' } }, async () => {
        throw new Conflict('Already there.', { handle: 'x' });
      });
      app.get('/decode', { config: { permission: 'thrower.use' } }, async () => {
        throw new DecodeError([{ _tag: 'Refinement', path: ['rows', 2, 'amount'], message: 'must be positive' }]);
      });
      app.post(
        '/typed',
        {
          config: { permission: 'thrower.use' },
          schema: {
            body: Type.Object(
              {
                name: Type.String({ minLength: 1 }),
                count: Type.Integer({ minimum: 0 }),
                kind: Type.Union([Type.Literal('a'), Type.Literal('b')]),
                nested: Type.Optional(Type.Object({ items: Type.Array(Type.Number()) }, { additionalProperties: false })),
              },
              { additionalProperties: false },
            ),
            querystring: Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1 })) }),
          },
        },
        async (request) => ({ ok: true, page: (request.query as { page?: number }).page ?? null }),
      );
    });
  },
});

const app = await buildTestApp({ plugins: [workspaces, thrower], env: { TRELLIS_BODY_LIMIT: '2048' } });
t.teardown(() => app.close());
app.trellis.app.log.error = ((obj: unknown) => void logged.push(obj)) as never;
const ws = await setupWorkspace(app);

t.test('an unexpected exception is 500 internal_error with no stack or SQL, logged with the request id', async (t) => {
  for (const url of ['/api/v1/boom', '/api/v1/sql']) {
    const res = await app.inject({ method: 'GET', url, headers: { ...ws.auth, 'x-request-id': 'req-abc-123' } });
    t.equal(res.statusCode, 500);
    t.equal(res.json().code, 'internal_error');
    t.same(Object.keys(res.json()).sort(), ['code', 'message']);
    t.notMatch(res.body, /hunter2|SELECT|no_such_table|at /);
    t.equal(res.headers['x-request-id'], 'req-abc-123', 'a well-formed incoming request id is kept');
    t.match(res.json().message, /req-abc-123/);
  }
});

t.test('typed errors keep their code, status and details', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/conflict', headers: ws.auth });
  t.equal(res.statusCode, 409);
  t.same(res.json(), { code: 'conflict', message: 'Already there.', details: { handle: 'x' } });
  const d = await app.inject({ method: 'GET', url: '/api/v1/decode', headers: ws.auth });
  t.equal(d.statusCode, 400);
  t.same(d.json().issues, [{ _tag: 'Refinement', path: ['rows', 2, 'amount'], message: 'must be positive' }]);
  t.equal(d.json()._tag, 'HttpApiDecodeError');
});

t.test('schema failures are HttpApiDecodeError bodies with tagged issues and array paths', async (t) => {
  const post = (payload: unknown, url = '/api/v1/typed') => app.inject({ method: 'POST', url, headers: ws.auth, payload: payload as object });
  const missing = await post({ count: 1, kind: 'a' });
  t.equal(missing.statusCode, 400);
  t.equal(missing.json()._tag, 'HttpApiDecodeError');
  t.equal(typeof missing.json().message, 'string');
  t.same(missing.json().issues, [{ _tag: 'Missing', path: ['name'], message: 'is missing' }]);

  const many = await post({ name: '', count: '3', kind: 'c', extra: 1, nested: { items: [1, 'x'] } });
  const tags = many.json().issues.map((i: { _tag: string; path: unknown[] }) => `${i._tag}:${JSON.stringify(i.path)}`).sort();
  t.same(tags, ['Refinement:["name"]', 'Type:["count"]', 'Type:["kind"]', 'Type:["nested","items",1]', 'Unexpected:["extra"]'].sort(), 'all issues reported, strings not coerced in bodies');

  const q = await app.inject({ method: 'POST', url: '/api/v1/typed?page=0', headers: ws.auth, payload: { name: 'n', count: 1, kind: 'a' } });
  t.equal(q.statusCode, 400);
  t.same(q.json().issues, [{ _tag: 'Refinement', path: ['page'], message: q.json().issues[0].message }]);
  const q2 = await app.inject({ method: 'POST', url: '/api/v1/typed?page=3', headers: ws.auth, payload: { name: 'n', count: 1, kind: 'a' } });
  t.same(q2.json(), { ok: true, page: 3 }, 'query strings are coerced');
});

t.test('malformed JSON, wrong content type and over-large bodies', async (t) => {
  const bad = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: { ...ws.auth, 'content-type': 'application/json' }, payload: '{"name": ' });
  t.equal(bad.statusCode, 400);
  t.same(bad.json(), { code: 'invalid_request', message: 'The body is not valid JSON.' });
  const empty = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: { ...ws.auth, 'content-type': 'application/json' }, payload: '' });
  t.equal(empty.statusCode, 400);
  t.equal(empty.json().code, 'invalid_request');
  const xml = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: { ...ws.auth, 'content-type': 'application/xml' }, payload: '<a/>' });
  t.equal(xml.statusCode, 415);
  t.equal(xml.json().code, 'unsupported_media_type');
  const big = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: ws.auth, payload: { name: 'x'.repeat(5000), count: 1, kind: 'a' } });
  t.equal(big.statusCode, 413);
  t.equal(big.json().code, 'payload_too_large');
});

t.test('NUL characters, which PostgreSQL cannot store, are a 400 for every route', async (t) => {
  const body = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: { ...ws.auth, 'content-type': 'application/json' }, payload: '{"name": "a\\u0000b", "count": 1, "kind": "a"}' });
  t.equal(body.statusCode, 400);
  t.equal(body.json().code, 'invalid_request');
  t.match(body.json().message, /NUL/);
  const key = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: { ...ws.auth, 'content-type': 'application/json' }, payload: '{"name": "x", "count": 1, "kind": "a", "nested": {"items": []}, "\\u0000": 1}' });
  t.equal(key.statusCode, 400);
  const escaped = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: { ...ws.auth, 'content-type': 'application/json' }, payload: '{"name": "literal \\\\u0000 text", "count": 1, "kind": "a"}' });
  t.equal(escaped.statusCode, 200, 'an escaped backslash followed by u0000 is ordinary text');
  const query = await app.inject({ method: 'POST', url: '/api/v1/typed?page=1%00', headers: ws.auth, payload: { name: 'n', count: 1, kind: 'a' } });
  t.equal(query.statusCode, 400);
  const proto = await app.inject({ method: 'POST', url: '/api/v1/typed', headers: { ...ws.auth, 'content-type': 'application/json' }, payload: '{"name": "n", "count": 1, "kind": "a", "__proto__": {"x": 1}}' });
  t.equal(proto.statusCode, 400, 'prototype poisoning is still refused');
});

t.test('unknown routes answer 404 not_found; every response has a request id', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/does-not-exist?x=1' });
  t.equal(res.statusCode, 404);
  t.same(res.json(), { code: 'not_found', message: 'Route GET /api/v1/does-not-exist was not found.' });
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const weird = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'bad id with spaces' } });
  t.not(weird.headers['x-request-id'], 'bad id with spaces', 'a malformed incoming id is replaced');
  t.same(weird.json(), { status: 'ok' });
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.same(ready.json(), { status: 'ready' });
});
