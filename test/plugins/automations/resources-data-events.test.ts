/**
 * Resources bound into scripts (data definitions, channels) and data_event triggers end to end:
 * a data change commits -> the run is queued -> it succeeds and writes through its resources.
 */
import t from 'tap';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import data from '../../../plugins/data/index.ts';
import channels from '../../../plugins/channels/index.ts';
import apiAdapter from '../../../adapters/channels/api/index.ts';
import automations from '../../../plugins/automations/index.ts';

const app = await buildTestApp({ plugins: [workspaces, data, channels, automations], adapters: [apiAdapter], pluginConfig: { automations: { timeoutMs: 5000 } } });
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);

const req = (method: string, url: string, auth: Record<string, string>, payload?: unknown) =>
  app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: auth, ...(payload !== undefined ? { payload: payload as object } : {}) });

const tickets = (await req('POST', '/data-definitions', ws.auth, { name: 'Tickets', fields: { title: { name: 'Title', type: 'text' }, priority: { name: 'Priority', type: 'text' } } })).json();
const audit = (await req('POST', '/data-definitions', ws.auth, { name: 'Audit', fields: { note: { name: 'Note', type: 'text' }, ticket: { name: 'Ticket', type: 'text' } } })).json();
const theirs = (await req('POST', '/data-definitions', other.auth, { name: 'Secret' })).json();
if (!tickets.id || !audit.id || !theirs.id) throw new Error('definitions not created');

async function poll<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 8000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}

const auditRows = async () => (await req('GET', `/data-definitions/${audit.id}/query?pageSize=100`, ws.auth)).json().items as { data: Record<string, unknown> }[];

t.test('data_definition resource: query, get and upsert from a script, scoped to the workspace', async (t) => {
  const created = await req('POST', '/automations', ws.auth, {
    name: 'Data user',
    scriptSource: `export default async (input, ctx) => {
      const [row] = await ctx.resources.audit.upsert({ data: { note: 'from script', ticket: 't0' } });
      const got = await ctx.resources.audit.get(row.id);
      const page = await ctx.resources.audit.query({ pageSize: 10 });
      let bad; try { await ctx.resources.audit.upsert({ data: { nope: 1 } }) } catch (e) { bad = e.message }
      return { id: row.id, same: got.id === row.id, note: got.data.note, total: page.total, bad: typeof bad };
    }`,
    resources: [{ label: 'audit', resourceType: 'data_definition', resourceRef: audit.handle }],
  });
  t.equal(created.statusCode, 201, created.body);
  t.match(created.json().resources[0], { label: 'audit', resourceType: 'data_definition', resourceRef: audit.handle, config: {}, position: 0 });
  const run = (await req('POST', `/automations/${created.json().id}/run`, ws.auth, {})).json();
  t.equal(run.status, 'succeeded', JSON.stringify(run.error));
  t.match(run.output, { same: true, note: 'from script', total: 1, bad: 'string' });
  t.ok((await auditRows()).some((r) => r.data.note === 'from script'));

  const cross = await req('POST', '/automations', ws.auth, { name: 'Cross', scriptSource: 'export default () => 1', resources: [{ label: 'x', resourceType: 'data_definition', resourceRef: theirs.id }] });
  t.equal(cross.statusCode, 400, "another workspace's definition is refused at creation");
  t.match(cross.json().message, /not found/);
});

t.test('channel resource: post a message', async (t) => {
  const channel = (await req('POST', '/channels', ws.auth, { name: 'alerts', kind: 'api' })).json();
  t.ok(channel.id);
  const created = await req('POST', '/automations', ws.auth, {
    name: 'Notifier',
    scriptSource: `export default async (input, ctx) => ctx.resources.alerts.post('Ticket ' + input.n + ' needs you')`,
    resources: [{ label: 'alerts', resourceType: 'channel', resourceRef: channel.id }],
  });
  t.equal(created.statusCode, 201, created.body);
  const run = (await req('POST', `/automations/${created.json().id}/run`, ws.auth, { input: { n: 7 } })).json();
  t.equal(run.status, 'succeeded', JSON.stringify(run.error));
  t.equal(run.output.channelId, channel.id);
  const messages = await req('GET', `/channels/${channel.id}/messages`, ws.auth);
  t.ok(JSON.stringify(messages.json()).includes('Ticket 7 needs you'), 'the message is in the channel');

  const theirChannel = (await req('POST', '/channels', other.auth, { name: 'theirs', kind: 'api' })).json();
  const sneaky = await req('POST', '/automations', ws.auth, {
    name: 'Sneaky',
    scriptSource: `export default async (input, ctx) => ctx.resources.c.post('hi')`,
    resources: [{ label: 'c', resourceType: 'channel', resourceRef: theirChannel.id }],
  });
  const sneakyRun = (await req('POST', `/automations/${sneaky.json().id}/run`, ws.auth, {})).json();
  t.equal(sneakyRun.status, 'failed', "posting to another workspace's channel fails the run");
  t.notOk(JSON.stringify((await req('GET', `/channels/${theirChannel.id}/messages`, other.auth)).json()).includes('"hi"'));
});

