/**
 * Load generator for bench/channels-inbound (runs in its own process): autocannon with a request
 * generator so that every request is a distinct, correctly signed Standard Webhooks delivery
 * (a fixed body would be refused as a replay). Reads its job from argv[2] (JSON), prints JSON.
 */
// @ts-expect-error autocannon ships no type declarations
import autocannon from 'autocannon';
import { signStandardWebhook } from '../plugins/channels/api.ts';

const job = JSON.parse(process.argv[2]) as { url: string; secret: string; connections: number; seconds: number };
let n = 0;
const result = await autocannon({
  url: job.url,
  connections: job.connections,
  duration: job.seconds,
  requests: [
    {
      method: 'POST',
      setupRequest(req: Record<string, unknown>) {
        const id = `bench-${process.pid}-${++n}`;
        const body = JSON.stringify({ type: 'message', id, text: `inbound ${n}`, author: { role: 'user', name: 'Load' }, thread: { id: `conv-${n % 100}` } });
        const headers = { 'content-type': 'application/json', ...signStandardWebhook(job.secret, id, Math.floor(Date.now() / 1000), body) };
        return { ...req, body, headers };
      },
    },
  ],
});
process.stdout.write(JSON.stringify({ requests: result.requests.total, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx }));
