import t from 'tap';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import data from '../../../plugins/data/index.ts';
import explorer from '../../../plugins/explorer/index.ts';

const app = await buildTestApp({ plugins: [workspaces, data, explorer] });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);
const req = (method: string, url: string, auth: Record<string, string>, payload?: unknown) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: auth, payload: payload as object });

t.test('data definitions appear in the explorer as table nodes with the definition url; deleted ones disappear', async (t) => {
  const d = (await req('POST', '/data-definitions', ws.auth, { name: 'Inventory' })).json();
  await req('POST', '/data-definitions', other.auth, { name: 'Not yours' });
  const list = await req('GET', '/workspace-nodes?kind=table', ws.auth);
  t.equal(list.statusCode, 200, list.body);
  const items = JSON.stringify(list.json());
  t.match(items, d.url, 'href is the definition url');
  t.match(items, 'Inventory');
  t.notMatch(items, 'Not yours', 'only this workspace');
  await req('DELETE', `/data-definitions/${d.id}`, ws.auth);
  t.notMatch(JSON.stringify((await req('GET', '/workspace-nodes?kind=table', ws.auth)).json()), 'Inventory');
});
