/**
 * Workflows plugin: versioned workflow definitions (code, config, ui), runnable through the core
 * sandbox from an endpoint and, through `workflowsServiceRef`, from automation resources.
 */
import Type from 'typebox';
import { definePlugin } from '../../core/registry/index.ts';
import { createSandbox } from '../../core/sandbox/index.ts';
import { workflowsServiceRef } from './api.ts';
import { migrations } from './migrations.ts';
import { workflowsRoutes } from './workflows.routes.ts';
import { WorkflowsStore } from './workflows.service.ts';

const config = Type.Object({
  timeoutMs: Type.Integer({ minimum: 10, default: 30_000, description: 'Wall-clock limit of one workflow run' }),
  cpuMs: Type.Integer({ minimum: 10, default: 5_000, description: 'CPU limit of one workflow run' }),
  memoryMb: Type.Integer({ minimum: 1, maximum: 1024, default: 64, description: 'QuickJS heap limit of one workflow run' }),
});

export default definePlugin({
  id: 'workflows',
  description: 'Versioned workflow definitions run through the sandbox',
  config,
  permissions: {
    'workflows.read': { description: 'Read workflow definitions and their versions', roles: ['editor', 'viewer'] },
    'workflows.write': { description: 'Create, change and delete workflow definitions', roles: [] },
    'workflows.run': { description: 'Run workflow definitions', roles: [] },
  },
  migrations,
  provides: [workflowsServiceRef],
  setup(ctx) {
    const sandbox = createSandbox({ limits: { timeoutMs: ctx.config.timeoutMs, cpuMs: ctx.config.cpuMs, memoryBytes: ctx.config.memoryMb * 1024 * 1024 } });
    const store = new WorkflowsStore(ctx.db, sandbox);
    ctx.provide(workflowsServiceRef, store);
    ctx.routes((app) => workflowsRoutes(app, store));
    ctx.onStart(() => void sandbox.warm().catch((err: unknown) => ctx.logger.error({ err }, 'starting a sandbox worker failed')));
    ctx.onStop(() => sandbox.close());
  },
});
