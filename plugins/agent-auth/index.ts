/**
 * Agent login: the device-style flow through which an AI agent obtains a workspace-scoped API
 * key approved by a signed-in customer.
 */
import { definePlugin } from '../../core/registry/index.ts';
import { agentAuthRoutes } from './agent-auth.routes.ts';
import { AgentAuthService } from './agent-auth.service.ts';
import { migrations } from './migrations.ts';

export default definePlugin({
  id: 'agent-auth',
  description: 'Device-style agent login that issues workspace-scoped API keys',
  migrations,
  setup(ctx) {
    const service = new AgentAuthService(ctx.db, ctx.identity, ctx.core.baseUrl);
    ctx.routes((app) => agentAuthRoutes(app, service, true));
    ctx.routes((app) => agentAuthRoutes(app, service, false), { prefix: '/api' });
  },
});
