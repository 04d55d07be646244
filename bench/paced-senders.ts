/**
 * Paced load for benchmarks, run as a child process: SENDERS concurrent senders share an offered
 * RATE (requests/s) for SECONDS. Sender i fires every SENDERS/RATE seconds, offset by i/RATE, so
 * arrivals are evenly spaced (autocannon's --overallRate fires all connections on the same
 * tick, which measures its own bursts). Each request is sent on schedule whether or not the
 * previous one answered (open loop). Prints `{sent, ok, failed}` as JSON.
 *
 * usage: node bench/paced-senders.ts <url> <rate> <seconds> <senders> <json body>
 */
const [url, rateArg, secondsArg, sendersArg, body] = process.argv.slice(2);
const rate = Number(rateArg);
const seconds = Number(secondsArg);
const senders = Number(sendersArg);
const total = Math.round(rate * seconds);
let ok = 0;
let failed = 0;
const t0 = performance.now() + 50;
const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - performance.now())));

async function sender(i: number): Promise<void> {
  const inflight: Promise<void>[] = [];
  for (let k = i; k < total; k += senders) {
    await sleepUntil(t0 + (k * 1000) / rate);
    inflight.push(
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (res) => {
          await res.arrayBuffer();
          if (res.ok) ok++;
          else failed++;
        })
        .catch(() => void failed++),
    );
  }
  await Promise.all(inflight);
}

await Promise.all(Array.from({ length: senders }, (_, i) => sender(i)));
process.stdout.write(JSON.stringify({ sent: total, ok, failed }));
