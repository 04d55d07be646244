/**
 * DuckDB query engine adapter (extends the query plugin's `query.engines` point): runs
 * read-only SQL over registered datasets and local file sources in locked-down in-process DuckDB
 * instances (see engine.ts).
 */
import path from 'node:path';
import Type from 'typebox';
import { defineAdapter } from '../../../core/registry/index.ts';
import { queryEnginesPoint } from '../../../plugins/query/api.ts';
import { DuckDbEngine } from './engine.ts';

const config = Type.Object({
  memoryLimitMb: Type.Integer({ minimum: 16, default: 512, description: 'memory_limit of each sandbox instance' }),
  threads: Type.Integer({ minimum: 1, maximum: 64, default: 1, description: 'threads of each sandbox instance' }),
  maxSandboxes: Type.Integer({ minimum: 1, default: 8, description: 'Workspaces kept loaded at once (least recently used are dropped)' }),
  csvStaging: Type.Boolean({
    default: false,
    description:
      'Full loads as CSV staged in a private per-sandbox directory of the data dir (the only directory that sandbox may read) instead of row by row; measured no faster here, so off by default',
  }),
});

export default defineAdapter({
  id: 'query-duckdb',
  description: 'DuckDB query engine (locked-down in-process instances, one per workspace)',
  extends: queryEnginesPoint,
  config,
  setup(ctx) {
    // Staging for bulk loads lives in the data dir, one private subdirectory per sandbox.
    const { csvStaging, ...limits } = ctx.config;
    const engine = new DuckDbEngine({ name: 'duckdb', ...limits, stagingDir: csvStaging ? path.join(ctx.core.dataDir, 'duckdb-staging', String(process.pid)) : undefined });
    ctx.extend(queryEnginesPoint, engine);
    ctx.onStop(() => engine.close());
  },
});
