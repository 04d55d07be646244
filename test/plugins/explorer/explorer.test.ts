import t from 'tap';
import local from '../../../adapters/storage/local/index.ts';
import { definePlugin } from '../../../core/registry/index.ts';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import explorer from '../../../plugins/explorer/index.ts';
import { explorerSourcesPoint } from '../../../plugins/explorer/api.ts';
import files from '../../../plugins/files/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

/** A second contributor (kind `table`), as the data plugin is, to show several kinds side by side. */
const tables = new Map<string, { sourceId: string; name: string }[]>();
const tablesPlugin = definePlugin({
  id: 'test-tables',
  description: 'contributes table nodes',
  extends: [explorerSourcesPoint],
  setup(ctx) {
    ctx.extend(explorerSourcesPoint, {
      kind: 'table',
      async list(workspaceId) {
        return (tables.get(workspaceId) ?? []).map((x) => ({ ...x, sizeBytes: null, owner: null, href: `/data/${x.sourceId}`, createdAt: new Date(0).toISOString(), updatedAt: new Date(0).toISOString() }));
      },
    });
  },
});

const app = await buildTestApp({ plugins: [workspaces, files, explorer, tablesPlugin], adapters: [local] });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);
/** The workspace id behind a handle (contributors are keyed by workspace id). */
const wsId = async (handle: string) => (await app.trellis.db.query<{ id: string }>('SELECT id FROM core_workspaces WHERE handle = $1', [handle]))[0].id;

const api = (method: string, url: string, payload?: unknown, headers: Record<string, string> = ws.auth) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers, payload: payload as string });

const folder = async (name: string, parentId?: string | null) => {
  const r = await api('POST', '/workspace-nodes/folders', { name, parentId });
  if (r.statusCode !== 201) throw new Error(r.body);
  return r.json().folder as { id: string; name: string; path: string };
};

let fileId: string;
t.before(async () => {
  fileId = (await api('POST', '/files', { mode: 'document', name: 'readme.md', content: '# hi' })).json().file.id;
});

t.test('root lists contributed items of every kind; folders first', async (t) => {
  const id = await wsId(ws.handle);
  tables.set(id, [{ sourceId: 'def-1', name: 'customers' }]);
  const docs = await folder('Docs');
  const root = await api('GET', '/workspace-nodes');
  t.equal(root.statusCode, 200, root.body);
  const body = root.json();
  t.equal(body.currentFolder, null);
  t.same(body.breadcrumbs, []);
  t.same(body.items.map((n: { id: string }) => n.id), [docs.id, 'table:def-1', `file:${fileId}`]);
  const fileNode = body.items.find((n: { kind: string }) => n.kind === 'file');
  t.match(fileNode, { id: `file:${fileId}`, name: 'readme.md', path: 'readme.md', type: 'file', kind: 'file', sourceId: fileId, parentId: null, href: `/files/${fileId}`, sizeBytes: 4 });
  const folderNode = body.items[0];
  t.match(folderNode, { id: docs.id, name: 'Docs', path: 'Docs', kind: 'folder', type: 'folder', sourceId: null, parentId: null, sizeBytes: null, href: null });
  t.same((await api('GET', '/workspace-nodes?kind=file')).json().items.map((n: { id: string }) => n.id), [`file:${fileId}`]);
});

t.test('folders nest; breadcrumbs and paths follow; names are unique among siblings', async (t) => {
  const a = await folder('A');
  const b = await folder('B', a.id);
  const c = await folder('C', b.id);
  t.equal(c.path, 'A/B/C');
  const list = await api('GET', `/workspace-nodes?folderId=${b.id}`);
  t.same(list.json().currentFolder, { id: b.id, name: 'B', path: 'A/B' });
  t.same(list.json().breadcrumbs, [{ id: a.id, name: 'A', path: 'A' }, { id: b.id, name: 'B', path: 'A/B' }]);
  t.same(list.json().items.map((n: { name: string }) => n.name), ['C']);
  const dup = await api('POST', '/workspace-nodes/folders', { name: 'b', parentId: a.id });
  t.equal(dup.statusCode, 409, 'case-insensitive sibling clash');
  t.equal((await api('POST', '/workspace-nodes/folders', { name: 'B' })).statusCode, 201, 'same name elsewhere is fine');
  for (const bad of ['a/b', '..', ' x', '']) t.equal((await api('POST', '/workspace-nodes/folders', { name: bad })).statusCode, 400, JSON.stringify(bad));
  t.equal((await api('GET', '/workspace-nodes?folderId=00000000-0000-7000-8000-000000000000')).statusCode, 404);
  const folders = (await api('GET', '/workspace-nodes/folders')).json().folders;
  t.same(folders[0], { id: 'root', name: '', path: '' }, 'the root first, with an empty path');
  t.ok(folders.some((f: { path: string }) => f.path === 'A/B/C'));
});

