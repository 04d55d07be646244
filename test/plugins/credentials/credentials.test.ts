import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace, signUp } from '../../../core/testing/index.ts';
import credentials from '../../../plugins/credentials/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

/** A real MCP server (the SDK's, stateless Streamable HTTP) that wants `Bearer good-token`. */
let hits = 0;
const mcp = http.createServer(async (req, res) => {
  hits++;
  if (req.headers.authorization !== 'Bearer good-token') {
    res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
    return;
  }
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
  const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
  server.registerTool('search_docs', { title: 'Search docs', description: 'Full-text search over the docs', _meta: { tags: ['search', 'docs'] } }, async () => ({ content: [] }));
  server.registerTool('create_ticket', { description: 'Open a support ticket' }, async () => ({ content: [] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});
await new Promise<void>((r) => mcp.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => mcp.close(() => r())));
const mcpUrl = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`;

const app = await buildTestApp({ plugins: [workspaces, credentials], env: { TRELLIS_OUTBOUND_ALLOW: '127.0.0.1' } });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const base = `/api/v1/workspaces/${ws.handle}/credentials`;
const as = (headers: Record<string, string>, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
const admin = ws.user.headers(ws.handle);

t.test('create discovers the tools; secrets are encrypted and never returned', async (t) => {
  const res = await as(admin, 'POST', base, { name: 'Docs', credentialKind: 'mcp', type: 'bearerToken', mcpServerName: 'docs', mcpServerUrl: mcpUrl, accessToken: 'good-token' });
  t.equal(res.statusCode, 201);
  const c = res.json();
  t.match(c.id, /^cred_[0-9a-f]{32}$/);
  t.match(c, { name: 'Docs', credentialKind: 'mcp', type: 'bearerToken', mcpServerName: 'docs', mcpServerUrl: mcpUrl, hasAccessToken: true, hasClientId: false, hasClientSecret: false, toolDiscoveryError: null, integrationKey: null });
  t.same(c.availableTools, [
    { name: 'search_docs', title: 'Search docs', description: 'Full-text search over the docs', tags: ['search', 'docs'] },
    { name: 'create_ticket', title: 'create_ticket', description: 'Open a support ticket', tags: [] },
  ]);
  t.ok(Date.parse(c.lastValidatedAt) > Date.now() - 60_000);
  t.notMatch(res.body, /good-token/);
  const [row] = await app.trellis.db.query<{ access_token_enc: string }>('SELECT access_token_enc FROM credentials_credentials WHERE id = $1', [c.id]);
  t.notMatch(row.access_token_enc, /good-token/, 'stored encrypted');
  const list = await as(admin, 'GET', base);
  t.same(list.json().items.map((x: { id: string }) => x.id), [c.id]);
  t.notMatch(list.body, /good-token/);
});

t.test('a refused token is recorded as a discovery error; fixing it discovers the tools', async (t) => {
  const res = await as(admin, 'POST', base, { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: mcpUrl, accessToken: 'wrong' });
  t.equal(res.statusCode, 201);
  t.equal(res.json().availableTools, null);
  t.match(res.json().toolDiscoveryError, /refused the credential \(HTTP 401\)/);
  t.equal(res.json().lastValidatedAt, null);
  const fixed = await as(admin, 'PATCH', `${base}/${res.json().id}`, { accessToken: 'good-token' });
  t.equal(fixed.statusCode, 200);
  t.equal(fixed.json().toolDiscoveryError, null);
  t.equal(fixed.json().availableTools.length, 2);
  const renamed = await as(admin, 'PATCH', `${base}/${res.json().id}`, { name: 'Renamed' });
  t.equal(renamed.json().name, 'Renamed');
  const again = await as(admin, 'POST', `${base}/${res.json().id}/discover`);
  t.equal(again.json().availableTools.length, 2);
  const cleared = await as(admin, 'PATCH', `${base}/${res.json().id}`, { accessToken: null });
  t.equal(cleared.statusCode, 400, 'a bearerToken credential cannot lose its token');
});

t.test('outbound discovery goes through the SSRF guard', async (t) => {
  const guarded = await buildTestApp({ plugins: [workspaces, credentials] });
  t.teardown(() => guarded.close());
  const w = await setupWorkspace(guarded);
  const before = hits;
  for (const url of [mcpUrl, 'http://169.254.169.254/mcp']) {
    const res = await guarded.inject({ method: 'POST', url: `/api/v1/workspaces/${w.handle}/credentials`, headers: w.user.headers(w.handle), payload: { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: url, accessToken: 'good-token' } });
    t.equal(res.statusCode, 201);
    t.match(res.json().toolDiscoveryError, /not allowed/);
  }
  t.equal(hits, before, 'the loopback MCP server was never contacted');
});

t.test('validation, permissions, session only, deletion', async (t) => {
  const bad = [
    { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: mcpUrl },
    { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: 'not a url', accessToken: 'x' },
    { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: 'ftp://x/', accessToken: 'x' },
    { credentialKind: 'native', type: 'oauth', mcpServerUrl: mcpUrl, clientId: 'id' },
    { credentialKind: 'mcp', type: 'oauth', mcpServerUrl: mcpUrl },
    { credentialKind: 'mcp', type: 'apiKey', mcpServerUrl: mcpUrl, accessToken: 'x' },
  ];
  for (const body of bad) t.equal((await as(admin, 'POST', base, body)).statusCode, 400, JSON.stringify(body));
  const native = await as(admin, 'POST', base, { credentialKind: 'native', integrationKey: 'github', type: 'oauth', mcpServerUrl: mcpUrl, clientId: 'cid', clientSecret: 'cs' });
  t.equal(native.statusCode, 201);
  t.match(native.json(), { hasClientId: true, hasClientSecret: true, hasAccessToken: false, integrationKey: 'github' });

  const editor = await signUp(app);
  const inv = await as(admin, 'POST', `/api/v1/workspaces/${ws.handle}/invitations`, { email: editor.email, role: 'editor' });
  await as(editor.headers(), 'POST', '/api/v1/invitations/accept', { token: inv.json().token });
  t.equal((await as(editor.headers(ws.handle), 'GET', base)).statusCode, 200, 'members can see credentials');
  const denied = await as(editor.headers(ws.handle), 'POST', base, { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: mcpUrl, accessToken: 'x' });
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().details.requiredPermission, 'credentials.write');
  const key = await createApiKey(app, ws.user, ws.handle);
  const byKey = await as({ authorization: `Bearer ${key.key}` }, 'GET', base);
  t.equal(byKey.json().code, 'session_required');

  const del = await as(admin, 'DELETE', `${base}/${native.json().id}`);
  t.equal(del.statusCode, 204);
  t.equal((await as(admin, 'GET', `${base}/${native.json().id}`)).statusCode, 404);
  t.equal((await as(admin, 'DELETE', `${base}/${native.json().id}`)).statusCode, 404);
});
