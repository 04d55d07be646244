/**
 * The sandbox: the only way user code (automations, workflows) runs (DESIGN rule 9).
 *
 * Code is an ES module whose default export is an (async) function `(input, ctx)`. Every run gets
 * a fresh QuickJS runtime and context (quickjs-emscripten, release sync variant; the WASM module
 * is loaded once per process) with:
 * - a memory limit and a stack limit (runtime limits);
 * - a CPU deadline: time spent executing guest code, enforced by the interrupt handler;
 * - a wall-clock deadline that also covers awaited host calls (a host timer races the run);
 * - capped output, capped log events (count and bytes): exceeding either fails the run;
 * - `console.*` captured as log events (`log`/`info`/`debug` -> level info, `warn`/`error` ->
 *   level error);
 * - no capability unless granted: `ctx.fetch(url, init)` goes through the fetch given to
 *   `createSandbox` (core's SSRF-guarded fetch), `ctx.resources.<label>.<method>(...args)` calls
 *   host functions bound for this run only.
 *
 * Host objects never enter the guest: the guest sees one private host-call function (captured by
 * a bootstrap script and removed from the global object before user code loads) that exchanges
 * JSON strings. `ctx`, `ctx.resources` and fetch responses are plain guest objects, so polluting
 * their prototypes changes only the guest realm, which is thrown away after the run.
 *
 * A never-resolving promise is detected as soon as nothing can settle it (no host call in flight
 * and no pending job), otherwise it ends at the wall-clock deadline. Every handle is disposed in
 * `finally`, before the context and runtime, whatever happened.
 */
