import t from 'tap';
import apiAdapter from '../../../adapters/channels/api/index.ts';
import cron from '../../../adapters/channels/cron/index.ts';
import discord from '../../../adapters/channels/discord/index.ts';
import email from '../../../adapters/channels/email/index.ts';
import slack from '../../../adapters/channels/slack/index.ts';
import sms from '../../../adapters/channels/sms/index.ts';
import telegram from '../../../adapters/channels/telegram/index.ts';
import webhook from '../../../adapters/channels/webhook/index.ts';
import acme from '../../../examples/channel-adapter/index.ts';
import { contractHarness } from '../../contracts/channels.ts';

// Every adapter: its config is validated at creation (400 with a `config` path), its secret fields
// are encrypted at rest and never returned by any channel route, and the listing shows them as set.
const h = await contractHarness({ name: 'all', kind: 'api', adapterId: 'api', adapters: [apiAdapter, webhook, slack, telegram, discord, sms, email, cron, acme], config: {} });
t.teardown(() => h.app.close());

const cases: { kind: string; adapter?: string; good: Record<string, unknown>; secrets: string[]; bad: Record<string, unknown> }[] = [
  { kind: 'webhook', good: { secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=' }, secrets: ['secret'], bad: {} },
  { kind: 'slack', good: { signingSecret: 'S1GNING-SECRET-xyz', botToken: 'xoxb-TOKEN-abc' }, secrets: ['signingSecret', 'botToken'], bad: { botToken: 'xoxb-TOKEN-abc' } },
  { kind: 'telegram', good: { botToken: '123:TOKEN-tg-abc', secretToken: 'SECRET_tg_token' }, secrets: ['botToken', 'secretToken'], bad: { botToken: '123:TOKEN-tg-abc', secretToken: 'has spaces!' } },
  { kind: 'discord', good: { publicKey: 'a'.repeat(64), botToken: 'DISCORD-TOKEN-abc' }, secrets: ['botToken'], bad: { publicKey: 'a'.repeat(63) } },
  { kind: 'sms', good: { accountSid: 'AC1', authToken: 'TWILIO-TOKEN-abc', from: '+15550001' }, secrets: ['authToken'], bad: { accountSid: 'AC1', from: '+15550001' } },
  { kind: 'email', good: { from: 'a@b.test', smtpHost: 'smtp.b.test', smtpPassword: 'SMTP-PASSWORD-abc', inboundSecret: 'INBOUND-SECRET-abcdef' }, secrets: ['smtpPassword', 'inboundSecret'], bad: { from: 'a@b.test', smtpPort: 99999 } },
  { kind: 'cron', good: { schedule: '0 * * * *', text: 'tick' }, secrets: [], bad: { schedule: '0 * * * *' } },
  { kind: 'custom', adapter: 'acme-chat', good: { apiToken: 'ACME-TOKEN-abc', webhookSecret: 'ACME-WEBHOOK-SECRET-abc' }, secrets: ['apiToken', 'webhookSecret'], bad: { apiToken: 'ACME-TOKEN-abc' } },
];

for (const c of cases) {
  t.test(`${c.adapter ?? c.kind}: validated config, write-only secrets`, async (t) => {
    const create = (config: Record<string, unknown>) =>
      h.app.inject({ method: 'POST', url: '/api/v1/channels', headers: h.ws.auth, payload: { name: c.kind, kind: c.kind, ...(c.adapter ? { adapter: c.adapter } : {}), config } });
    const bad = await create(c.bad);
    t.equal(bad.statusCode, 400, bad.body);
    t.equal(bad.json()._tag, 'HttpApiDecodeError');
    t.equal(bad.json().issues[0].path[0], 'config');
    const extra = await create({ ...c.good, surprise: 1 });
    t.equal(extra.statusCode, 400, 'unknown config fields refused');

    const res = await create(c.good);
    t.equal(res.statusCode, 201, res.body);
    const id = res.json().id;
    const info = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${id}/adapter`, headers: h.ws.auth })).json();
    t.same(info.secrets, Object.fromEntries(c.secrets.map((s) => [s, true])));
    const bodies = [
      res.body,
      JSON.stringify(info),
      (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${id}`, headers: h.ws.auth })).body,
      (await h.app.inject({ method: 'GET', url: '/api/v1/channels', headers: h.ws.auth })).body,
      (await h.app.inject({ method: 'PATCH', url: `/api/v1/channels/${id}`, headers: h.ws.auth, payload: { name: 'renamed' } })).body,
    ];
    const [row] = await h.app.trellis.db.query<Record<string, unknown>>('SELECT config, secrets FROM channels_channels WHERE id = $1', [id]);
    for (const s of c.secrets) {
      const value = String(c.good[s]);
      t.notOk(bodies.some((b) => b.includes(value)), `${s} never returned`);
      t.notOk(JSON.stringify(row).includes(value), `${s} encrypted at rest`);
      t.notOk(s in info.config, `${s} not in the config view`);
    }
    t.match(row.secrets ?? '', c.secrets.length ? /^v1\./ : /^$/);
  });
}
