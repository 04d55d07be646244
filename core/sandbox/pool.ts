/**
 * A pool of sandbox worker threads, one run per worker at a time. Workers start on demand up to
 * `maxWorkers` and stay (unref'd) for later runs; a worker that misbehaves is terminated and
 * replaced on the next demand. Terminating a worker is the one way to stop guest code stuck in a
 * single long builtin call (QuickJS checks its interrupt handler only between bytecodes, every
 * few thousand of them), so no run can block the server's event loop.
 */
import { Worker } from 'node:worker_threads';

export class PoolBusyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PoolBusyError';
  }
}

export interface PoolSlot {
  worker: Worker;
  dead: boolean;
  lastSeen: number;
}

export class WorkerPool {
  readonly #max: number;
  readonly #slots = new Set<PoolSlot>();
  readonly #idle: PoolSlot[] = [];
  readonly #waiters: { resolve: (s: PoolSlot) => void; reject: (e: Error) => void }[] = [];
  #starting = 0;
  #closed = false;

  constructor(maxWorkers: number) {
    this.#max = Math.max(1, maxWorkers);
  }

  get size(): number {
    return this.#slots.size;
  }

  /** A free worker; rejects with `PoolBusyError` when none frees up within `waitMs`. */
  acquire(waitMs = Infinity): Promise<PoolSlot> {
    if (this.#closed) return Promise.reject(new Error('The sandbox is closed.'));
    for (;;) {
      const s = this.#idle.pop();
      if (!s) break;
      if (!s.dead) return Promise.resolve(s);
    }
    const p = new Promise<PoolSlot>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = {
        resolve: (s: PoolSlot) => {
          clearTimeout(timer);
          resolve(s);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.#waiters.push(waiter);
      if (Number.isFinite(waitMs)) {
        const expire = () => {
          const i = this.#waiters.indexOf(waiter);
          if (i < 0) return;
          // A worker starting up for this waiter is not "busy": starting takes what it takes.
          if (i < this.#starting) {
            timer = setTimeout(expire, 100);
            return;
          }
          this.#waiters.splice(i, 1);
          reject(new PoolBusyError(`No sandbox worker became free within ${waitMs} ms (all ${this.#max} are busy).`));
        };
        timer = setTimeout(expire, waitMs);
      }
    });
    this.#grow();
    return p;
  }

  release(s: PoolSlot): void {
    if (s.dead || this.#closed) return this.#grow();
    const w = this.#waiters.shift();
    if (w) w.resolve(s);
    else this.#idle.push(s);
  }

  kill(s: PoolSlot): void {
    this.#remove(s);
    void s.worker.terminate().catch(() => undefined);
    this.#grow();
  }

  #remove(s: PoolSlot): void {
    s.dead = true;
    this.#slots.delete(s);
    const i = this.#idle.indexOf(s);
    if (i >= 0) this.#idle.splice(i, 1);
  }

  /** Starts workers while runs wait and the pool has room. */
  #grow(): void {
    while (!this.#closed && this.#waiters.length > this.#starting && this.#slots.size + this.#starting < this.#max) {
      this.#starting++;
      this.#spawn().then(
        (s) => {
          this.#starting--;
          this.release(s);
        },
        (err: Error) => {
          this.#starting--;
          this.#waiters.shift()?.reject(err);
        },
      );
    }
  }

  #spawn(): Promise<PoolSlot> {
    return new Promise<PoolSlot>((resolve, reject) => {
      const worker = new Worker(new URL('./worker.ts', import.meta.url));
      worker.unref();
      const slot: PoolSlot = { worker, dead: false, lastSeen: Date.now() };
      const onReady = (m: { t: string }) => {
        if (m.t !== 'ready') return;
        worker.off('message', onReady);
        if (this.#closed) {
          void worker.terminate();
          reject(new Error('The sandbox is closed.'));
          return;
        }
        this.#slots.add(slot);
        resolve(slot);
      };
      worker.on('message', onReady);
      worker.once('error', (err) => {
        this.#remove(slot);
        reject(err);
      });
      worker.once('exit', () => {
        this.#remove(slot);
        reject(new Error('The sandbox worker exited while starting.'));
      });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.reject(new Error('The sandbox is closed.'));
    const all = [...this.#slots];
    this.#slots.clear();
    this.#idle.length = 0;
    await Promise.all(all.map((s) => s.worker.terminate().catch(() => undefined)));
  }
}
