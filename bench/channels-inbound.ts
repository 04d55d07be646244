/**
 * bench/channels-inbound: inbound webhook ingest through `POST /api/v1/channels/{id}/inbound` on a
 * `webhook` channel: raw-body capture, Standard Webhooks HMAC verification and timestamp check,
 * the replay-key insert and the idempotent message + thread upsert in one transaction. Every
 * request is a distinct signed delivery into one of 100 threads. BENCH_CONNECTIONS (default 50),
 * BENCH_SECONDS (default 10). Baseline in the same run: the authenticated `GET /channels/{id}`
 * through the same stack. Load generators run in child processes.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { envInt, load, row, type LoadResult } from './lib.ts';
import { api, startChannelsBench } from './channels-lib.ts';

const run = promisify(execFile);
const connections = envInt('BENCH_CONNECTIONS', 50);
const seconds = envInt('BENCH_SECONDS', 10);
const SECRET = `whsec_${Buffer.from('bench-secret-bench-secret-bench!').toString('base64')}`;

async function ingest(url: string, secs: number): Promise<LoadResult> {
  const { stdout } = await run(process.execPath, [path.join(import.meta.dirname, 'channels-inbound-load.ts'), JSON.stringify({ url, secret: SECRET, connections, seconds: secs })], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as LoadResult;
}

const b = await startChannelsBench();
const channel = await api<{ id: string }>(b, 'POST', '/channels', { name: 'inbound bench', kind: 'webhook', config: { secret: SECRET } });
const auth = { authorization: `Bearer ${b.key}` };
const inboundUrl = `${b.base}/channels/${channel.id}/inbound`;

console.log(`channels-inbound: ${connections} connections, ${seconds} s each, Node ${process.version}`);
await load(`${b.base}/channels/${channel.id}`, { connections, seconds: 2, headers: auth });
await ingest(inboundUrl, 2);
const baseline = await load(`${b.base}/channels/${channel.id}`, { connections, seconds, headers: auth });
const subject = await ingest(inboundUrl, seconds);
const [{ n, t }] = await b.trellis.db.query<{ n: number; t: number }>('SELECT count(*)::int AS n, count(DISTINCT thread_id)::int AS t FROM channels_messages WHERE channel_id = $1', [channel.id]);
console.log(row('baseline: GET /channels/{id}', baseline));
console.log(row('signed inbound webhook ingest', subject));
console.log(`messages stored: ${n} in ${t} threads (warm-up included); ${subject.non2xx} refused`);
console.log(`ratio (inbound ingest / authenticated GET): ${(subject.rps / baseline.rps).toFixed(2)}`);
await b.close();
