/**
 * The DuckDB query engine: untrusted SQL runs only in locked-down DuckDB instances.
 *
 * - One sandbox instance per scope (workspace): it holds only that scope's datasets, so no query
 *   can reach another workspace's rows whatever it names. Instances are created with
 *   `enable_external_access=false` (no files, URLs, COPY TO, ATTACH of files, INSTALL/LOAD),
 *   `lock_configuration=true` (no SET/PRAGMA changes), no extension autoload, no temp directory
 *   (no spilling), and memory and thread limits. At most `maxSandboxes` live at once (LRU).
 * - A statement must be exactly one statement (`extractStatements`), serialize as a SELECT
 *   (`json_serialize_sql`), name only registered tables and allow-listed table functions, and
 *   prepare as a SELECT statement type; it is then streamed with a row cap and interrupted at the
 *   deadline (`connection.interrupt()`).
 * - Datasets are loaded into a physical table per (scope, key) with views under each of their
 *   names; a copy is reused while its version is unchanged, refreshed incrementally by key when
 *   the host offers `changesSince`, else reloaded.
 * - File sources get a fresh instance per run: files are loaded as tables while external access
 *   is still on, then the instance is locked down before the user's SQL is even parsed.
 */
import {
  DuckDBConnection,
  DuckDBDataChunkWriter,
  DuckDBInstance,
  StatementType,
  dateValue,
  listValue,
  timestampValue,
  type DuckDBType,
  type DuckDBValue,
} from '@duckdb/node-api';
import {
  InvalidSql,
  QueryFailed,
  QueryResourcesExceeded,
  QueryTimeout,
  SqlNotAllowed,
  UnknownTable,
  type Dataset,
  type DatasetColumn,
  type FileSource,
  type QueryEngine,
  type QueryRunRequest,
  type QueryRunResult,
  type SqlAnalysis,
} from '../../../plugins/query/api.ts';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../../core/errors/index.ts';
import { check, collect } from './analyze.ts';

/** The `error_type` json_serialize_sql reports for a statement it cannot serialise (anything but SELECT). */
const SERIALIZE_UNSUPPORTED = 'not implemented'; // DuckDB's own error type string, not a stub

export interface DuckDbEngineOptions {
  name: string;
  memoryLimitMb: number;
  threads: number;
  maxSandboxes: number;
  /**
   * A private directory for bulk loads: each sandbox may read only its own subdirectory
   * (`allowed_directories`), where the host stages a dataset's CSV for the moment of loading it.
   * Without it, datasets load row by row through the appender.
   */
  stagingDir?: string;
}

