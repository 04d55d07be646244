/**
 * Generated from the route table of every built-in plugin, so each later plugin is covered
 * without writing anything here:
 * - every route declares a permission or an auth mode and is in the OpenAPI document;
 * - on every path-id route, a key of another workspace gets 404 (never 403, never the data),
 *   and a session of a non-member gets 404 on every `:workspaceHandle` route;
 * - the same requests by the owning workspace do not answer 404 (the fixture ids are real).
 */
import t from 'tap';
import { adapters } from '../../adapters/index.ts';
import { buildTestApp, setupWorkspace } from '../../core/testing/index.ts';
import { plugins } from '../../plugins/index.ts';
import { paramFactories, sampleBodies, type FixtureContext } from './fixtures.ts';

const app = await buildTestApp({ plugins, adapters, env: { TRELLIS_OUTBOUND_ALLOW: '127.0.0.1' } });
t.teardown(() => app.close());
const A = await setupWorkspace(app, 'Tenant A');
const B = await setupWorkspace(app, 'Tenant B');
const routes = app.trellis.routes;

t.test('every route declares a guard and is documented', async (t) => {
  t.ok(routes.length > 10);
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  t.same(Object.keys(doc.components.schemas).filter((k) => k === 'Error' || k === 'BadRequest').sort(), ['BadRequest', 'Error']);
  for (const r of routes) {
    t.ok(r.permission || r.auth, `${r.method} ${r.url} declares a guard`);
    if (r.url.startsWith('/api/v1/') && r.url !== '/api/v1/openapi.json') {
      const openapiPath = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const op = doc.paths[openapiPath]?.[r.method.toLowerCase()];
      t.ok(op, `${r.method} ${openapiPath} is in the OpenAPI document`);
      t.ok(op?.responses?.default && op?.responses?.['400'], `${r.method} ${openapiPath} documents its error bodies`);
    }
  }
});

