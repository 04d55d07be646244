/**
 * Database: one MikroORM instance (entities of core and of every loaded plugin), a `pg` pool for
 * hand-written SQL, plugin-scoped migrations and a LISTEN/NOTIFY channel for
 * cross-node cache invalidation.
 *
 * Migrations are plain SQL (or async functions) declared by each plugin, applied in order inside
 * one transaction each, under an advisory lock so several nodes booting at once apply them once.
 * MikroORM's Migrator assumes one migrations folder per ORM; plugin-scoped lists are simpler.
 */
import { MikroORM, type EntitySchema } from '@mikro-orm/postgresql';
import pg from 'pg';

export interface Migration {
  /** Unique within the plugin, applied in array order (e.g. `0001_init`). */
  name: string;
  up: string | ((client: pg.PoolClient) => Promise<void>);
}

export interface PluginMigrations {
  plugin: string;
  migrations: Migration[];
}

export interface Database {
  readonly orm: MikroORM;
  readonly pool: pg.Pool;
  /** Runs one statement on the pool. Arrays are passed as JSON, never expanded. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs `fn` in a transaction on one pooled client; rolls back on throw. */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  migrate(sets: PluginMigrations[]): Promise<string[]>;
  /** Publishes a cache-invalidation message to every node (including this one). */
  notify(channel: string, payload: string): Promise<void>;
  /** Subscribes to a channel; returns an unsubscribe function. */
  listen(channel: string, fn: (payload: string) => void): Promise<() => void>;
  /** Whether the migrations this process expects are all applied. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

const LOCK_KEY = 0x7472_6c73; // "trls"

export async function openDatabase(opts: {
  url: string;
  entities: EntitySchema[];
  poolSize: number;
  log?: (msg: string) => void;
}): Promise<Database> {
  const orm = await MikroORM.init({
    clientUrl: opts.url,
    entities: opts.entities,
    pool: { min: 0, max: Math.max(2, Math.ceil(opts.poolSize / 2)), idleTimeoutMillis: 30_000 },
    allowGlobalContext: false,
    debug: false,
    ensureDatabase: false,
    discovery: { warnWhenNoEntities: false },
  });
  // Hand-written SQL gets its own pool with pg's default type parsing (timestamps as Date);
  // MikroORM's pool parses them as strings for its own hydration.
  const pool = new pg.Pool({ connectionString: opts.url, max: opts.poolSize, idleTimeoutMillis: 30_000 });
  pool.on('error', (err) => opts.log?.(`idle database connection error: ${err.message}`));
  let expected: PluginMigrations[] = [];
  let listener: pg.Client | undefined;
  const handlers = new Map<string, Set<(payload: string) => void>>();

  const db: Database = {
    orm,
    pool,
    async query<T>(text: string, params: unknown[] = []) {
      const res = await pool.query(text, params as unknown[]);
      return res.rows as T[];
    },
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const out = await fn(client);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    async migrate(sets) {
      expected = sets;
      const applied: string[] = [];
      const client = await pool.connect();
      try {
        await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
        await client.query(`CREATE TABLE IF NOT EXISTS core_migrations (
          plugin text NOT NULL, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (plugin, name))`);
        const done = new Set(
          (await client.query<{ k: string }>(`SELECT plugin || '/' || name AS k FROM core_migrations`)).rows.map((r) => r.k),
        );
        for (const set of sets) {
          for (const m of set.migrations) {
            const key = `${set.plugin}/${m.name}`;
            if (done.has(key)) continue;
            await client.query('BEGIN');
            try {
              if (typeof m.up === 'string') await client.query(m.up);
              else await m.up(client);
              await client.query('INSERT INTO core_migrations (plugin, name) VALUES ($1, $2)', [set.plugin, m.name]);
              await client.query('COMMIT');
            } catch (err) {
              await client.query('ROLLBACK');
              throw new Error(`Migration ${key} failed: ${(err as Error).message}`, { cause: err });
            }
            applied.push(key);
            opts.log?.(`applied migration ${key}`);
          }
        }
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
        client.release();
      }
      return applied;
    },
    async notify(channel, payload) {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async listen(channel, fn) {
      if (!listener) {
        listener = new pg.Client({ connectionString: opts.url });
        listener.on('error', (err) => opts.log?.(`listener connection error: ${err.message}`));
        listener.on('notification', (n) => {
          for (const h of handlers.get(n.channel) ?? []) h(n.payload ?? '');
        });
        await listener.connect();
      }
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await listener.query(`LISTEN "${channel.replace(/"/g, '')}"`);
      }
      set.add(fn);
      return () => set.delete(fn);
    },
    async ready() {
      try {
        const rows = await db.query<{ k: string }>(`SELECT plugin || '/' || name AS k FROM core_migrations`);
        const done = new Set(rows.map((r) => r.k));
        return expected.every((s) => s.migrations.every((m) => done.has(`${s.plugin}/${m.name}`)));
      } catch {
        return false;
      }
    },
    async close() {
      await listener?.end().catch(() => undefined);
      await pool.end().catch(() => undefined);
      await orm.close(true);
    },
  };
  return db;
}

/** The URL of database `name` on the same server as `serverUrl`. */
export function databaseUrl(serverUrl: string, name: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Creates database `name` on the server of `adminUrl` (when `ifMissing`, only if absent) and
 * returns its URL and a function that drops it (used by startup, tests and benchmarks).
 */
export async function createDatabase(adminUrl: string, name: string, opts: { ifMissing?: boolean } = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  await admin(async (c) => {
    if (opts.ifMissing && (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) return;
    await c.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
  });
  return {
    url: databaseUrl(adminUrl, name),
    drop: () => admin(async (c) => void (await c.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '')}" WITH (FORCE)`))),
  };
}
