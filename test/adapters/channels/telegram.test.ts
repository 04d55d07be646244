import t from 'tap';
import telegram from '../../../adapters/channels/telegram/index.ts';
import { contractHarness, runChannelContract, until } from '../../contracts/channels.ts';
import { deadPort, startHttpPeer } from './peers.ts';

const BOT = '123456:test-bot-token';
const SECRET = 'telegram_secret-token';
let nextId = 100;

// A Telegram Bot API peer: POST /bot<token>/sendMessage.
const peer = await startHttpPeer((req) => {
  if (req.path !== `/bot${BOT}/sendMessage`) return { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } };
  const body = JSON.parse(req.body.toString());
  if (String(body.chat_id) === '-404') return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: chat not found' } };
  return { body: { ok: true, result: { message_id: nextId++, chat: { id: Number(body.chat_id), type: 'private' }, date: 1, text: body.text } } };
});
t.teardown(() => peer.close());
const down = await deadPort();

const update = (messageId: string | number, text: string, chatId = 4242) => ({
  update_id: Math.floor(Math.random() * 1e9),
  message: { message_id: messageId, from: { id: 7, is_bot: false, first_name: 'Ada', last_name: 'L' }, chat: { id: chatId, type: 'private', username: 'ada' }, date: 1700000000, text },
});
const sign = ({ externalId, text, secretOverride }: { externalId: string; text: string; secretOverride?: string }) => ({
  headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': (secretOverride ?? SECRET).replace(/[^A-Za-z0-9_-]/g, '_') },
  payload: JSON.stringify(update(externalId, text)),
});

const subject = {
  name: 'telegram',
  kind: 'telegram',
  adapterId: 'telegram',
  adapters: [telegram],
  config: { botToken: BOT, secretToken: SECRET, chatId: '4242', apiBaseUrl: peer.url },
  inbound: { sign, storedExternalId: (id: string) => `4242:${id}`, timestamps: false, perRequestSignature: false, bodySigned: false, signatureHeaders: ['x-telegram-bot-api-secret-token'] },
  outbound: {
    received: () => peer.requests.map((r) => JSON.parse(r.body.toString()).text as string),
    failNext: (n: number) => peer.failNext(n, 502),
    downConfig: { apiBaseUrl: `http://127.0.0.1:${down}` },
    finalStatus: 'delivered' as const,
  },
};

runChannelContract(t, subject);

t.test('telegram specifics: a thread per chat, replies go to the chat, permanent errors', async (t) => {
  const h = await contractHarness(subject);
  t.teardown(() => h.app.close());
  const ch = await h.createChannel();
  t.equal((await h.post(ch.id, sign({ externalId: '1', text: 'hi' }))).statusCode, 200);
  t.equal((await h.post(ch.id, sign({ externalId: '2', text: 'again' }))).statusCode, 200);
  const other = { headers: sign({ externalId: '1', text: '' }).headers, payload: JSON.stringify(update(1, 'other chat', 9999)) };
  t.equal((await h.post(ch.id, other)).statusCode, 200);
  const edit = { headers: sign({ externalId: '1', text: '' }).headers, payload: JSON.stringify({ update_id: 5, edited_message: { message_id: 1, chat: { id: 4242 }, text: 'edited' } }) };
  t.equal((await h.post(ch.id, edit)).statusCode, 200);
  const threads = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads`, headers: h.ws.auth })).json();
  t.same(threads.map((x: { externalId: string }) => x.externalId).sort(), ['4242', '9999']);
  const chat = threads.find((x: { externalId: string }) => x.externalId === '4242');
  const msgs = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${chat.id}/messages`, headers: h.ws.auth })).json();
  t.same(msgs.map((m: { text: string }) => m.text), ['hi', 'again']);
  t.match(msgs[0].author, { role: 'user', name: 'Ada L', externalId: '7' });
  t.equal(msgs[0].raw.message.text, 'hi');

  const out = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/threads/${chat.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'reply to ada' } })).json();
  const done = await until('delivered', async () => {
    const r = (await h.app.inject({ method: 'GET', url: `/api/v1/channels/${ch.id}/threads/${chat.id}/messages`, headers: h.ws.auth })).json();
    const m = r.find((x: { id: string }) => x.id === out.id);
    return m.status !== 'pending' && m;
  });
  t.equal(done.status, 'delivered');
  t.match(done.externalId, /^4242:\d+$/);
  t.same(JSON.parse(peer.requests.at(-1)!.body.toString()), { chat_id: '4242', text: 'reply to ada' });

  const bad = await h.createChannel({ ...subject.config, chatId: '-404' });
  const m = (await h.app.inject({ method: 'POST', url: `/api/v1/channels/${bad.id}/messages`, headers: h.ws.auth, payload: { direction: 'outbound', author: { role: 'agent' }, text: 'x' } })).json();
  const failed = await until('failed', async () => {
    const x = (await h.messages(bad.id)).find((y) => y.id === m.id) as Record<string, any>;
    return x.status === 'failed' && x;
  });
  t.equal(failed.metadata.delivery.attempts, 1, 'a 400 is not retried');
  t.match(failed.metadata.delivery.error, /chat not found/);
  t.notOk(failed.metadata.delivery.error.includes(BOT), 'the token is not in the reason');
});
