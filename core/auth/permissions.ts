/**
 * The permission catalogue: assembled at boot from what core and the loaded plugins declare.
 * Names are the spec's `<resource>.<action>`. Admin holds every permission; editor and viewer hold
 * what each declaration grants them. An API key's explicit `permissions` map
 * (`{resource: [action, ...]}`) is unioned with its role.
 */
import { InvalidRequest } from '../errors/index.ts';
import type { KeyRole, Role } from '../identity/entities.ts';
import type { PermissionDecl } from '../registry/index.ts';

export interface CatalogueEntry extends PermissionDecl {
  name: string;
  plugin: string;
}

export class PermissionCatalogue {
  readonly #entries = new Map<string, CatalogueEntry>();
  readonly #byRole = new Map<Role, Set<string>>();

  add(plugin: string, decls: Record<string, PermissionDecl>): void {
    for (const [name, decl] of Object.entries(decls)) {
      if (!/^[a-zA-Z][a-zA-Z0-9-]*\.[a-zA-Z][a-zA-Z0-9-]*$/.test(name)) {
        throw new Error(`Plugin '${plugin}' declares permission '${name}', which is not of the form <resource>.<action>`);
      }
      const existing = this.#entries.get(name);
      if (existing) throw new Error(`Permission '${name}' is declared by both '${existing.plugin}' and '${plugin}'`);
      this.#entries.set(name, { ...decl, name, plugin });
    }
    this.#byRole.clear();
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  list(): CatalogueEntry[] {
    return [...this.#entries.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  forRole(role: KeyRole): Set<string> {
    if (role === 'custom') return new Set();
    let set = this.#byRole.get(role);
    if (!set) {
      set = new Set([...this.#entries.values()].filter((e) => role === 'admin' || e.roles.includes(role)).map((e) => e.name));
      this.#byRole.set(role, set);
    }
    return set;
  }

  /** Effective permissions of a role plus an explicit `{resource: [actions]}` map. */
  effective(role: KeyRole, explicit: Record<string, string[]> | null | undefined): Set<string> {
    const base = this.forRole(role);
    if (!explicit || Object.keys(explicit).length === 0) return base;
    const set = new Set(base);
    for (const [resource, actions] of Object.entries(explicit)) for (const a of actions) set.add(`${resource}.${a}`);
    return set;
  }

  /** Rejects (400) an explicit map naming permissions no loaded plugin declares. */
  validateExplicit(explicit: Record<string, string[]> | null | undefined): void {
    if (!explicit) return;
    const unknown: string[] = [];
    for (const [resource, actions] of Object.entries(explicit)) {
      for (const a of actions) if (!this.#entries.has(`${resource}.${a}`)) unknown.push(`${resource}.${a}`);
    }
    if (unknown.length) {
      throw new InvalidRequest(`Unknown permissions: ${unknown.join(', ')}. See GET /api/v1/plugins for the catalogue.`, {
        unknownPermissions: unknown.join(','),
      });
    }
  }
}