t.test('data_event trigger: fires after commit for matching events and rows, with the documented payload', async (t) => {
  const created = await req('POST', '/automations', ws.auth, {
    name: 'Escalate',
    scriptSource: `export default async (input, ctx) => {
      await ctx.resources.audit.upsert({ data: { note: input.event + ':' + input.row.data.title, ticket: input.row.id } });
      return { event: input.event, def: input.definitionHandle, prev: input.previous ? input.previous.data.priority : null };
    }`,
    resources: [{ label: 'audit', resourceType: 'data_definition', resourceRef: audit.id }],
    triggers: [{ type: 'data_event', name: 'High priority', config: { definition: tickets.handle, events: ['created', 'updated'], filter: { priority: 'high' } } }],
  });
  t.equal(created.statusCode, 201, created.body);
  const a = created.json();
  t.same(a.triggers[0].config, { definition: tickets.handle, events: ['created', 'updated'], filter: { priority: 'high' } });

  const up = await req('POST', `/data-definitions/${tickets.id}/data/upsert-many`, ws.auth, { rows: [{ data: { title: 'Server down', priority: 'high' } }, { data: { title: 'Typo', priority: 'low' } }] });
  t.equal(up.statusCode, 200, up.body);
  const [high, low] = up.json().items;

  const runs = await poll(
    async () => (await req('GET', `/automations/${a.id}/runs`, ws.auth)).json() as { run: { id: string; status: string } }[],
    (r) => r.length >= 1 && r.every((x) => x.run.status !== 'running'),
  );
  t.equal(runs.length, 1, 'only the high-priority row fired');
  const run = (await req('GET', `/runs/${runs[0].run.id}`, ws.auth)).json();
  t.equal(run.status, 'succeeded', JSON.stringify(run.error));
  t.equal(run.triggerType, 'data_event');
  t.equal(run.triggerId, a.triggers[0].id);
  t.match(run.input, { event: 'created', definitionId: tickets.id, definitionHandle: tickets.handle, row: { id: high.id, data: { title: 'Server down', priority: 'high' } }, previous: null });
  t.type(run.input.occurredAt, 'string');
  t.ok((await auditRows()).some((r) => r.data.note === 'created:Server down' && r.data.ticket === high.id));

  // Updating the low row to high fires "updated" with the previous row.
  await req('POST', `/data-definitions/${tickets.id}/data/upsert-many`, ws.auth, { rows: [{ id: low.id, data: { title: 'Typo', priority: 'high' } }] });
  const after = await poll(
    async () => (await req('GET', `/automations/${a.id}/runs`, ws.auth)).json() as { run: { status: string; output: unknown } }[],
    (r) => r.length >= 2 && r.every((x) => x.run.status !== 'running'),
  );
  t.equal(after.length, 2);
  t.same(after[0].run.output, { event: 'updated', def: tickets.handle, prev: 'low' });

  // Deletes are not subscribed; a disabled trigger does nothing.
  await req('POST', `/data-definitions/${tickets.id}/data/delete-many`, ws.auth, { ids: [high.id] });
  await req('PATCH', `/automations/${a.id}`, ws.auth, { triggers: [{ id: a.triggers[0].id, type: 'data_event', enabled: false, config: a.triggers[0].config }] });
  await req('POST', `/data-definitions/${tickets.id}/data/upsert-many`, ws.auth, { rows: [{ data: { title: 'Another', priority: 'high' } }] });

  const deleted = await req('POST', '/automations', ws.auth, {
    name: 'On delete',
    scriptSource: 'export default (input) => input.event + ":" + input.row.id',
    triggers: [{ type: 'data_event', config: { definition: tickets.id, events: ['deleted'] } }],
  });
  await req('POST', `/data-definitions/${tickets.id}/data/delete-many`, ws.auth, { ids: [low.id] });
  const delRuns = await poll(
    async () => (await req('GET', `/automations/${deleted.json().id}/runs`, ws.auth)).json() as { run: { status: string; output: unknown } }[],
    (r) => r.length >= 1 && r.every((x) => x.run.status !== 'running'),
  );
  t.equal(delRuns.length, 1);
  t.equal(delRuns[0].run.output, `deleted:${low.id}`);
  t.equal((await req('GET', `/automations/${a.id}/runs`, ws.auth)).json().length, 2, 'no run for the delete or while disabled');

  // Another workspace's data changes never reach this workspace's triggers.
  const foreign = (await req('POST', '/data-definitions', other.auth, { name: 'Tickets', fields: { priority: { name: 'Priority', type: 'text' } } })).json();
  await req('POST', `/data-definitions/${foreign.id}/data/upsert-many`, other.auth, { rows: [{ data: { priority: 'high' } }] });
  const later = await poll(async () => (await req('GET', `/automations/${deleted.json().id}/runs`, ws.auth)).json() as unknown[], (r) => r.length > 1, 1500);
  t.equal(later.length, 1);
});
