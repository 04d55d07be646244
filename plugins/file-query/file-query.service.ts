/**
 * File-source queries: each source is resolved to a local file (the files plugin's `openLocal`:
 * the stored file on the local backend, a temp copy of the object otherwise), registered with the
 * engine as a table named `name` for this run only, and released afterwards. The engine enforces
 * the sandbox (one read-only SELECT/WITH, no other files, network, extensions, settings).
 */
import { DecodeError, InvalidRequest, NotFound, defineError, type DecodeIssue } from '../../core/errors/index.ts';
import type { FilesService, LocalCopy } from '../files/api.ts';
import type { FileFormat, QueryEngine } from '../query/api.ts';

export const NotSupported = defineError('not_supported', 400, 'This is not supported yet.');

export interface SourceInput {
  kind: 's3' | 'local' | 'relational';
  name: string;
  format?: FileFormat;
  key?: string;
  fileId?: string;
  path?: string;
  connection?: string;
  table?: string;
}

export interface FileQueryResult {
  sql: string;
  sourceNames: string[];
  table: { columns: string[]; rows: unknown[][] };
  records: Record<string, unknown>[];
  rowCount: number;
  executionTimeMs: number;
}

export function checkSources(sources: SourceInput[]): void {
  const issues: DecodeIssue[] = [];
  const seen = new Set<string>();
  sources.forEach((s, i) => {
    const at = (f: string) => ['sources', i, f];
    if (seen.has(s.name.toLowerCase())) issues.push({ _tag: 'Refinement', path: at('name'), message: `the name '${s.name}' is used twice` });
    seen.add(s.name.toLowerCase());
    if (s.kind === 'relational') return;
    if (!s.format) issues.push({ _tag: 'Missing', path: at('format'), message: 'is missing' });
    if (s.connection !== undefined || s.table !== undefined) issues.push({ _tag: 'Unexpected', path: at(s.connection !== undefined ? 'connection' : 'table'), message: `is not allowed for kind '${s.kind}'` });
    if (s.kind === 's3') {
      if (!s.key) issues.push({ _tag: 'Missing', path: at('key'), message: 'is missing' });
      for (const f of ['fileId', 'path'] as const) if (s[f] !== undefined) issues.push({ _tag: 'Unexpected', path: at(f), message: "is not allowed for kind 's3'" });
    } else {
      if ((s.fileId === undefined) === (s.path === undefined)) issues.push({ _tag: 'Refinement', path: ['sources', i], message: "needs exactly one of 'fileId' or 'path'" });
      if (s.key !== undefined) issues.push({ _tag: 'Unexpected', path: at('key'), message: "is not allowed for kind 'local'" });
    }
  });
  if (issues.length) throw new DecodeError(issues);
  const rel = sources.find((s) => s.kind === 'relational');
  if (rel) throw new NotSupported(`Source '${rel.name}': relational database sources are not supported yet; use kind 's3' or 'local'.`, { source: rel.name });
}

export class FileQueryService {
  readonly #files: FilesService;
  readonly #limits: { maxRows: number; timeoutMs: number };

  constructor(files: FilesService, limits: { maxRows: number; timeoutMs: number }) {
    this.#files = files;
    this.#limits = limits;
  }

  async run(engine: QueryEngine, workspaceId: string, sql: string, sources: SourceInput[]): Promise<FileQueryResult> {
    const started = performance.now();
    checkSources(sources);
    const analysis = await engine.analyze(sql);
    const used = new Set(analysis.tables);
    const copies: LocalCopy[] = [];
    try {
      const files = [];
      for (const s of sources) {
        // Every source must resolve (so a wrong reference is reported even when unused), but
        // only the sources the SQL reads are copied or opened for the run.
        const ref = s.kind === 's3' ? { key: s.key! } : s.fileId !== undefined ? { fileId: s.fileId } : { path: s.path! };
        let copy: LocalCopy;
        try {
          copy = await this.#files.openLocal(workspaceId, ref);
        } catch (err) {
          if (err instanceof NotFound) throw new InvalidRequest(`Source '${s.name}': ${err.message}`, { source: s.name });
          if (err instanceof Error && (err as { statusCode?: number }).statusCode === 400) throw new InvalidRequest(`Source '${s.name}': ${err.message}`, { source: s.name });
          throw err;
        }
        copies.push(copy);
        if (used.has(s.name.toLowerCase())) files.push({ name: s.name.toLowerCase(), path: copy.path, format: s.format! });
      }
      const result = await engine.run({ sql, scope: workspaceId, files, maxRows: this.#limits.maxRows, timeoutMs: this.#limits.timeoutMs });
      const records = result.rows.map((r) => Object.fromEntries(result.columns.map((c, i) => [c, r[i]])));
      return {
        sql,
        sourceNames: sources.map((s) => s.name),
        table: { columns: result.columns, rows: result.rows },
        records,
        rowCount: result.rows.length,
        executionTimeMs: Math.round((performance.now() - started) * 1000) / 1000,
      };
    } finally {
      await Promise.all(copies.map((c) => c.release().catch(() => undefined)));
    }
  }
}
