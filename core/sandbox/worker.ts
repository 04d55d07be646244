/**
 * Sandbox worker thread: runs one script at a time with `runEngine`, proxying host calls
 * (`ctx.fetch`, `ctx.resources`) and log events to the parent, and answering pings between
 * guest segments (a worker that stops answering is stuck in one long operation and is
 * terminated by the parent).
 */
import { parentPort } from 'node:worker_threads';
import { loadQuickJS, runEngine, type SandboxLimits } from './index.ts';

interface RunMessage {
  t: 'run';
  code: string;
  inputJson: string;
  capsJson: string;
  limits: SandboxLimits;
}

type Incoming =
  | RunMessage
  | { t: 'ping' }
  | { t: 'abort' }
  | { t: 'host-result'; callId: number; ok: true; json: string }
  | { t: 'host-result'; callId: number; ok: false; name: string; message: string };

const port = parentPort!;
let current: { abort: AbortController; calls: Map<number, { resolve: (json: string) => void; reject: (err: Error) => void }> } | null = null;

async function run(m: RunMessage): Promise<void> {
  const abort = new AbortController();
  const calls = new Map<number, { resolve: (json: string) => void; reject: (err: Error) => void }>();
  current = { abort, calls };
  let next = 0;
  let result;
  try {
    result = await runEngine({
      code: m.code,
      inputJson: m.inputJson,
      capsJson: m.capsJson,
      limits: m.limits,
      signal: abort.signal,
      onLog: (event) => port.postMessage({ t: 'log', event }),
      hostCall: (op, argsJson, signal) =>
        new Promise<string>((resolve, reject) => {
          const callId = next++;
          calls.set(callId, { resolve, reject });
          signal.addEventListener('abort', () => {
            if (calls.delete(callId)) reject(new Error('aborted'));
          });
          port.postMessage({ t: 'host', callId, op, argsJson });
        }),
    });
  } catch (err) {
    // The host stack overflowed inside QuickJS (e.g. source nested too deeply for its parser), or
    // the WASM module aborted: this worker's module is unusable, so the parent replaces it.
    const overflow = err instanceof RangeError && /call stack/i.test(err.message);
    result = overflow
      ? { ok: false, output: null, error: { code: 'stack_overflow', name: 'RangeError', message: 'The script is nested too deeply for the sandbox (stack overflow).' }, logs: [], durationMs: 0, cpuMs: 0 }
      : { ok: false, output: null, error: { code: 'internal', name: 'InternalError', message: `The sandbox failed: ${(err as Error).message}` }, logs: [], durationMs: 0, cpuMs: 0 };
    current = null;
    port.postMessage({ t: 'done', result, fatal: true });
    setTimeout(() => process.exit(1), 50);
    return;
  }
  current = null;
  port.postMessage({ t: 'done', result });
}

port.on('message', (m: Incoming) => {
  switch (m.t) {
    case 'ping':
      port.postMessage({ t: 'pong' });
      break;
    case 'abort':
      current?.abort.abort();
      break;
    case 'host-result': {
      const call = current?.calls.get(m.callId);
      if (!call) break;
      current!.calls.delete(m.callId);
      if (m.ok) call.resolve(m.json);
      else {
        const err = new Error(m.message);
        err.name = m.name;
        call.reject(err);
      }
      break;
    }
    case 'run':
      void run(m);
      break;
  }
});

await loadQuickJS();
port.postMessage({ t: 'ready' });
