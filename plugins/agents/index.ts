/**
 * Agents plugin: AI agents (instructions, model, capabilities) with chats answered by a model
 * provider (adapters such as `adapters/models/openai`, any OpenAI-compatible API).
 */
import Type from 'typebox';
import { definePlugin } from '../../core/registry/index.ts';
import { credentialsServiceRef } from '../credentials/api.ts';
import { modelProvidersPoint } from './api.ts';
import { agentsRoutes } from './agents.routes.ts';
import { AgentsService } from './agents.service.ts';
import { migrations } from './migrations.ts';

export default definePlugin({
  id: 'agents',
  description: 'AI agents with chats',
  config: Type.Object({ modelTimeoutMs: Type.Integer({ default: 60_000, minimum: 100 }) }),
  permissions: {
    'agents.read': { description: 'List and read agents', roles: [] },
    'agents.write': { description: 'Create, change and delete agents', roles: [] },
    'agents.chat': { description: 'Read and write chats with agents', roles: [] },
  },
  migrations,
  optionalDeps: { credentials: credentialsServiceRef },
  extensionPoints: [modelProvidersPoint],
  setup(ctx) {
    const service = new AgentsService(ctx.db, ctx.extensions(modelProvidersPoint), ctx.optionalDeps.credentials, ctx.config.modelTimeoutMs);
    ctx.routes((app) => agentsRoutes(app, service));
  },
});
