/**
 * An agent working with workspace data over MCP: the data and sql-query plugins' tools.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import queryDuckdb from '../../../adapters/query/duckdb/index.ts';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import data from '../../../plugins/data/index.ts';
import mcp from '../../../plugins/mcp/index.ts';
import query from '../../../plugins/query/index.ts';
import sqlQuery from '../../../plugins/sql-query/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

const app = await buildTestApp({ plugins: [workspaces, mcp, query, data, sqlQuery], adapters: [queryDuckdb] });
t.teardown(() => app.close());
await app.trellis.app.listen({ host: '127.0.0.1', port: 0 });
const url = new URL(`http://127.0.0.1:${(app.trellis.app.server.address() as { port: number }).port}/api/v1/mcp`);
const ws = await setupWorkspace(app);
const def = await app.inject({
  method: 'POST',
  url: '/api/v1/data-definitions',
  headers: ws.auth,
  payload: { name: 'Orders', handle: 'orders', fields: { status: { name: 'Status', type: 'text' }, amount: { name: 'Amount', type: 'number' } } },
});
t.equal(def.statusCode, 201, def.body);

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'data-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  t.teardown(() => client.close());
  return client;
}
const json = (r: unknown) => JSON.parse(((r as { content: { text: string }[] }).content)[0].text);

t.test('an agent lists definitions, writes rows, queries and runs SQL', async (t) => {
  const client = await connect(ws.key);
  const names = (await client.listTools()).tools.map((x) => x.name);
  for (const n of ['data_list_definitions', 'data_query_rows', 'data_upsert_rows', 'sql_query']) t.ok(names.includes(n), n);

  const defs = json(await client.callTool({ name: 'data_list_definitions', arguments: {} }));
  t.match(defs.definitions, [{ handle: 'orders', fields: { status: { type: 'text' }, amount: { type: 'number' } } }]);

  const up = await client.callTool({ name: 'data_upsert_rows', arguments: { definition: 'orders', rows: [{ data: { status: 'open', amount: 5 } }, { data: { status: 'open', amount: 20 } }, { data: { status: 'paid', amount: 7 } }] } });
  t.notOk(up.isError, JSON.stringify(up.content));
  t.equal(json(up).rows.length, 3);

  const page = json(await client.callTool({ name: 'data_query_rows', arguments: { definition: 'orders', filter: { status: 'open', 'amount.gt': 10 } } }));
  t.equal(page.total, 1);
  t.equal(page.items[0].data.amount, 20);

  const sql = json(await client.callTool({ name: 'sql_query', arguments: { sql: 'SELECT status, sum(amount) AS total FROM orders GROUP BY 1 ORDER BY 1' } }));
  t.same(sql.records, [{ status: 'open', total: 25 }, { status: 'paid', total: 7 }]);

  const bad = await client.callTool({ name: 'data_upsert_rows', arguments: { definition: 'orders', rows: [{ data: { amount: 'lots' } }] } });
  t.equal(bad.isError, true, 'a row that does not fit the field types is an error result, nothing written');
  const escape = await client.callTool({ name: 'sql_query', arguments: { sql: "SELECT * FROM read_csv('/etc/passwd')" } });
  t.equal(escape.isError, true);
  const missing = await client.callTool({ name: 'data_query_rows', arguments: { definition: 'nope' } });
  t.match((missing.content as { text: string }[])[0].text, /not_found/);
});

t.test('a viewer key gets the read tools only', async (t) => {
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const names = (await (await connect(viewer.key)).listTools()).tools.map((x) => x.name);
  t.ok(names.includes('data_query_rows') && names.includes('sql_query'));
  t.notOk(names.includes('data_upsert_rows'));
});
