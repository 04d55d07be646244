/**
 * Query plugin: opens the `query.engines` extension point (adapters contribute embedded SQL
 * engines) and provides the engine registry to the plugins that run user SQL (`sql-query`,
 * `file-query`). It has no routes of its own.
 */
import { BootError, definePlugin } from '../../core/registry/index.ts';
import { queryEnginesPoint, queryEnginesRef, type QueryEngine, type QueryEngines } from './api.ts';

export default definePlugin({
  id: 'query',
  description: 'Registry of embedded SQL query engines (extension point query.engines)',
  provides: [queryEnginesRef],
  extensionPoints: [queryEnginesPoint],
  setup(ctx) {
    const engines = new Map<string, QueryEngine>();
    for (const e of ctx.extensions(queryEnginesPoint)) {
      if (!/^[a-z][a-z0-9-]{0,31}$/.test(e.name)) throw new BootError(`query engine name '${e.name}' must be lower-case letters, digits and dashes`);
      if (engines.has(e.name)) throw new BootError(`two query engines are named '${e.name}'`);
      engines.set(e.name, e);
    }
    const registry: QueryEngines = {
      get: (name) => engines.get(name),
      default: () => engines.values().next().value,
      names: () => [...engines.keys()],
    };
    ctx.provide(queryEnginesRef, registry);
  },
});
