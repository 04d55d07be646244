/**
 * Tenancy (DESIGN rule 4): every tenant-owned entity carries `workspaceId` and the `tenant`
 * filter, on by default. A request's EntityManager fork gets the filter's argument from the
 * resolved workspace, so a query on a tenant entity without a workspace throws instead of
 * reading across tenants. `workspace_id` is NOT NULL in every tenant table, so an insert that
 * forgets it fails instead of landing in no workspace.
 */
import { p, type EntityManager } from '@mikro-orm/core';

export const TENANT_FILTER = 'tenant';

/** The filter that scopes a tenant-owned entity to the request's workspace. */
export const tenantFilter = {
  [TENANT_FILTER]: {
    name: TENANT_FILTER,
    cond: (args: Record<string, unknown>) => ({ workspaceId: args.workspaceId }),
    default: true,
  },
};

/** Property set every tenant-owned entity starts with. */
export const tenantProperties = {
  workspaceId: p.uuid().index(),
};

/** Forks an EntityManager scoped to one workspace. */
export function scopedEm<E extends EntityManager>(em: E, workspaceId: string): E {
  const fork = em.fork() as E;
  fork.setFilterParams(TENANT_FILTER, { workspaceId });
  return fork;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SLUG_ID = /-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID.test(s);

/**
 * What a path segment names (spec rule 6, for data definitions and agents): the id; a name-id
 * slug `<name-slug>-<id>` (the trailing id decides); a handle; or the legacy handle URL form (a
 * URL or path whose last segment is one of those).
 */
export function parsePathRef(segment: string): { id: string } | { handle: string } | null {
  let s = segment.trim();
  if (s.includes('/')) s = s.split('/').filter(Boolean).at(-1) ?? '';
  if (!s) return null;
  if (UUID.test(s)) return { id: s.toLowerCase() };
  const m = SLUG_ID.exec(s);
  if (m) return { id: m[1].toLowerCase() };
  return { handle: s };
}

/** A URL-safe slug of a name: lowercase ASCII letters, digits and `sep`. */
export function slugify(name: string, sep = '-'): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, sep)
    .replace(new RegExp(`^\\${sep}+|\\${sep}+$`, 'g'), '');
}
