import t from 'tap';
import { PgBoss } from 'pg-boss';
import cron, { CRON_QUEUE } from '../../../adapters/channels/cron/index.ts';
import { contractHarness, until } from '../../contracts/channels.ts';

// The cron adapter has no platform: no inbound route, no outbound delivery. Its contract is the
// schedule (registered, replaced, removed) and the posted system message per tick.
const h = await contractHarness({ name: 'cron', kind: 'cron', adapterId: 'cron', adapters: [cron], config: { schedule: '*/5 * * * *', text: 'Daily stand-up: post your update' } });
t.teardown(() => h.app.close());
const schedules = (channelId: string) => h.app.trellis.db.query<{ cron: string; timezone: string; data: { channelId: string } }>(`SELECT cron, timezone, data FROM pgboss.schedule WHERE name = $1 AND key = $2`, [CRON_QUEUE, channelId]);

t.test('creating a cron channel registers its schedule; invalid schedules are 400 and create nothing', async (t) => {
  const ch = await h.createChannel();
  const rows = await schedules(ch.id);
  t.equal(rows.length, 1);
  t.match(rows[0], { cron: '*/5 * * * *', timezone: 'UTC', data: { channelId: ch.id } });
  t.equal(ch.inboundUrl, null, 'no inbound route');

  const before = (await h.app.inject({ method: 'GET', url: '/api/v1/channels', headers: h.ws.auth })).json().length;
  for (const [config, path] of [
    [{ schedule: 'every minute please', text: 'x' }, ['config', 'schedule']],
    [{ schedule: '61 * * * *', text: 'x' }, ['config', 'schedule']],
    [{ schedule: '* * * * *', text: 'x', tz: 'Mars/Olympus' }, ['config', 'tz']],
    [{ schedule: '* * * * *' }, ['config', 'text']],
  ] as const) {
    const res = await h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: 'bad', kind: 'cron', config } });
    t.equal(res.statusCode, 400, JSON.stringify(config));
    t.same(res.json().issues[0].path, path);
  }
  t.equal((await h.app.inject({ method: 'GET', url: '/api/v1/channels', headers: h.ws.auth })).json().length, before, 'nothing created');

  const patched = await h.app.inject({ method: 'PATCH', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth, payload: { config: { schedule: '0 9 * * 1-5', tz: 'Europe/Paris' } } });
  t.equal(patched.statusCode, 200);
  t.match((await schedules(ch.id))[0], { cron: '0 9 * * 1-5', timezone: 'Europe/Paris' });

  const del = await h.app.inject({ method: 'DELETE', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth });
  t.equal(del.statusCode, 204);
  t.equal((await schedules(ch.id)).length, 0, 'schedule removed with the channel');
});

t.test('a tick posts one system message (as the scheduler would enqueue it)', async (t) => {
  const ch = await h.createChannel();
  // Enqueue the tick the way pg-boss's scheduler does (cron granularity is a minute: too slow for a test).
  const boss = new PgBoss({ connectionString: h.app.databaseUrl, schema: 'pgboss', supervise: false, schedule: false, migrate: false });
  await boss.start();
  t.teardown(() => boss.stop({ graceful: false, close: true }));
  await boss.send(CRON_QUEUE, { channelId: ch.id });
  const [m] = await until('the tick message', async () => {
    const list = await h.messages(ch.id);
    return list.length > 0 && list;
  });
  t.match(m, { direction: 'system', kind: 'system', status: 'received', text: 'Daily stand-up: post your update', author: { role: 'system', name: 'cron' }, threadId: null });
  t.match(m.externalId, /^cron:/);
  t.match(m.raw, { schedule: '*/5 * * * *', tz: 'UTC' });
  const channel = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth })).json();
  t.equal(channel.lastMessageAt, m.createdAt);

  // A tick for a deleted channel posts nothing and drops the schedule.
  await h.app.inject({ method: 'DELETE', url: `/api/v1/channels/${ch.id}`, headers: h.ws.auth });
  await boss.send(CRON_QUEUE, { channelId: ch.id });
  await until('the queue drained', async () => {
    const rows = await h.app.trellis.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'active', 'retry')`, [CRON_QUEUE]);
    return rows[0].n === 0;
  });
  t.equal((await schedules(ch.id)).length, 0);
});
