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