const paramNames = (url: string) => [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
const idRoutes = routes.filter((r) => r.auth !== 'public' && paramNames(r.url).some((p) => p !== 'workspaceHandle'));
const handleRoutes = routes.filter((r) => r.auth === 'session' && paramNames(r.url).includes('workspaceHandle'));
const cache = new Map<string, string>();

async function resolveParams(url: string): Promise<Record<string, string>> {
  const params: Record<string, string> = {};
  for (const name of paramNames(url)) {
    if (name === 'workspaceHandle') {
      params[name] = A.handle;
      continue;
    }
    const prefixKey = url.slice(0, url.indexOf(`:${name}`) + name.length + 1);
    const factory = paramFactories[prefixKey] ?? paramFactories[name];
    if (!factory) throw new Error(`No fixture factory for path parameter '${name}' (${url}); add one to test/cross-cutting/fixtures.ts`);
    const key = `${prefixKey}|${JSON.stringify(params)}`;
    if (!cache.has(key)) cache.set(key, await factory({ app, ws: A, params: { ...params } } satisfies FixtureContext));
    params[name] = cache.get(key)!;
  }
  return params;
}

const fill = (url: string, params: Record<string, string>) => url.replace(/:([A-Za-z0-9_]+)/g, (_m, n: string) => encodeURIComponent(params[n]));

t.test("another workspace's key gets 404 on every path-id route", async (t) => {
  for (const r of idRoutes) {
    const params = await resolveParams(r.url);
    const body = ['POST', 'PUT', 'PATCH'].includes(r.method) ? (sampleBodies[`${r.method} ${r.url}`] ?? {}) : undefined;
    const url = fill(r.url, params);
    if (r.auth === 'session') {
      const res = await app.inject({ method: r.method as 'GET', url, headers: B.user.headers(A.handle), ...(body !== undefined ? { payload: body as object } : {}) });
      t.equal(res.statusCode, 404, `${r.method} ${r.url} (session of another workspace): ${res.body.slice(0, 200)}`);
      const key = await app.inject({ method: r.method as 'GET', url, headers: B.auth, ...(body !== undefined ? { payload: body as object } : {}) });
      t.equal(key.statusCode, 401, `${r.method} ${r.url} refuses API keys`);
      continue;
    }
    const res = await app.inject({ method: r.method as 'GET', url, headers: B.auth, ...(body !== undefined ? { payload: body as object } : {}) });
    t.equal(res.statusCode, 404, `${r.method} ${r.url} with another workspace's key: ${res.body.slice(0, 200)}`);
    t.equal(res.json().code, 'not_found');
  }
});

t.test('the owning workspace reaches the same resources (the fixtures are real)', async (t) => {
  for (const r of idRoutes.filter((x) => x.method === 'GET')) {
    const url = fill(r.url, await resolveParams(r.url));
    const headers = r.auth === 'session' ? A.user.headers(A.handle) : A.auth;
    const res = await app.inject({ method: 'GET', url, headers });
    t.not(res.statusCode, 404, `GET ${r.url} as the owner: ${res.body.slice(0, 200)}`);
  }
});

t.test('a non-member session gets 404 on every workspace-handle route', async (t) => {
  for (const r of handleRoutes) {
    const params = await resolveParams(r.url);
    const body = ['POST', 'PUT', 'PATCH'].includes(r.method) ? (sampleBodies[`${r.method} ${r.url}`] ?? {}) : undefined;
    const res = await app.inject({ method: r.method as 'GET', url: fill(r.url, params), headers: B.user.headers(A.handle), ...(body !== undefined ? { payload: body as object } : {}) });
    t.equal(res.statusCode, 404, `${r.method} ${r.url}`);
  }
});

t.test("no list or query endpoint shows another workspace's resources", async (t) => {
  // Every fixture above was created in workspace A; none of their ids may appear in what B reads.
  const ids = [...new Set(cache.values())].filter((id) => id.length >= 8);
  t.ok(ids.length > 10, `${ids.length} resources of workspace A to look for`);
  const lists = routes.filter((r) => r.method === 'GET' && r.auth !== 'public' && r.auth !== 'session' && paramNames(r.url).length === 0 && r.url.startsWith('/api/v1/'));
  t.ok(lists.length > 5);
  for (const r of lists) {
    const res = await app.inject({ method: 'GET', url: r.url, headers: B.auth });
    const leaked = ids.filter((id) => res.body.includes(id));
    t.same(leaked, [], `GET ${r.url} as workspace B (${res.statusCode})`);
  }
  const mine = await app.inject({ method: 'GET', url: '/api/v1/channels', headers: A.auth });
  t.ok(ids.some((id) => mine.body.includes(id)), "the same lists do show A's resources to A (the check can fail)");
});

t.test('junk query strings never produce a 500 on any read route', async (t) => {
  const junk = '?page=-1&pageSize=abc&limit=1e999&offset=-5&sort=;drop%20table&filter.x.gt=%5B&filter..=1&q=%ff&folderId=..%2F..&status=x';
  for (const r of routes.filter((x) => x.method === 'GET' && x.auth !== 'public' && x.url.startsWith('/api/v1/'))) {
    const url = fill(r.url, await resolveParams(r.url)) + junk;
    const res = await app.inject({ method: 'GET', url, headers: r.auth === 'session' ? A.user.headers(A.handle) : A.auth });
    t.ok(res.statusCode < 500, `GET ${r.url}${junk}: ${res.statusCode} ${res.statusCode >= 500 ? res.body.slice(0, 200) : ''}`);
  }
});

t.test('malformed bodies never produce a 500 on any write route', async (t) => {
  let deep: unknown = 1;
  for (let i = 0; i < 200; i++) deep = [deep];
  const payloads: unknown[] = [[], 'text', 42, null, { '': '' }, { name: { $gt: '' } }, { name: 'x'.repeat(100_000) }, { a: deep }];
  const writes = routes.filter((r) => ['POST', 'PUT', 'PATCH'].includes(r.method) && r.auth !== 'public' && r.url.startsWith('/api/v1/'));
  for (const r of writes) {
    const url = fill(r.url, await resolveParams(r.url));
    const headers = r.auth === 'session' ? A.user.headers(A.handle) : A.auth;
    for (const p of payloads) {
      const res = await app.inject({ method: r.method as 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(p) });
      t.ok(res.statusCode < 500, `${r.method} ${r.url} with ${JSON.stringify(p).slice(0, 40)}: ${res.statusCode} ${res.statusCode >= 500 ? res.body.slice(0, 200) : ''}`);
    }
  }
});
