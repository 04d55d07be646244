/**
 * Chooses which plugins and adapters load and in what order.
 *
 * Order rules: a service's provider before its users; an adapter (or a contributing plugin)
 * before the plugin whose extension point it extends. A dependency on a plugin that is not
 * loaded, or a cycle, stops the boot naming the plugins involved.
 */
import { BootError, type AnyAdapter, type AnyPlugin } from './index.ts';

export type Unit = AnyPlugin | AnyAdapter;

/**
 * Parses TRELLIS_PLUGINS: `all` (default), a comma-separated list of ids, or `all,-id,-id` to
 * switch some off. Adapters load with their plugin and can be switched off the same way.
 */
export function selectUnits(spec: string, plugins: AnyPlugin[], adapters: AnyAdapter[]): Unit[] {
  const known = new Map<string, Unit>();
  for (const u of [...plugins, ...adapters]) {
    if (known.has(u.id)) throw new BootError(`Two plugins or adapters share the id '${u.id}'`);
    known.set(u.id, u);
  }
  const parts = spec.split(',').map((s) => s.trim()).filter(Boolean);
  const off = new Set(parts.filter((p) => p.startsWith('-')).map((p) => p.slice(1)));
  const on = parts.filter((p) => !p.startsWith('-'));
  for (const id of [...off, ...on.filter((p) => p !== 'all')]) {
    if (!known.has(id)) throw new BootError(`TRELLIS_PLUGINS names '${id}', which is not a known plugin or adapter (known: ${[...known.keys()].sort().join(', ')})`);
  }
  const all = on.length === 0 || on.includes('all');
  const chosenPlugins = plugins.filter((p) => !off.has(p.id) && (all || on.includes(p.id)));
  const loaded = new Set(chosenPlugins.map((p) => p.id));
  const chosenAdapters = adapters.filter((a) => !off.has(a.id) && loaded.has(a.extends.plugin));
  return [...chosenPlugins, ...chosenAdapters];
}

/** Topological order; stable (declaration order) among independent units. */
export function orderUnits(units: Unit[]): Unit[] {
  const byId = new Map(units.map((u) => [u.id, u]));
  const providers = new Map<string, string>();
  for (const u of units) if (u.kind === 'plugin') for (const ref of u.provides ?? []) providers.set(ref.id, u.id);
  // edges: `before` must set up before `after`
  const after = new Map<string, Set<string>>(units.map((u) => [u.id, new Set()]));
  const addEdge = (before: string, then: string) => after.get(before)!.add(then);

  for (const u of units) {
    for (const ref of Object.values(u.deps ?? {})) {
      const provider = providers.get(ref.id);
      if (!provider) {
        const known = byId.has(ref.plugin) ? ` (plugin '${ref.plugin}' is loaded but does not declare it in 'provides')` : ', which is not loaded';
        throw new BootError(`'${u.id}' needs service '${ref.id}' from plugin '${ref.plugin}'${known}`);
      }
      if (provider !== u.id) addEdge(provider, u.id);
    }
    if (u.kind === 'plugin') {
      for (const ref of Object.values(u.optionalDeps ?? {})) {
        const provider = providers.get(ref.id);
        if (provider && provider !== u.id) addEdge(provider, u.id);
      }
    }
    const extended = u.kind === 'adapter' ? [u.extends] : (u.extends ?? []);
    for (const ep of extended) if (byId.has(ep.plugin) && ep.plugin !== u.id) addEdge(u.id, ep.plugin);
  }

  const state = new Map<string, 'visiting' | 'done'>();
  const out: Unit[] = [];
  const stack: string[] = [];
  // Depth-first on reversed edges: visit everything that must come before `id` first.
  const before = new Map<string, string[]>(units.map((u) => [u.id, []]));
  for (const [b, thens] of after) for (const t of thens) before.get(t)!.push(b);
  const visit = (id: string) => {
    const s = state.get(id);
    if (s === 'done') return;
    if (s === 'visiting') {
      const cycle = [...stack.slice(stack.indexOf(id)), id];
      throw new BootError(`Plugins '${cycle[0]}' and '${cycle[cycle.length - 2]}' depend on each other (${cycle.join(' -> ')})`);
    }
    state.set(id, 'visiting');
    stack.push(id);
    for (const b of before.get(id)!) visit(b);
    stack.pop();
    state.set(id, 'done');
    out.push(byId.get(id)!);
  };
  for (const u of units) visit(u.id);
  return out;
}