t.test('move and rename items and folders; no cycles', async (t) => {
  const x = await folder('X');
  const y = await folder('Y', x.id);
  const moved = await api('POST', `/workspace-nodes/file:${fileId}/move`, { parentId: y.id });
  t.equal(moved.statusCode, 200, moved.body);
  t.match(moved.json(), { id: `file:${fileId}`, parentId: y.id, path: 'X/Y/readme.md' });
  t.notOk((await api('GET', '/workspace-nodes')).json().items.some((n: { id: string }) => n.id === `file:${fileId}`), 'left the root');
  t.ok((await api('GET', `/workspace-nodes?folderId=${y.id}`)).json().items.some((n: { id: string }) => n.id === `file:${fileId}`));
  const renamed = await api('PATCH', `/workspace-nodes/file:${fileId}/rename`, { name: 'Read me first' });
  t.match(renamed.json(), { id: `file:${fileId}`, name: 'Read me first', path: 'X/Y/Read me first' });
  t.equal((await api('GET', `/files/${fileId}`)).json().name, 'readme.md', 'the file keeps its own name');

  t.equal((await api('POST', `/workspace-nodes/${x.id}/move`, { parentId: y.id })).statusCode, 400, 'into its own subfolder');
  t.equal((await api('POST', `/workspace-nodes/${x.id}/move`, { parentId: x.id })).statusCode, 400, 'into itself');
  const z = await folder('Z');
  const mv = await api('POST', `/workspace-nodes/${y.id}/move`, { parentId: z.id });
  t.equal(mv.statusCode, 200);
  t.equal(mv.json().path, 'Z/Y');
  t.equal((await api('GET', `/workspace-nodes?folderId=${y.id}`)).json().items[0].path, 'Z/Y/Read me first', 'items follow their folder');
  const rf = await api('PATCH', `/workspace-nodes/${z.id}/rename`, { name: 'Zed' });
  t.equal(rf.json().path, 'Zed');
  const back = await api('POST', `/workspace-nodes/file:${fileId}/move`, { parentId: null });
  t.equal(back.json().parentId, null);
  t.equal((await api('POST', `/workspace-nodes/file:${fileId}/move`, { parentId: 'root' })).statusCode, 200);
  t.equal((await api('POST', `/workspace-nodes/file:00000000-0000-7000-8000-000000000000/move`, { parentId: null })).statusCode, 404, 'unknown item');
  t.equal((await api('POST', `/workspace-nodes/nonsense/move`, { parentId: null })).statusCode, 404);
});

t.test('delete: empty folders only; items through their own API', async (t) => {
  const full = await folder('Full');
  await folder('Inner', full.id);
  const del = await api('DELETE', `/workspace-nodes/${full.id}`);
  t.equal(del.statusCode, 409);
  t.equal(del.json().details.reason, 'not_empty');
  const withItem = await folder('WithItem');
  const doc = (await api('POST', '/files', { mode: 'document', name: 'inside.txt', content: 'x' })).json().file.id;
  await api('POST', `/workspace-nodes/file:${doc}/move`, { parentId: withItem.id });
  t.equal((await api('DELETE', `/workspace-nodes/${withItem.id}`)).statusCode, 409, 'a live item keeps it non-empty');
  t.equal((await api('DELETE', `/workspace-nodes/file:${doc}`)).statusCode, 400, 'items are not deleted by the explorer');
  t.equal((await api('DELETE', `/files/${doc}`)).statusCode, 204);
  t.same((await api('GET', `/workspace-nodes?folderId=${withItem.id}`)).json().items, [], 'the node went with its file');
  t.equal((await api('DELETE', `/workspace-nodes/${withItem.id}`)).statusCode, 204, 'empty once the file is deleted');
  t.equal((await api('GET', `/workspace-nodes?folderId=${withItem.id}`)).statusCode, 404);
});

t.test('tenant isolation and permissions', async (t) => {
  const mine = await folder('Private');
  for (const [method, url, body] of [
    ['PATCH', `/workspace-nodes/${mine.id}/rename`, { name: 'x' }],
    ['POST', `/workspace-nodes/${mine.id}/move`, { parentId: null }],
    ['DELETE', `/workspace-nodes/${mine.id}`],
    ['PATCH', `/workspace-nodes/file:${fileId}/rename`, { name: 'x' }],
    ['POST', `/workspace-nodes/file:${fileId}/move`, { parentId: null }],
    ['GET', `/workspace-nodes?folderId=${mine.id}`],
  ] as const) {
    const r = await api(method, url, body, other.auth);
    t.equal(r.statusCode, 404, `${method} ${url}`);
  }
  t.equal((await api('POST', '/workspace-nodes/folders', { name: 'n', parentId: mine.id }, other.auth)).statusCode, 404, 'no folders inside another workspace');
  const theirs = (await api('GET', '/workspace-nodes', undefined, other.auth)).json();
  t.same(theirs.items, [], "another workspace sees none of this one's nodes");
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const v = { authorization: `Bearer ${viewer.key}` };
  t.equal((await api('GET', '/workspace-nodes', undefined, v)).statusCode, 200);
  t.equal((await api('GET', '/workspace-nodes/folders', undefined, v)).statusCode, 200);
  const denied = await api('POST', '/workspace-nodes/folders', { name: 'nope' }, v);
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().details.requiredPermission, 'explorer.write');
  t.equal((await api('DELETE', `/workspace-nodes/${mine.id}`, undefined, v)).statusCode, 403);
});
