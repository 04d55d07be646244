/**
 * bench/channels-messages: sustained `POST /api/v1/channels/{id}/messages` (an inbound message on
 * an `api` channel: validation, guard, one transaction inserting the message and maintaining the
 * channel's lastMessageAt, the event) at BENCH_CONNECTIONS (default 50) for BENCH_SECONDS
 * (default 10), against the baseline of the same run: an authenticated, workspace-scoped
 * `GET /api/v1/channels/{id}` through the same stack. Load by autocannon in a child process.
 */
import { envInt, load, row } from './lib.ts';
import { api, startChannelsBench } from './channels-lib.ts';

const connections = envInt('BENCH_CONNECTIONS', 50);
const seconds = envInt('BENCH_SECONDS', 10);

const b = await startChannelsBench();
const channel = await api<{ id: string }>(b, 'POST', '/channels', { name: 'bench', kind: 'api' });
const auth = { authorization: `Bearer ${b.key}` };
const body = JSON.stringify({ direction: 'inbound', author: { role: 'user', name: 'Load' }, text: 'benchmark message', metadata: { source: 'bench' } });
const post = { connections, headers: { ...auth, 'content-type': 'application/json' }, method: 'POST', body };

console.log(`channels-messages: ${connections} connections, ${seconds} s each, Node ${process.version}`);
await load(`${b.base}/channels/${channel.id}`, { connections, seconds: 2, headers: auth });
await load(`${b.base}/channels/${channel.id}/messages`, { ...post, seconds: 2 });
const baseline = await load(`${b.base}/channels/${channel.id}`, { connections, seconds, headers: auth });
const subject = await load(`${b.base}/channels/${channel.id}/messages`, { ...post, seconds });
const [{ n }] = await b.trellis.db.query<{ n: number }>('SELECT count(*)::int AS n FROM channels_messages WHERE channel_id = $1', [channel.id]);
console.log(row('baseline: GET /channels/{id}', baseline));
console.log(row('POST /channels/{id}/messages', subject));
console.log(`messages stored: ${n} (warm-up included)`);
console.log(`ratio (POST messages / authenticated GET): ${(subject.rps / baseline.rps).toFixed(2)}`);
await b.close();