import {
  newQuickJSWASMModule,
  RELEASE_SYNC,
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from 'quickjs-emscripten';
import type { SafeFetch } from '../net/index.ts';
import { PoolBusyError, WorkerPool, type PoolSlot } from './pool.ts';

export interface SandboxLimits {
  /** Wall-clock deadline of a run, host calls included (ms). */
  timeoutMs: number;
  /** Time spent executing guest code (ms), enforced by the interrupt handler. */
  cpuMs: number;
  /** QuickJS heap limit (bytes). */
  memoryBytes: number;
  /** QuickJS stack limit (bytes). */
  stackBytes: number;
  /** Largest JSON-serialized output (bytes). */
  maxOutputBytes: number;
  /** Most console calls per run. */
  maxLogEvents: number;
  /** Most console bytes per run (a single message is cut at 8 KiB). */
  maxLogBytes: number;
  /** Largest response body `ctx.fetch` reads, and largest resource result (bytes). */
  maxHostResultBytes: number;
  /** Most host calls (fetch + resources) in flight at once. */
  maxConcurrentHostCalls: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  timeoutMs: 30_000,
  cpuMs: 5_000,
  memoryBytes: 64 * 1024 * 1024,
  stackBytes: 256 * 1024,
  maxOutputBytes: 1024 * 1024,
  maxLogEvents: 1000,
  maxLogBytes: 256 * 1024,
  maxHostResultBytes: 5 * 1024 * 1024,
  maxConcurrentHostCalls: 16,
};

export interface SandboxOptions {
  /** The fetch `ctx.fetch` goes through (core's SSRF-guarded `ctx.net.fetch`). */
  fetch?: SafeFetch;
  /** Defaults for every run; a run may tighten or change them. */
  limits?: Partial<SandboxLimits>;
  /**
   * `worker` (default): runs execute in a pool of worker threads, one run per worker at a time; a
   * run stuck in one long operation (where QuickJS's interrupt handler is not consulted) is
   * stopped by terminating its worker, so it can never block the server. `inline`: in the
   * calling thread (lower latency, for trusted benchmarks and tools only).
   */
  mode?: 'worker' | 'inline';
  /** Largest worker pool (default 8); runs beyond it wait for a free worker. */
  maxWorkers?: number;
}

/** A host function bound as `ctx.resources.<label>.<method>(...args)`; args and result are JSON. */
export type ResourceMethod = (args: unknown[], signal: AbortSignal) => Promise<unknown>;
export type ResourceBinding = Record<string, ResourceMethod>;

export interface SandboxCapabilities {
  /** Grants `ctx.fetch`. */
  fetch?: boolean;
  /**
   * Restricts `ctx.fetch` to these hosts (exact names, `*.example.com` for subdomains, `*` for
   * any); the SSRF guard applies in every case.
   */
  fetchHosts?: string[];
  /** Grants `ctx.resources.<label>`. */
  resources?: Record<string, ResourceBinding>;
}

export type LogLevel = 'info' | 'error';

export interface LogEvent {
  level: LogLevel;
  /** The console method called. */
  method: 'log' | 'info' | 'debug' | 'warn' | 'error';
  message: string;
  at: string;
}

export type SandboxErrorCode =
  | 'script_error'
  | 'invalid_module'
  | 'timeout'
  | 'cpu_limit'
  | 'memory_limit'
  | 'stack_overflow'
  | 'log_limit'
  | 'output_limit'
  | 'never_settled'
  | 'invalid_input'
  | 'internal';

export interface SandboxError {
  code: SandboxErrorCode;
  name: string;
  message: string;
  stack?: string;
}

export interface RunOptions {
  code: string;
  input?: unknown;
  capabilities?: SandboxCapabilities;
  limits?: Partial<SandboxLimits>;
  /** Called for every accepted log event, in order. */
  onLog?: (event: LogEvent) => void;
  /** Aborting ends the run as a timeout. */
  signal?: AbortSignal;
}

export type RunResult =
  | { ok: true; output: unknown; error: null; logs: LogEvent[]; durationMs: number; cpuMs: number }
  | { ok: false; output: null; error: SandboxError; logs: LogEvent[]; durationMs: number; cpuMs: number };

export interface Sandbox {
  readonly limits: Readonly<SandboxLimits>;
  run(opts: RunOptions): Promise<RunResult>;
  /** Starts a worker ahead of the first run (no-op inline). */
  warm(): Promise<void>;
  /** Stops the worker pool (runs in flight fail). */
  close(): Promise<void>;
}

/**
 * The QuickJS stack limit must stay well below the host (V8) stack the WASM frames run on: above
 * ~400 KiB a deep recursion overflows Node's own stack before QuickJS notices.
 */
export const MAX_STACK_BYTES = 384 * 1024;

let modulePromise: Promise<QuickJSWASMModule> | undefined;
let current: QuickJSWASMModule | undefined;
let retiredModules = 0;

/** Loads the WASM module once per process (~10 ms), or again after the current one was retired. */
export function loadQuickJS(): Promise<QuickJSWASMModule> {
  modulePromise ??= newQuickJSWASMModule(RELEASE_SYNC).then(
    (m) => (current = m),
    (err: unknown) => {
      modulePromise = undefined;
      throw err;
    },
  );
  return modulePromise;
}

/**
 * QuickJS can leak objects when it runs out of memory inside a job, and freeing such a runtime
 * aborts the whole WASM module. So a runtime that hit the memory limit (or failed to free) is
 * abandoned, and its module retired: new runs load a fresh module, runs still in flight on the
 * old one finish there, and the old module's memory is reclaimed by GC once nothing refers to it.
 */
function retireModule(m: QuickJSWASMModule): void {
  if (current === m) {
    current = undefined;
    modulePromise = undefined;
    retiredModules++;
  }
}

/** How many WASM modules were retired in this process (observability and tests). */
export function sandboxStats(): { retiredModules: number } {
  return { retiredModules };
}

const USER_MODULE = 'user:main';
const MAX_LOG_MESSAGE = 8 * 1024;

/**
 * Guest bootstrap (a global script run before user code). Captures the host functions in a
 * closure, deletes them from the global object and exposes only `__trellis_start` (also deleted by
 * the entry module before user code runs).
 */
const BOOTSTRAP = String.raw`
(() => {
  const host = globalThis.__trellis_host;
  const log = globalThis.__trellis_log;
  const settle = globalThis.__trellis_settle;
  const caps = JSON.parse(globalThis.__trellis_caps);
  const inputJson = globalThis.__trellis_input;
  delete globalThis.__trellis_host; delete globalThis.__trellis_log; delete globalThis.__trellis_settle;
  delete globalThis.__trellis_caps; delete globalThis.__trellis_input;
  const stringify = JSON.stringify, parse = JSON.parse, freeze = Object.freeze;
  // Binary buffers bypass QuickJS's memory accounting in this build and leak on runtime free;
  // automation code exchanges JSON, so they are not offered.
  for (const n of ['ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Atomics', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray',
    'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array',
    'BigUint64Array', 'WeakRef', 'FinalizationRegistry']) delete globalThis[n];
  const fmt = (v) => {
    if (typeof v === 'string') return v;
    if (v instanceof Error) return (v.stack ? v.name + ': ' + v.message + '\n' + v.stack : v.name + ': ' + v.message);
    try { const s = stringify(v); return s === undefined ? String(v) : s; } catch (e) { return String(v); }
  };
  const logger = (method) => (...args) => { log(method, args.map(fmt).join(' ')); };
  globalThis.console = freeze({ log: logger('log'), info: logger('info'), debug: logger('debug'), warn: logger('warn'), error: logger('error') });
  const call = async (op, args) => parse(await host(op, stringify(args)));
  const ctx = {};
  if (caps.fetch) {
    ctx.fetch = async (url, init) => {
      if (url && typeof url === 'object' && typeof url.href === 'string') url = url.href;
      const i = init || {};
      let headers = i.headers;
      if (headers && typeof headers === 'object' && !Array.isArray(headers)) headers = Object.entries(headers).map(([k, v]) => [String(k), String(v)]);
      let body = i.body;
      if (body !== undefined && body !== null && typeof body !== 'string') body = stringify(body);
      const r = await call('fetch', [String(url), { method: i.method ? String(i.method) : undefined, headers, body: body == null ? undefined : body }]);
      const h = new Map(r.headers);
      return freeze({
        ok: r.status >= 200 && r.status < 300, status: r.status, statusText: r.statusText, url: r.url,
        headers: freeze({ get: (n) => (h.has(String(n).toLowerCase()) ? h.get(String(n).toLowerCase()) : null), has: (n) => h.has(String(n).toLowerCase()), entries: () => [...h.entries()] }),
        text: async () => r.body,
        json: async () => parse(r.body),
      });
    };
  }
  const resources = {};
  for (const [label, methods] of Object.entries(caps.resources)) {
    const obj = {};
    for (const m of methods) obj[m] = (...args) => call('resource', [label, m, args]);
    resources[label] = freeze(obj);
  }
  ctx.resources = freeze(resources);
  freeze(ctx);
  globalThis.__trellis_start = (main) => {
    delete globalThis.__trellis_start;
    if (typeof main !== 'function') throw new TypeError('The module must export a default function (input, ctx)');
    let input;
    try { input = parse(inputJson); } catch (e) { input = null; }
    Promise.resolve().then(() => main(input, ctx)).then(
      (out) => { let s; try { s = stringify(out === undefined ? null : out); } catch (e) { settle(false, fmt(e), 'TypeError', ''); return; } settle(true, s === undefined ? 'null' : s, '', ''); },
      (err) => {
        if (err === null) { settle(false, 'null', '__trellis_null__', ''); return; }
        const isErr = err && typeof err === 'object' && 'message' in err;
        settle(false, isErr ? String(err.message) : fmt(err), isErr && err.name ? String(err.name) : 'Error', isErr && err.stack ? String(err.stack) : '');
      },
    );
  };
})();
`;

const ENTRY = `import main from '${USER_MODULE}';\nglobalThis.__trellis_start(main);\n`;

class RunState {
  killed: { code: SandboxErrorCode; message: string } | null = null;
  settled: { ok: true; json: string } | { ok: false; message: string; name: string; stack: string } | null = null;
  cpuUsed = 0;
  segmentStart = 0;
  inFlight = 0;
  wake: (() => void) | null = null;
  done = false;
  signalWake(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}

/**
 * CPU time of this thread in ms (what the CPU limit counts), so a busy machine does not fail
 * scripts that merely waited for a core; wall time where the platform lacks it.
 */
const cpuNow: () => number =
  typeof process.threadCpuUsage === 'function'
    ? () => {
        const u = process.threadCpuUsage();
        return (u.user + u.system) / 1000;
      }
    : () => performance.now();

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** How long a worker may be unresponsive past the CPU limit (or past the wall deadline). */
const HANG_GRACE_MS = 500;
const PING_MS = 100;

export function createSandbox(opts: SandboxOptions = {}): Sandbox {
  const base: SandboxLimits = { ...DEFAULT_LIMITS, ...(opts.limits ?? {}) };
  if (opts.mode === 'inline') {
    return {
      limits: base,
      async run(runOpts) {
        const limits = { ...base, ...(runOpts.limits ?? {}) };
        const prepared = prepareRun(opts, runOpts);
        if ('ok' in prepared) return prepared;
        const hostCall = makeHostCall(opts, runOpts, limits, Date.now() + limits.timeoutMs);
        return runEngine({ code: runOpts.code, ...prepared, limits, hostCall, onLog: runOpts.onLog, signal: runOpts.signal });
      },
      async warm() {
        await loadQuickJS();
      },
      async close() {},
    };
  }
  const pool = new WorkerPool(opts.maxWorkers ?? 8);
  return {
    limits: base,
    run: (runOpts) => runInWorker(pool, opts, { ...base, ...(runOpts.limits ?? {}) }, runOpts),
    async warm() {
      pool.release(await pool.acquire());
    },
    close: () => pool.close(),
  };
}

async function runInWorker(pool: WorkerPool, sandboxOpts: SandboxOptions, limits: SandboxLimits, opts: RunOptions): Promise<RunResult> {
  const prepared = prepareRun(sandboxOpts, opts);
  if ('ok' in prepared) return prepared;
  let slot: PoolSlot;
  try {
    // Waiting for a worker may take at most one more timeout (the run's deadline starts when it gets one).
    slot = await pool.acquire(limits.timeoutMs);
  } catch (err) {
    const busy = err instanceof PoolBusyError;
    return { ok: false, output: null, error: { code: busy ? 'timeout' : 'internal', name: 'SandboxError', message: (err as Error).message }, logs: [], durationMs: 0, cpuMs: 0 };
  }
  const started = performance.now();
  const wallDeadline = Date.now() + limits.timeoutMs;
  const hostCall = makeHostCall(sandboxOpts, opts, limits, wallDeadline);
  const abort = new AbortController();
  const logs: LogEvent[] = [];
  const { worker } = slot;
  return new Promise<RunResult>((resolve) => {
    let settled = false;
    const post = (m: unknown) => {
      if (!settled) worker.postMessage(m);
    };
    const failed = (code: SandboxErrorCode, message: string): RunResult => ({
      ok: false,
      output: null,
      error: { code, name: 'SandboxError', message },
      logs,
      durationMs: Math.round(performance.now() - started),
      cpuMs: 0,
    });
    const finish = (r: RunResult, kill: boolean) => {
      if (settled) return;
      settled = true;
      clearInterval(watchdog);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      opts.signal?.removeEventListener('abort', onAbort);
      abort.abort();
      if (kill) pool.kill(slot);
      else pool.release(slot);
      resolve(r);
    };
    const onMessage = (m: { t: string; [k: string]: unknown }) => {
      slot.lastSeen = Date.now();
      if (m.t === 'host') {
        const callId = m.callId as number;
        hostCall(m.op as string, m.argsJson as string, abort.signal).then(
          (json) => post({ t: 'host-result', callId, ok: true, json }),
          (err: unknown) => post({ t: 'host-result', callId, ok: false, name: (err as Error)?.name && (err as Error).name !== 'Error' ? String((err as Error).name) : 'Error', message: String((err as Error)?.message ?? err) }),
        );
      } else if (m.t === 'log') {
        logs.push(m.event as LogEvent);
        opts.onLog?.(m.event as LogEvent);
      } else if (m.t === 'done') {
        // A worker whose heap grew to a memory limit is replaced, so that memory goes back to the OS.
        finish(m.result as RunResult, m.fatal === true || (m.result as RunResult).error?.code === 'memory_limit');
      }
    };
    const onError = (err: Error) => finish(failed('internal', `The sandbox worker failed: ${err.message}`), true);
    const onExit = () => finish(failed('internal', 'The sandbox worker stopped unexpectedly.'), true);
    const onAbort = () => post({ t: 'abort' });
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    slot.lastSeen = Date.now();
    post({ t: 'run', code: opts.code, ...prepared, limits });
    if (opts.signal?.aborted) onAbort();
    const watchdog = setInterval(() => {
      const now = Date.now();
      if (now - slot.lastSeen > limits.cpuMs + HANG_GRACE_MS) {
        finish(failed('cpu_limit', `The run was stuck in one long operation past its ${limits.cpuMs} ms CPU limit; its sandbox worker was stopped.`), true);
      } else if (now > wallDeadline + HANG_GRACE_MS) {
        finish(failed('timeout', `The run exceeded its ${limits.timeoutMs} ms time limit; its sandbox worker was stopped.`), true);
      } else {
        post({ t: 'ping' });
      }
    }, PING_MS);
  });
}

/** What the engine needs: everything JSON, host calls through one function. */
export interface EngineArgs {
  code: string;
  inputJson: string;
  /** `{fetch: boolean, resources: {label: methodNames[]}}` */
  capsJson: string;
  limits: SandboxLimits;
  hostCall: (op: string, argsJson: string, signal: AbortSignal) => Promise<string>;
  onLog?: (event: LogEvent) => void;
  signal?: AbortSignal;
}

export interface PreparedRun {
  inputJson: string;
  capsJson: string;
}

/** Serializes the input and the granted capability names; a bad input is a failed run. */
export function prepareRun(sandboxOpts: SandboxOptions, opts: RunOptions): PreparedRun | RunResult {
  let inputJson: string;
  try {
    inputJson = JSON.stringify(opts.input === undefined ? null : opts.input) ?? 'null';
  } catch (err) {
    return { ok: false, output: null, error: { code: 'invalid_input', name: 'TypeError', message: `The input is not JSON-serializable: ${(err as Error).message}` }, logs: [], durationMs: 0, cpuMs: 0 };
  }
  const caps = opts.capabilities ?? {};
  if (caps.fetch && !sandboxOpts.fetch) throw new Error('createSandbox was given no fetch, so ctx.fetch cannot be granted');
  const resources = caps.resources ?? {};
  const capsJson = JSON.stringify({ fetch: !!caps.fetch, resources: Object.fromEntries(Object.entries(resources).map(([l, m]) => [l, Object.keys(m)])) });
  return { inputJson, capsJson };
}

/** The host side of `ctx.fetch` and `ctx.resources` for one run (always on the main thread). */
export function makeHostCall(sandboxOpts: SandboxOptions, opts: RunOptions, limits: SandboxLimits, wallDeadline: number) {
  const caps = opts.capabilities ?? {};
  const resources = caps.resources ?? {};
  return async (op: string, argsJson: string, signal: AbortSignal): Promise<string> => {
    const args = JSON.parse(argsJson) as unknown[];
    if (op === 'fetch' && caps.fetch && sandboxOpts.fetch) {
      const [url, init] = args as [string, { method?: string; headers?: [string, string][]; body?: string }];
      if (caps.fetchHosts && !hostAllowed(url, caps.fetchHosts)) throw new Error(`ctx.fetch: the host of '${url}' is not among the hosts granted to this script.`);
      const res = await sandboxOpts.fetch(url, {
        method: init?.method,
        headers: init?.headers,
        body: init?.body,
        signal,
        timeoutMs: Math.max(1, wallDeadline - Date.now()),
        maxBytes: limits.maxHostResultBytes,
      });
      const body = await res.text();
      if (byteLength(body) > limits.maxHostResultBytes) throw new Error(`The response body exceeds ${limits.maxHostResultBytes} bytes.`);
      return JSON.stringify({ status: res.status, statusText: res.statusText, url: res.url, headers: [...res.headers.entries()], body });
    }
    if (op === 'resource') {
      const [label, method, margs] = args as [string, string, unknown[]];
      const fn = Object.hasOwn(resources, label) && Object.hasOwn(resources[label], method) ? resources[label][method] : undefined;
      if (!fn) throw new Error(`Resource '${label}' has no method '${method}'.`);
      const out = await fn(Array.isArray(margs) ? margs : [], signal);
      const json = JSON.stringify(out === undefined ? null : out) ?? 'null';
      if (byteLength(json) > limits.maxHostResultBytes) throw new Error(`The resource result exceeds ${limits.maxHostResultBytes} bytes.`);
      return json;
    }
    throw new Error(`Capability '${op}' was not granted.`);
  };
}

/** Runs one script in this thread (the worker pool calls this inside each worker). */
export async function runEngine(args: EngineArgs): Promise<RunResult> {
  const { limits } = args;
  const opts = { code: args.code, onLog: args.onLog, signal: args.signal };
  const { inputJson, capsJson } = args;
  const started = performance.now();
  const wallDeadline = Date.now() + limits.timeoutMs;
  const logs: LogEvent[] = [];
  let logBytes = 0;
  const state = new RunState();
  let poisoned = false;
  /** Interrupted mid-execution (possibly mid-allocation): the runtime may not free cleanly. */
  let interrupted = false;
  const fail = (error: SandboxError): RunResult => {
    if (error.code === 'memory_limit') poisoned = true;
    return { ok: false, output: null, error, logs, durationMs: Math.round(performance.now() - started), cpuMs: Math.round(state.cpuUsed) };
  };

  const qjs = await loadQuickJS();
  const abort = new AbortController();
  const onAbort = () => {
    state.killed ??= { code: 'timeout', message: 'The run was cancelled.' };
    state.signalWake();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();
  const handles: QuickJSHandle[] = [];
  const deferreds = new Set<QuickJSDeferredPromise>();
  let rt: QuickJSRuntime | undefined;
  let vm: QuickJSContext | undefined;
  let timer: NodeJS.Timeout | undefined;

  const killFor = (): SandboxError | null => {
    if (state.killed) return { code: state.killed.code, name: 'SandboxError', message: state.killed.message };
    return null;
  };
  const checkLimits = (): boolean => {
    if (state.killed) return true;
    const now = Date.now();
    if (now > wallDeadline) {
      state.killed = { code: 'timeout', message: `The run exceeded its ${limits.timeoutMs} ms time limit.` };
      return true;
    }
    if (state.cpuUsed + (cpuNow() - state.segmentStart) > limits.cpuMs) {
      state.killed = { code: 'cpu_limit', message: `The run used more than its ${limits.cpuMs} ms CPU limit.` };
      return true;
    }
    return false;
  };

  try {
    rt = qjs.newRuntime();
    rt.setMemoryLimit(limits.memoryBytes);
    rt.setMaxStackSize(Math.min(limits.stackBytes, MAX_STACK_BYTES));
    rt.setInterruptHandler(() => {
      const stop = checkLimits();
      if (stop) interrupted = true;
      return stop;
    });
    rt.setModuleLoader((name) => {
      if (name === USER_MODULE) return opts.code;
      return { error: new Error(`Module '${name}' is not available in the sandbox (imports are not allowed).`) };
    });
    const ctx = (vm = rt.newContext());

    /** Runs guest code synchronously, counting its CPU time. */
    const segment = <T>(fn: () => T): T => {
      state.segmentStart = cpuNow();
      try {
        return fn();
      } finally {
        state.cpuUsed += cpuNow() - state.segmentStart;
      }
    };
    const own = (h: QuickJSHandle) => {
      handles.push(h);
      return h;
    };

    // --- host functions -----------------------------------------------------------------
    const logFn = own(
      ctx.newFunction('log', (methodH, msgH) => {
        if (state.done || state.killed) return;
        const method = ctx.getString(methodH) as LogEvent['method'];
        let message = ctx.getString(msgH);
        if (message.length > MAX_LOG_MESSAGE) message = `${message.slice(0, MAX_LOG_MESSAGE)}… [truncated]`;
        logBytes += byteLength(message);
        if (logs.length >= limits.maxLogEvents || logBytes > limits.maxLogBytes) {
          state.killed = {
            code: 'log_limit',
            message: `The run exceeded its log limit (${limits.maxLogEvents} messages, ${limits.maxLogBytes} bytes).`,
          };
          return;
        }
        const event: LogEvent = { level: method === 'warn' || method === 'error' ? 'error' : 'info', method: ['log', 'info', 'debug', 'warn', 'error'].includes(method) ? method : 'log', message, at: new Date().toISOString() };
        logs.push(event);
        opts.onLog?.(event);
      }),
    );
    const settleFn = own(
      ctx.newFunction('settle', (okH, valueH, nameH, stackH) => {
        if (state.settled) return;
        const ok = ctx.dump(okH) === true;
        if (ok) state.settled = { ok: true, json: ctx.getString(valueH) };
        else state.settled = { ok: false, message: ctx.getString(valueH), name: ctx.getString(nameH) || 'Error', stack: ctx.getString(stackH) };
      }),
    );
    const hostFn = own(
      ctx.newFunction('host', (opH, argsH) => {
        const op = ctx.getString(opH);
        const argsJson = ctx.getString(argsH);
        const deferred = ctx.newPromise();
        deferreds.add(deferred);
        if (state.inFlight >= limits.maxConcurrentHostCalls) {
          const e = ctx.newError(`Too many host calls in flight (limit ${limits.maxConcurrentHostCalls}).`);
          deferred.reject(e);
          e.dispose();
          return deferred.handle;
        }
        state.inFlight++;
        void hostCall(op, argsJson)
          .then(
            (json) => {
              if (state.done) return;
              const s = ctx.newString(json);
              deferred.resolve(s);
              s.dispose();
            },
            (err: unknown) => {
              if (state.done) return;
              const e = ctx.newError({ name: (err as Error)?.name && (err as Error).name !== 'Error' ? String((err as Error).name) : 'Error', message: String((err as Error)?.message ?? err) });
              deferred.reject(e);
              e.dispose();
            },
          )
          .finally(() => {
            state.inFlight--;
            state.signalWake();
          });
        return deferred.handle;
      }),
    );

    const hostCall = (op: string, argsJson: string) => args.hostCall(op, argsJson, abort.signal);

    const setGlobal = (name: string, h: QuickJSHandle) => ctx.setProp(ctx.global, name, h);
    setGlobal('__trellis_host', hostFn);
    setGlobal('__trellis_log', logFn);
    setGlobal('__trellis_settle', settleFn);
    const capsH = own(ctx.newString(capsJson));
    const inputH = own(ctx.newString(inputJson));
    setGlobal('__trellis_caps', capsH);
    setGlobal('__trellis_input', inputH);

    const boot = segment(() => ctx.evalCode(BOOTSTRAP, 'trellis:bootstrap.js'));
    if (boot.error) {
      const e = ctx.dump(boot.error);
      boot.error.dispose();
      throw new Error(`sandbox bootstrap failed: ${JSON.stringify(e)}`);
    }
    boot.value.dispose();

    // --- the user module ----------------------------------------------------------------
    const evalRes = segment(() => ctx.evalCode(ENTRY, 'trellis:entry.mjs', { type: 'module' }));
    if (evalRes.error) {
      const err = guestError(ctx, evalRes.error);
      evalRes.error.dispose();
      return fail(killFor() ?? classify(err, true));
    }
    const entry = own(evalRes.value);

    const runJobs = () => {
      const r = segment(() => rt!.executePendingJobs());
      if (r.error) {
        const err = guestError(ctx, r.error);
        r.error.dispose();
        return err;
      }
      return null;
    };

    timer = setTimeout(() => {
      state.killed ??= { code: 'timeout', message: `The run exceeded its ${limits.timeoutMs} ms time limit.` };
      state.signalWake();
    }, Math.max(0, wallDeadline - Date.now()));

    for (;;) {
      const jobErr = runJobs();
      const k = killFor();
      if (k) return fail(k);
      if (jobErr && !state.settled) return fail(classify(jobErr, false));
      // Module evaluation (imports, top-level code) failed?
      if (!state.settled) {
        const ps = ctx.getPromiseState(entry);
        if (ps.type === 'rejected') {
          const err = guestError(ctx, ps.error);
          ps.error.dispose();
          return fail(classify(err, true));
        }
        if (ps.type === 'fulfilled' && !ps.notAPromise) ps.value.dispose();
      }
      if (state.settled) {
        const s = state.settled;
        if (!s.ok) return fail(classify({ name: s.name, message: s.message, stack: s.stack }, false));
        if (byteLength(s.json) > limits.maxOutputBytes) return fail({ code: 'output_limit', name: 'SandboxError', message: `The output exceeds ${limits.maxOutputBytes} bytes.` });
        return { ok: true, output: JSON.parse(s.json), error: null, logs, durationMs: Math.round(performance.now() - started), cpuMs: Math.round(state.cpuUsed) };
      }
      if (state.inFlight === 0 && !rt.hasPendingJob()) {
        return fail({ code: 'never_settled', name: 'SandboxError', message: 'The function returned a promise that can never settle (nothing is left to wait for).' });
      }
      if (rt.hasPendingJob()) continue;
      await new Promise<void>((resolve) => {
        state.wake = resolve;
      });
    }
  } finally {
    state.done = true;
    if (timer) clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    abort.abort();
    try {
      for (const d of deferreds) if (d.alive) d.dispose();
      for (const h of handles) if (h.alive) h.dispose();
      if (poisoned || interrupted) {
        retireModule(qjs);
      } else {
        vm?.dispose();
        rt?.dispose();
      }
    } catch {
      retireModule(qjs);
    }
  }
}

/** Whether the URL's host matches one of the patterns (`*`, `host`, `host:port`, `*.domain`). */
export function hostAllowed(url: string, patterns: string[]): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  const host = u.hostname.toLowerCase();
  return patterns.some((raw) => {
    const p = raw.trim().toLowerCase();
    if (p === '*') return true;
    if (p.startsWith('*.')) return host.endsWith(p.slice(1)) && host.length > p.length - 1;
    if (p.includes(':') && !p.startsWith('[')) return `${host}:${u.port || (u.protocol === 'https:' ? '443' : '80')}` === p;
    return host === p;
  });
}

interface GuestErr {
  name: string;
  message: string;
  stack: string;
}

function guestError(ctx: QuickJSContext, h: QuickJSHandle): GuestErr {
  const d = ctx.dump(h) as unknown;
  if (d && typeof d === 'object') {
    const o = d as Record<string, unknown>;
    return { name: String(o.name ?? 'Error'), message: String(o.message ?? JSON.stringify(d)), stack: typeof o.stack === 'string' ? o.stack : '' };
  }
  return { name: 'Error', message: d === null || d === undefined ? 'null was thrown' : String(d), stack: '' };
}

function classify(err: GuestErr, moduleLoad: boolean): SandboxError {
  // QuickJS throws null when it cannot even allocate the error object.
  if (err.name === '__trellis_null__' || (err.name === 'Error' && err.message === 'null was thrown')) {
    return { code: 'memory_limit', name: 'InternalError', message: 'The run exceeded its memory limit (out of memory; null was thrown).' };
  }
  const base = { name: err.name, message: err.message, ...(err.stack ? { stack: err.stack.slice(0, 2000) } : {}) };
  if (/out of memory|string too long|invalid array length/i.test(err.message)) return { ...base, code: 'memory_limit', message: `The run exceeded its memory limit (${err.message}).` };
  if (/stack overflow|maximum call stack/i.test(err.message)) return { ...base, code: 'stack_overflow', message: `The run exceeded its stack limit: ${err.message}` };
  if (moduleLoad) return { ...base, code: 'invalid_module' };
  return { ...base, code: 'script_error' };
}
