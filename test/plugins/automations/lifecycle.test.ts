/**
 * Run lifecycle across server instances: a server that shuts down records its runs in flight as
 * failed (never left running), and another instance on the same database sees the result.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import automations from '../../../plugins/automations/index.ts';

const env = { TRELLIS_SECRET_KEY: 'lifecycle-test-secret-key-0123456789abcdef', TRELLIS_OUTBOUND_ALLOW: '127.0.0.1' };
const plugins = [workspaces, automations];
const pluginConfig = { automations: { timeoutMs: 10_000, manualWaitMs: 50 } };

let release!: () => void;
const gate = new Promise<void>((r) => (release = r));
const peer = http.createServer(async (_req, res) => {
  await gate;
  res.end('late');
});
await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/hang`;

const nodeA = await buildTestApp({ plugins, env, pluginConfig });
const nodeB = await buildTestApp({ plugins, env, pluginConfig, databaseUrl: nodeA.databaseUrl });
t.teardown(async () => {
  release();
  await new Promise<void>((r) => peer.close(() => r()));
  await nodeB.close();
  await nodeA.close();
});
const ws = await setupWorkspace(nodeA);

t.test('a run in flight when its server stops is recorded as failed', async (t) => {
  const created = await nodeA.inject({
    method: 'POST',
    url: '/api/v1/automations',
    headers: ws.auth,
    payload: {
      name: 'Hangs',
      scriptSource: 'export default async (input, ctx) => (await ctx.fetch(input.url)).text()',
      resources: [{ label: 'peer', resourceType: 'http', resourceRef: '127.0.0.1' }],
    },
  });
  t.equal(created.statusCode, 201, created.body);
  const run = await nodeB.inject({ method: 'POST', url: `/api/v1/automations/${created.json().id}/run`, headers: ws.auth, payload: { input: { url } } });
  t.equal(run.statusCode, 200);
  t.equal(run.json().status, 'running');

  await nodeB.close();
  const after = (await nodeA.inject({ method: 'GET', url: `/api/v1/runs/${run.json().id}`, headers: ws.auth })).json();
  t.equal(after.status, 'failed', 'recorded before the server finished stopping');
  t.match(after.error.message, /shutting down/);
  t.ok(after.finishedAt);
  t.equal(after.events.at(-1).type, 'error');
});
