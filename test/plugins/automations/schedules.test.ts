/**
 * Schedule triggers: two server instances on one database register one pg-boss schedule per
 * trigger and start one run per tick; the schedule survives a restart; disabling or deleting
 * removes it. Ticks are driven by sending the schedule's job directly (no minute-long waits).
 */
import { PgBoss } from 'pg-boss';
import t from 'tap';
import { buildTestApp, setupWorkspace } from '../../../core/testing/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';
import automations from '../../../plugins/automations/index.ts';

const env = { TRELLIS_SECRET_KEY: 'schedule-test-secret-key-0123456789abcdef' };
const plugins = [workspaces, automations];
const nodeA = await buildTestApp({ plugins, env });
const ws = await setupWorkspace(nodeA);

const req = (node: typeof nodeA, method: string, url: string, payload?: unknown) =>
  node.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: ws.auth, ...(payload !== undefined ? { payload: payload as object } : {}) });

// A cron that never comes due during the test (midnight on January 1st), so only the ticks the
// test sends arrive.
const created = await req(nodeA, 'POST', '/automations', {
  name: 'Nightly',
  scriptSource: 'export default (input) => ({ at: input.scheduledAt, tz: input.timezone })',
  triggers: [{ type: 'schedule', name: 'new year', config: { cron: '0 0 1 1 *', timezone: 'America/New_York' } }],
});
if (created.statusCode !== 201) throw new Error(created.body);
const automation = created.json();
const trigger = automation.triggers[0];

// The second instance starts after the trigger exists, so it registers the schedule too.
const nodeB = await buildTestApp({ plugins, env, databaseUrl: nodeA.databaseUrl });
t.teardown(async () => {
  await nodeB.close();
  await nodeA.close();
});

const schedules = () => nodeA.trellis.db.query<{ key: string; cron: string; timezone: string }>(`SELECT key, cron, timezone FROM pgboss.schedule WHERE name = 'automations.schedule'`);
const runs = async () => (await req(nodeA, 'GET', `/automations/${automation.id}/runs`)).json() as { run: { id: string; status: string; input: Record<string, string>; output: unknown } }[];

async function poll<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const boss = new PgBoss({ connectionString: nodeA.databaseUrl, schema: 'pgboss', max: 2 });
await boss.start();
t.teardown(() => boss.stop({ graceful: false, close: true }));

t.test('two instances register one schedule for the trigger', async (t) => {
  t.equal(trigger.config.cron, '0 0 1 1 *');
  t.equal(trigger.config.timezone, 'America/New_York');
  const rows = await schedules();
  t.same(rows.map((r) => [r.key, r.cron, r.timezone]), [[trigger.id, '0 0 1 1 *', 'America/New_York']]);
});

t.test('a tick delivered to both instances starts exactly one run', async (t) => {
  const data = { workspaceId: (await nodeA.trellis.db.query<{ workspace_id: string }>('SELECT workspace_id FROM automations_automations WHERE id = $1', [automation.id]))[0].workspace_id, triggerId: trigger.id };
  // The same tick, sent twice (as a duplicated delivery would be): whichever instances pick the
  // jobs up, the run is keyed by the tick.
  const ids = [await boss.send('automations.schedule', data), await boss.send('automations.schedule', data), await boss.send('automations.schedule', data)];
  const states = await poll(
    async () => nodeA.trellis.db.query<{ state: string }>(`SELECT state FROM pgboss.job WHERE id = ANY($1::uuid[])`, [`{${ids.join(',')}}`]),
    (rows) => rows.length === 3 && rows.every((r) => r.state === 'completed'),
  );
  t.same(states.map((s) => s.state), ['completed', 'completed', 'completed']);
  const list = await poll(runs, (r) => r.length > 0 && r.every((x) => x.run.status !== 'running'));
  t.equal(list.length, 1, 'one run for the tick');
  t.equal(list[0].run.status, 'succeeded');
  const at = new Date(list[0].run.input.scheduledAt);
  const local = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', hourCycle: 'h23' }).format(at);
  t.equal(local, '1/1, 00:00', 'the tick is midnight on January 1st in the trigger time zone');
  t.same(list[0].run.output, { at: list[0].run.input.scheduledAt, tz: 'America/New_York' });
  t.equal(list[0].run.input.cron, '0 0 1 1 *');
});

t.test('the schedule survives a restart; disabling and deleting remove it', async (t) => {
  await nodeB.close();
  const nodeC = await buildTestApp({ plugins, env, databaseUrl: nodeA.databaseUrl });
  t.teardown(() => nodeC.close());
  t.equal((await schedules()).length, 1, 'still one schedule after an instance restarts');

  const off = await req(nodeC, 'PATCH', `/automations/${automation.id}`, { triggers: [{ id: trigger.id, type: 'schedule', enabled: false, config: trigger.config }] });
  t.equal(off.statusCode, 200, off.body);
  t.equal((await schedules()).length, 0, 'a disabled trigger has no schedule');
  const data = { workspaceId: (await nodeA.trellis.db.query<{ workspace_id: string }>('SELECT workspace_id FROM automations_automations WHERE id = $1', [automation.id]))[0].workspace_id, triggerId: trigger.id };
  const id = await boss.send('automations.schedule', data);
  await poll(async () => nodeA.trellis.db.query<{ state: string }>('SELECT state FROM pgboss.job WHERE id = $1', [id]), (r) => r[0]?.state === 'completed');
  t.equal((await runs()).length, 1, 'a tick for a disabled trigger starts nothing');

  await req(nodeC, 'PATCH', `/automations/${automation.id}`, { triggers: [{ id: trigger.id, type: 'schedule', enabled: true, config: { cron: '*/5 * * * *' } }] });
  t.same((await schedules()).map((r) => [r.cron, r.timezone]), [['*/5 * * * *', 'UTC']], 're-enabled with the new cron');
  await req(nodeC, 'PATCH', `/automations/${automation.id}`, { enabled: false });
  t.equal((await schedules()).length, 0, 'a disabled automation has no schedule');
  await req(nodeC, 'PATCH', `/automations/${automation.id}`, { enabled: true });
  t.equal((await schedules()).length, 1);
  await req(nodeC, 'DELETE', `/automations/${automation.id}`);
  t.equal((await schedules()).length, 0, 'a deleted automation has no schedule');
});
