/**
 * An AI agent's view: connect with the SDK's MCP client over Streamable HTTP using an API key,
 * discover tools, call them.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import { definePlugin } from '../../../core/registry/index.ts';
import { NotFound } from '../../../core/errors/index.ts';
import mcp from '../../../plugins/mcp/index.ts';
import { mcpToolsPoint } from '../../../plugins/mcp/api.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

/** A plugin contributing two tools, one of them behind an admin-only permission. */
const notes = new Map<string, string[]>();
const contributor = definePlugin({
  id: 'notes-tools',
  description: 'contributes MCP tools',
  permissions: { 'notes.read': { description: 'read', roles: ['viewer', 'editor'] }, 'notes.admin': { description: 'admin', roles: [] } },
  extends: [mcpToolsPoint],
  setup(ctx) {
    ctx.extend(mcpToolsPoint, {
      name: 'notes_add',
      title: 'Add a note',
      description: 'Adds a note to the workspace',
      inputSchema: { type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'], additionalProperties: false },
      permission: 'notes.read',
      tags: ['notes'],
      run: async (c, args) => {
        const list = notes.get(c.workspaceId) ?? [];
        list.push(String(args.text));
        notes.set(c.workspaceId, list);
        return { count: list.length, workspace: c.workspaceHandle };
      },
    });
    ctx.extend(mcpToolsPoint, {
      name: 'notes_purge',
      title: 'Purge notes',
      description: 'Deletes every note',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
      permission: 'notes.admin',
      run: async (_c, args) => {
        if (args.id) throw new NotFound(`Note ${String(args.id)} was not found.`);
        return { purged: true };
      },
    });
  },
});

const app = await buildTestApp({ plugins: [workspaces, mcp, contributor] });
t.teardown(() => app.close());
await app.trellis.app.listen({ host: '127.0.0.1', port: 0 });
const url = new URL(`http://127.0.0.1:${(app.trellis.app.server.address() as { port: number }).port}/api/v1/mcp`);
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  t.teardown(() => client.close());
  return client;
}

t.test('an admin key discovers every tool and calls them in its workspace', async (t) => {
  const client = await connect(ws.key);
  const { tools } = await client.listTools();
  t.same(tools.map((x) => x.name).sort(), ['notes_add', 'notes_purge', 'workspace_whoami']);
  const add = tools.find((x) => x.name === 'notes_add')!;
  t.match(add, { title: 'Add a note', description: 'Adds a note to the workspace', inputSchema: { required: ['text'] }, _meta: { tags: ['notes'] } });

  const who = await client.callTool({ name: 'workspace_whoami', arguments: {} });
  t.match(JSON.parse((who.content as { text: string }[])[0].text), { workspace: ws.handle });
  const r1 = await client.callTool({ name: 'notes_add', arguments: { text: 'first' } });
  t.same(r1.structuredContent, { count: 1, workspace: ws.handle });
  const bad = await client.callTool({ name: 'notes_add', arguments: { text: '', extra: 1 } });
  t.equal(bad.isError, true);
  t.match((bad.content as { text: string }[])[0].text, /Invalid arguments/);
  const typed = await client.callTool({ name: 'notes_purge', arguments: { id: 'n1' } });
  t.equal(typed.isError, true);
  t.match((typed.content as { text: string }[])[0].text, /not_found: Note n1 was not found/);
});

t.test('a viewer key sees and calls only what its permissions allow; workspaces stay apart', async (t) => {
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const client = await connect(viewer.key);
  t.same((await client.listTools()).tools.map((x) => x.name).sort(), ['notes_add', 'workspace_whoami']);
  const denied = await client.callTool({ name: 'notes_purge', arguments: {} });
  t.equal(denied.isError, true);
  t.same(await (await connect(other.key)).callTool({ name: 'notes_add', arguments: { text: 'elsewhere' } }).then((r) => r.structuredContent), { count: 1, workspace: other.handle });
  t.same(notes.get((await app.trellis.db.query<{ id: string }>('SELECT id FROM core_workspaces WHERE handle = $1', [ws.handle]))[0].id), ['first']);
});

t.test('no or bad credentials are refused before MCP starts', async (t) => {
  await t.rejects(connect('trk_bad'), { code: 401 });
  const raw = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
  t.equal(raw.status, 401);
  t.equal(((await raw.json()) as { code: string }).code, 'authentication_required');
  const get = await fetch(url, { headers: { authorization: `Bearer ${ws.key}` } });
  t.equal(get.status, 405);
});
