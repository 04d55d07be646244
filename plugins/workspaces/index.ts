/**
 * Workspaces plugin: workspaces, members, invitations and API keys (session-only routes, as the
 * spec's Workspaces table says).
 */
import { definePlugin } from '../../core/registry/index.ts';
import { Invitation, migrations } from './entities.ts';
import { workspacesRoutes } from './workspaces.routes.ts';
import { WorkspacesService } from './workspaces.service.ts';

export default definePlugin({
  id: 'workspaces',
  description: 'Workspaces, members, invitations and API keys',
  permissions: {
    'members.write': { description: 'Invite, remove and change the role of members', roles: [] },
    'apiKeys.read': { description: 'List API keys', roles: [] },
    'apiKeys.write': { description: 'Create and revoke API keys', roles: [] },
  },
  entities: [Invitation],
  migrations,
  setup(ctx) {
    const service = new WorkspacesService(ctx.db, ctx.identity);
    ctx.routes((app) => workspacesRoutes(app, service, ctx.core.baseUrl));
  },
});