const q = (ident: string): string => `"${ident.replace(/"/g, '""')}"`;
const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`;

interface LoadedTable {
  physical: string;
  version: string;
  signature: string;
  names: string[];
}

interface Sandbox {
  instance: DuckDBInstance;
  /** Its private staging directory (readable by this instance only), if any. */
  dir: string | null;
  tables: Map<string, LoadedTable>;
  loading: Map<string, Promise<void>>;
  active: number;
  lastUsed: number;
}

function lockedOptions(o: DuckDbEngineOptions): Record<string, string> {
  return {
    threads: String(o.threads),
    memory_limit: `${o.memoryLimitMb}MB`,
    temp_directory: '',
    enable_external_access: 'false',
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    allow_unsigned_extensions: 'false',
    lock_configuration: 'true',
  };
}

/** Maps a DuckDB error to the API's 400 errors (or rethrows unknown ones). */
export function mapError(err: unknown): Error {
  if (err instanceof AppError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  const first = msg.replace(/^Failed to (extract|prepare) statements?: /i, '').split('\n')[0].slice(0, 500);
  if (/^INTERRUPT Error/i.test(msg)) return new QueryTimeout();
  if (/^Out of Memory Error/i.test(msg) || /could not allocate|memory limit/i.test(msg)) return new QueryResourcesExceeded(`The query needs more memory than allowed: ${first}`);
  if (/^(Failed to extract statements: )?Parser Error/i.test(msg)) return new InvalidSql(first);
  if (/Permission Error/i.test(msg)) return new SqlNotAllowed(`Not allowed: ${first}`);
  if (/^(Binder|Catalog|Conversion|Invalid Input|Constraint|Not implemented|Out of Range|Invalid type|Dependency|Sequence|Math|Syntax)/i.test(msg)) return new QueryFailed(first);
  return new QueryFailed(first);
}

const DAY_MS = 86_400_000;

/** Epoch milliseconds of a Date, an epoch-ms number or a date/time string; null when invalid. */
function epochMs(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.getTime();
  if (typeof v === 'string') {
    const t = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : v);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

/** A dataset value as a DuckDBValue of the column type (null when it does not fit). */
function toInput(v: unknown, type: DatasetColumn['type']): DuckDBValue {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'VARCHAR':
    case 'JSON':
      return typeof v === 'string' ? v : JSON.stringify(v);
    case 'DOUBLE':
      return typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : null;
    case 'BIGINT':
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number') return Number.isFinite(v) ? BigInt(Math.trunc(v)) : null;
      return typeof v === 'string' && /^-?\d{1,19}$/.test(v) ? BigInt(v) : null;
    case 'BOOLEAN':
      return typeof v === 'boolean' ? v : v === 'true' ? true : v === 'false' ? false : null;
    case 'DATE': {
      const ms = epochMs(v);
      return ms === null ? null : dateValue(Math.floor(ms / DAY_MS));
    }
    case 'TIMESTAMP': {
      const ms = epochMs(v);
      return ms === null ? null : timestampValue(BigInt(Math.round(ms * 1000)));
    }
    case 'VARCHAR[]':
      return Array.isArray(v) ? listValue(v.map((x) => (x === null ? null : String(x)))) : null;
  }
}

/** JSON-safe value (see QueryRunResult.rows). */
function jsonValue(v: unknown, typeName: string, bigAsString: boolean): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return bigAsString ? v.toString() : Number(v);
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : typeName === 'DATE' ? v.toISOString().slice(0, 10) : v.toISOString();
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (Array.isArray(v)) return v.map((x) => jsonValue(x, '', true));
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = jsonValue(x, '', true);
    return out;
  }
  return v;
}

const INTEGER_TYPES = /^(BIGINT|HUGEINT|UBIGINT|UHUGEINT|BIGNUM|VARINT)$/;

export class DuckDbEngine implements QueryEngine {
  readonly name: string;
  private readonly opts: DuckDbEngineOptions;
  private readonly sandboxes = new Map<string, Sandbox>();
  private creating = new Map<string, Promise<Sandbox>>();
  private parser: Promise<DuckDBInstance> | undefined;
  private seq = 0;
  private closed = false;

  constructor(opts: DuckDbEngineOptions) {
    this.opts = opts;
    this.name = opts.name;
  }

  private async parserInstance(): Promise<DuckDBInstance> {
    this.parser ??= DuckDBInstance.create(':memory:', { ...lockedOptions(this.opts), memory_limit: '64MB', threads: '1' });
    return this.parser;
  }

  async analyze(sql: string): Promise<SqlAnalysis> {
    try {
      return await this.analyzeUnmapped(sql);
    } catch (err) {
      throw mapError(err);
    }
  }

  private async analyzeUnmapped(sql: string): Promise<SqlAnalysis> {
    const conn = await (await this.parserInstance()).connect();
    try {
      let count: number;
      try {
        count = (await conn.extractStatements(sql)).count;
      } catch (err) {
        throw mapError(err);
      }
      if (count === 0) throw new InvalidSql('The SQL is empty.');
      if (count > 1) throw new SqlNotAllowed(`Exactly one statement is allowed (found ${count}).`);
      const res = await conn.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
      const tree = JSON.parse(String(res.getRows()[0][0])) as { error: boolean; error_type?: string; error_message?: string; statements?: unknown[] };
      if (tree.error) {
        // json_serialize_sql serialises only SELECT statements; any other kind reports this error type.
        if (tree.error_type === SERIALIZE_UNSUPPORTED) throw new SqlNotAllowed('Only one read-only SELECT or WITH statement is allowed.');
        throw new InvalidSql(tree.error_message ?? 'The SQL does not parse.');
      }
      const facts = check(collect(tree.statements));
      let normalizedSql = sql.trim();
      try {
        const r = await conn.runAndReadAll('SELECT json_deserialize_sql(json_serialize_sql($1::VARCHAR))', [sql]);
        normalizedSql = String(r.getRows()[0][0]);
      } catch {
        // keep the trimmed text
      }
      return { normalizedSql, tables: facts.tables, tableFunctions: facts.tableFunctions };
    } finally {
      conn.disconnectSync();
    }
  }

  private async sandbox(scope: string): Promise<Sandbox> {
    const have = this.sandboxes.get(scope);
    if (have) return have;
    const pending = this.creating.get(scope);
    if (pending) return pending;
    const p = (async () => {
      let instance: DuckDBInstance;
      let dir: string | null = null;
      if (this.opts.stagingDir) {
        dir = path.join(this.opts.stagingDir, randomBytes(12).toString('hex'));
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        const { enable_external_access: _e, lock_configuration: _l, ...open } = lockedOptions(this.opts);
        instance = await DuckDBInstance.create(':memory:', open);
        const c = await instance.connect();
        try {
          await c.run(`SET allowed_directories = [${lit(`${dir}/`)}]`);
          await c.run('SET enable_external_access = false');
          await c.run('SET lock_configuration = true');
        } catch (err) {
          instance.closeSync();
          throw err;
        } finally {
          c.disconnectSync();
        }
      } else {
        instance = await DuckDBInstance.create(':memory:', lockedOptions(this.opts));
      }
      const sb: Sandbox = { instance, dir, tables: new Map(), loading: new Map(), active: 0, lastUsed: Date.now() };
      this.sandboxes.set(scope, sb);
      this.evictOld();
      return sb;
    })();
    this.creating.set(scope, p);
    try {
      return await p;
    } finally {
      this.creating.delete(scope);
    }
  }

  private evictOld(): void {
    while (this.sandboxes.size > this.opts.maxSandboxes) {
      const idle = [...this.sandboxes.entries()].filter(([, s]) => s.active === 0 && s.loading.size === 0).sort((a, b) => a[1].lastUsed - b[1].lastUsed)[0];
      if (!idle) return;
      this.sandboxes.delete(idle[0]);
      this.dispose(idle[1]);
    }
  }

  evict(scope: string, key?: string): void {
    const sb = this.sandboxes.get(scope);
    if (!sb) return;
    if (key) sb.tables.delete(key);
    else if (sb.active === 0) {
      this.sandboxes.delete(scope);
      this.dispose(sb);
    }
  }

  private dispose(sb: Sandbox): void {
    sb.instance.closeSync();
    if (sb.dir) rmSync(sb.dir, { recursive: true, force: true });
  }

  /** Bulk load through the sandbox's staging directory: the CSV is written, read once, removed. */
  private async loadCsv(conn: DuckDBConnection, sb: Sandbox, table: string, columns: DatasetColumn[], csv: AsyncIterable<Uint8Array | string>): Promise<void> {
    const file = path.join(sb.dir!, `${table}.csv`);
    try {
      await pipeline(Readable.from(csv), createWriteStream(file, { mode: 0o600 }));
      const casts = columns.map((c, i) => {
        const v = q(`c${i}`);
        switch (c.type) {
          case 'VARCHAR':
            return v;
          case 'TIMESTAMP':
            return `TRY_CAST(TRY_CAST(${v} AS TIMESTAMPTZ) AS TIMESTAMP)`;
          case 'VARCHAR[]':
            return `from_json(${v}, '["VARCHAR"]')`;
          default:
            return `TRY_CAST(${v} AS ${c.type})`;
        }
      });
      await conn.run(
        `INSERT INTO ${q(table)} SELECT ${casts.join(', ')} FROM read_csv(${lit(file)}, header = true, all_varchar = true, allow_quoted_nulls = false, quote = '"', escape = '"', delim = ',', null_padding = false)`,
      );
    } finally {
      rmSync(file, { force: true });
    }
  }

  private async appendRows(conn: DuckDBConnection, table: string, columns: DatasetColumn[], batches: AsyncIterable<unknown[][]>): Promise<void> {
    const appender = await conn.createAppender(table);
    try {
      const writer = DuckDBDataChunkWriter.forAppender(appender);
      const types = columns.map((c) => c.type);
      const n = types.length;
      const out: DuckDBValue[] = new Array(n);
      for await (const batch of batches) {
        for (const row of batch) {
          for (let i = 0; i < n; i++) out[i] = toInput(row[i], types[i]);
          writer.appendRow(out);
        }
      }
      writer.flush();
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  /** Makes `ds` current in the sandbox; returns whether it was already (warm). */
  private async ensure(sb: Sandbox, ds: Dataset): Promise<boolean> {
    const signature = JSON.stringify(ds.columns);
    const names = ds.names.map((n) => n.toLowerCase());
    const current = sb.tables.get(ds.key);
    if (current && current.version === ds.version && current.signature === signature && JSON.stringify(current.names) === JSON.stringify(names)) return true;
    const running = sb.loading.get(ds.key);
    if (running) {
      await running;
      return this.ensure(sb, ds);
    }
    const job = this.load(sb, ds, signature, names).finally(() => sb.loading.delete(ds.key));
    sb.loading.set(ds.key, job);
    await job;
    return false;
  }

  private async load(sb: Sandbox, ds: Dataset, signature: string, names: string[]): Promise<void> {
    const conn = await sb.instance.connect();
    try {
      const current = sb.tables.get(ds.key);
      if (current && current.version === ds.version && current.signature === signature) {
        await this.views(conn, current.physical, names, current.names);
        current.names = names;
        return;
      }
      if (current && current.signature === signature && ds.changesSince && ds.keyColumn) {
        const changes = await ds.changesSince(current.version);
        if (changes) {
          const stage = `stage_${++this.seq}`;
          await conn.run(`CREATE TABLE ${q(stage)} AS SELECT * FROM ${q(current.physical)} LIMIT 0`);
          try {
            await this.appendRows(conn, stage, ds.columns, changes.upserts);
            const key = q(ds.keyColumn);
            await conn.run('BEGIN TRANSACTION');
            try {
              await conn.run(`DELETE FROM ${q(current.physical)} WHERE ${key} IN (SELECT ${key} FROM ${q(stage)})`);
              if (changes.deletedKeys.length) await conn.run(`DELETE FROM ${q(current.physical)} WHERE ${key} IN (SELECT unnest(from_json($1::VARCHAR, '["VARCHAR"]')))`, [JSON.stringify(changes.deletedKeys)]);
              await conn.run(`INSERT INTO ${q(current.physical)} SELECT * FROM ${q(stage)}`);
              await conn.run('COMMIT');
            } catch (err) {
              await conn.run('ROLLBACK').catch(() => undefined);
              throw err;
            }
          } finally {
            await conn.run(`DROP TABLE IF EXISTS ${q(stage)}`).catch(() => undefined);
          }
          await this.views(conn, current.physical, names, current.names);
          sb.tables.set(ds.key, { ...current, version: ds.version, names });
          return;
        }
      }
      const physical = `data_${++this.seq}`;
      await conn.run(`CREATE TABLE ${q(physical)} (${ds.columns.map((c) => `${q(c.name)} ${c.type}`).join(', ')})`);
      try {
        if (ds.csv && sb.dir) await this.loadCsv(conn, sb, physical, ds.columns, ds.csv());
        else await this.appendRows(conn, physical, ds.columns, ds.load());
      } catch (err) {
        await conn.run(`DROP TABLE IF EXISTS ${q(physical)}`).catch(() => undefined);
        throw err;
      }
      await this.views(conn, physical, names, current?.names ?? []);
      sb.tables.set(ds.key, { physical, version: ds.version, signature, names });
      if (current) await conn.run(`DROP TABLE IF EXISTS ${q(current.physical)}`).catch(() => undefined);
    } finally {
      conn.disconnectSync();
    }
  }

  private async views(conn: DuckDBConnection, physical: string, names: string[], previous: string[]): Promise<void> {
    for (const old of previous) if (!names.includes(old)) await conn.run(`DROP VIEW IF EXISTS ${q(old)}`).catch(() => undefined);
    for (const n of names) await conn.run(`CREATE OR REPLACE VIEW ${q(n)} AS SELECT * FROM ${q(physical)}`);
  }

  async run(req: QueryRunRequest): Promise<QueryRunResult> {
    if (this.closed) throw new Error('query engine is closed');
    const analysis = await this.analyze(req.sql);
    const started = performance.now();
    if (req.files?.length) return this.runFiles(req, analysis, started);
    const byName = new Map<string, Dataset>();
    for (const ds of req.datasets ?? []) for (const n of ds.names) if (!byName.has(n.toLowerCase())) byName.set(n.toLowerCase(), ds);
    const used: Dataset[] = [];
    for (const t of analysis.tables) {
      const ds = byName.get(t);
      if (!ds) throw new UnknownTable(`No table named '${t}'.`, { table: t });
      if (!used.includes(ds)) used.push(ds);
    }
    const sb = await this.sandbox(req.scope);
    sb.active++;
    sb.lastUsed = Date.now();
    try {
      let warm = true;
      for (const ds of used) {
        try {
          if (!(await this.ensure(sb, ds))) warm = false;
        } catch (err) {
          // A table too large for the sandbox's memory limit is the caller's 400; anything else
          // (the host's store failing) stays a 500.
          if (/Out of Memory Error|could not allocate/i.test((err as Error).message ?? '')) throw new QueryResourcesExceeded(`Loading table '${ds.names[0]}' needs more memory than the query engine allows.`);
          throw err;
        }
      }
      const result = await this.execute(sb.instance, req);
      return { ...result, warm, executionTimeMs: performance.now() - started };
    } finally {
      sb.active--;
      this.evictOld();
    }
  }

  private async runFiles(req: QueryRunRequest, analysis: SqlAnalysis, started: number): Promise<QueryRunResult> {
    const files = new Map<string, FileSource>();
    for (const f of req.files ?? []) files.set(f.name.toLowerCase(), f);
    for (const t of analysis.tables) if (!files.has(t)) throw new UnknownTable(`No source named '${t}'.`, { table: t });
    const { enable_external_access: _e, lock_configuration: _l, ...open } = lockedOptions(this.opts);
    const instance = await DuckDBInstance.create(':memory:', open);
    try {
      const conn = await instance.connect();
      try {
        // Views over exactly the given files: the query reads them in place (no copy), and once
        // external access is off, `allowed_paths` lets DuckDB open those files and nothing else.
        const used = analysis.tables.map((t) => files.get(t)!);
        await conn.run(`SET allowed_paths = [${used.map((f) => lit(f.path)).join(', ')}]`);
        for (const f of used) {
          const reader = f.format === 'csv' ? 'read_csv' : f.format === 'parquet' ? 'read_parquet' : 'read_json_auto';
          try {
            await conn.run(`CREATE VIEW ${q(f.name.toLowerCase())} AS SELECT * FROM ${reader}(${lit(f.path)})`);
          } catch (err) {
            throw new QueryFailed(`Source '${f.name}' could not be read as ${f.format}: ${(err as Error).message.split('\n')[0]}`);
          }
        }
        await conn.run('SET enable_external_access = false');
        await conn.run('SET lock_configuration = true');
      } finally {
        conn.disconnectSync();
      }
      const result = await this.execute(instance, req);
      return { ...result, warm: false, executionTimeMs: performance.now() - started };
    } finally {
      instance.closeSync();
    }
  }

  private async execute(instance: DuckDBInstance, req: QueryRunRequest): Promise<Omit<QueryRunResult, 'warm' | 'executionTimeMs'>> {
    const conn = await instance.connect();
    const timer = setTimeout(() => conn.interrupt(), req.timeoutMs);
    try {
      const extracted = await conn.extractStatements(req.sql);
      if (extracted.count !== 1) throw new SqlNotAllowed('Exactly one statement is allowed.');
      const prepared = await extracted.prepare(0);
      try {
        if (prepared.statementType !== StatementType.SELECT) throw new SqlNotAllowed('Only one read-only SELECT or WITH statement is allowed.');
        if (prepared.parameterCount > 0) {
          if (!req.params) throw new QueryFailed('Parameters ($name, ?) are not supported here.');
          for (let i = 1; i <= prepared.parameterCount; i++) {
            const v = req.params[prepared.parameterName(i)];
            if (v === null || v === undefined) prepared.bindNull(i);
            else if (typeof v === 'string') prepared.bindVarchar(i, v);
            else if (typeof v === 'number') prepared.bindDouble(i, v);
            else if (typeof v === 'boolean') prepared.bindBoolean(i, v);
            else prepared.bindVarchar(i, JSON.stringify(v));
          }
        }
        const reader = await prepared.streamAndReadUntil(req.maxRows + 1);
        const columns = reader.columnNames();
        const types = reader.columnTypes().map((t: DuckDBType) => String(t));
        const raw = reader.getRowsJS() as unknown[][];
        const truncated = raw.length > req.maxRows || !reader.done;
        const kept = raw.slice(0, req.maxRows);
        const bigAsString = types.map((t, i) => INTEGER_TYPES.test(t) && kept.some((r) => typeof r[i] === 'bigint' && ((r[i] as bigint) > BigInt(Number.MAX_SAFE_INTEGER) || (r[i] as bigint) < -BigInt(Number.MAX_SAFE_INTEGER))));
        let decimalStrings: unknown[][] | undefined;
        const wideDecimal = types.map((t) => {
          const m = /^DECIMAL\((\d+),\s*\d+\)$/.exec(t);
          return !!m && Number(m[1]) > 15;
        });
        if (wideDecimal.some(Boolean)) decimalStrings = reader.getRowsJson().slice(0, req.maxRows) as unknown[][];
        const rows = kept.map((r, ri) => r.map((v, i) => (wideDecimal[i] ? decimalStrings![ri][i] : jsonValue(v, types[i], bigAsString[i]))));
        return { columns, columnTypes: types.map((t, i) => (bigAsString[i] || wideDecimal[i] ? `${t} (as string)` : t)), rows, truncated };
      } finally {
        prepared.destroySync();
      }
    } catch (err) {
      throw mapError(err);
    } finally {
      clearTimeout(timer);
      conn.disconnectSync();
    }
  }

  close(): void {
    this.closed = true;
    for (const sb of this.sandboxes.values()) this.dispose(sb);
    this.sandboxes.clear();
    if (this.opts.stagingDir) rmSync(this.opts.stagingDir, { recursive: true, force: true });
    void this.parser?.then((p) => p.closeSync()).catch(() => undefined);
  }
}
