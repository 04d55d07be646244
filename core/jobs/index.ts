/**
 * The job queue (pg-boss on the same PostgreSQL). Started on first use, so a server whose loaded
 * plugins use no jobs starts none. Several nodes on one database share queues: a job runs once,
 * a cron schedule fires once per tick, and a killed node's active jobs are retried after they
 * expire.
 */
import type { FastifyBaseLogger } from 'fastify';
import { PgBoss } from 'pg-boss';

export type JobHandler<T> = (data: T, job: { id: string; retryCount: number }) => Promise<unknown>;

export interface QueueOptions {
  retryLimit?: number;
  retryDelay?: number;
  retryBackoff?: boolean;
  expireInSeconds?: number;
}

export interface SendOptions {
  startAfter?: number | Date;
  singletonKey?: string;
  retryLimit?: number;
  retryDelay?: number;
  retryBackoff?: boolean;
}

export interface Jobs {
  /** Creates the queue if missing. */
  queue(name: string, options?: QueueOptions): Promise<void>;
  send<T extends object>(name: string, data: T, options?: SendOptions): Promise<string | null>;
  /** `concurrency`: jobs of this queue this node runs at once (pg-boss localConcurrency). */
  work<T>(name: string, handler: JobHandler<T>, options?: { batchSize?: number; pollingIntervalSeconds?: number; concurrency?: number }): Promise<void>;
  /** A cron schedule (minute granularity) keyed by `key`; every node may call this, it fires once. */
  schedule(name: string, cron: string, data: object, options?: { tz?: string; key?: string }): Promise<void>;
  unschedule(name: string, key?: string): Promise<void>;
  stop(): Promise<void>;
}

export function createJobs(connectionString: string, logger: FastifyBaseLogger): Jobs {
  let starting: Promise<PgBoss> | undefined;
  const queues = new Set<string>();
  const boss = () =>
    (starting ??= (async () => {
      const b = new PgBoss({ connectionString, schema: 'pgboss', max: 4 });
      b.on('error', (err: unknown) => logger.error({ err }, 'job queue error'));
      await b.start();
      return b;
    })());
  const queue = async (name: string, options: QueueOptions = {}) => {
    if (queues.has(name)) return boss();
    const b = await boss();
    if (!(await b.getQueue(name))) {
      await b.createQueue(name, options).catch((err: Error) => {
        if (!/already exists/i.test(err.message)) throw err;
      });
    }
    queues.add(name);
    return b;
  };
  return {
    queue: async (name, options) => void (await queue(name, options)),
    async send(name, data, options = {}) {
      return (await queue(name)).send(name, data, options as Record<string, unknown>);
    },
    async work(name, handler, options = {}) {
      const b = await queue(name);
      await b.work(name, { batchSize: options.batchSize ?? 1, pollingIntervalSeconds: options.pollingIntervalSeconds ?? 0.5, localConcurrency: options.concurrency ?? 1 }, async (jobs) => {
        for (const job of jobs) await handler(job.data as never, { id: job.id, retryCount: (job as { retryCount?: number }).retryCount ?? 0 });
      });
    },
    async schedule(name, cron, data, options = {}) {
      await (await queue(name)).schedule(name, cron, data, { tz: options.tz, key: options.key });
    },
    async unschedule(name, key) {
      await (await boss()).unschedule(name, key);
    },
    async stop() {
      if (!starting) return;
      const b = await starting.catch(() => undefined);
      starting = undefined;
      queues.clear();
      await b?.stop({ graceful: true, timeout: 10_000, close: true });
    },
  };
}
