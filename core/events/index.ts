/**
 * The in-process event bus. Publishers call `publish` after their transaction commits; handlers
 * run asynchronously, one failing handler never affects the publisher or the others (failures are
 * logged). Durable follow-up work (automation runs, deliveries) belongs on the job queue, which a
 * handler enqueues.
 */
import type { FastifyBaseLogger } from 'fastify';

export interface EventMeta {
  topic: string;
  workspaceId: string;
  occurredAt: string;
}

export type EventHandler<T = unknown> = (payload: T, meta: EventMeta) => Promise<void> | void;

export interface EventBus {
  publish<T>(topic: string, workspaceId: string, payload: T): void;
  subscribe<T>(topic: string, handler: EventHandler<T>): () => void;
  /** Resolves when every handler started so far has settled (used at shutdown and by tests). */
  idle(): Promise<void>;
}

export function createEventBus(logger: FastifyBaseLogger): EventBus {
  const handlers = new Map<string, Set<EventHandler>>();
  const inflight = new Set<Promise<void>>();
  return {
    publish(topic, workspaceId, payload) {
      const meta: EventMeta = { topic, workspaceId, occurredAt: new Date().toISOString() };
      for (const h of handlers.get(topic) ?? []) {
        const p = (async () => h(payload, meta))()
          .catch((err: unknown) => logger.error({ err, topic }, 'event handler failed'))
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
    },
    subscribe(topic, handler) {
      let set = handlers.get(topic);
      if (!set) handlers.set(topic, (set = new Set()));
      set.add(handler as EventHandler);
      return () => set.delete(handler as EventHandler);
    },
    async idle() {
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    },
  };
}
