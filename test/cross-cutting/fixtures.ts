/**
 * Resource factories for the generated tenant-isolation test: for each path parameter name a
 * route uses, how to create such a resource in a workspace (through the API) and return its id.
 * A plugin that adds a route with a new path parameter adds its factory here; the isolation test
 * fails for any parameter without one, so no route escapes the check.
 */
import type { TestApp, WorkspaceFixture } from '../../core/testing/index.ts';

export interface FixtureContext {
  app: TestApp;
  ws: WorkspaceFixture;
}

export type ParamFactory = (c: FixtureContext) => Promise<string>;

/** Path parameter name -> factory. Parameters resolved by core (`workspaceHandle`) are not listed. */
export const paramFactories: Record<string, ParamFactory> = {
  async userId({ ws }) {
    return ws.user.id;
  },
  async keyId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/api-keys`, headers: ws.user.headers(ws.handle), payload: { name: 'fixture' } });
    return res.json().apiKey.id;
  },
  async invitationId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/invitations`, headers: ws.user.headers(ws.handle), payload: { email: 'fixture@example.test' } });
    return res.json().invitation.id;
  },
};

/**
 * Valid bodies for routes whose body would otherwise fail validation before the resource lookup,
 * keyed `METHOD /api/v1/path/:param` exactly as the route is declared.
 */
export const sampleBodies: Record<string, unknown> = {
  'PATCH /api/v1/workspaces/:workspaceHandle/users/:userId': { role: 'editor' },
};
