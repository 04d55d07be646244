/**
 * Credentials plugin: shared workspace credentials for MCP servers and native integrations, with
 * tool discovery over MCP. Session-only routes (the spec's Workspaces table).
 */
import { definePlugin } from '../../core/registry/index.ts';
import { credentialsServiceRef } from './api.ts';
import { credentialsRoutes } from './credentials.routes.ts';
import { CredentialsService } from './credentials.service.ts';
import { migrations } from './migrations.ts';

export default definePlugin({
  id: 'credentials',
  description: 'Shared MCP/native credentials with tool discovery',
  permissions: {
    'credentials.read': { description: 'List shared credentials (secrets are never returned)', roles: ['editor', 'viewer'] },
    'credentials.write': { description: 'Create, change, validate and delete shared credentials', roles: [] },
  },
  migrations,
  provides: [credentialsServiceRef],
  setup(ctx) {
    const service = new CredentialsService(ctx.db, ctx.secrets, ctx.net.fetch);
    ctx.provide(credentialsServiceRef, { existing: (w, ids) => service.existing(w, ids) });
    ctx.routes((app) => credentialsRoutes(app, service));
  },
});
