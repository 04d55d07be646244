/**
 * Automations plugin: automations (a script, resources, triggers) and their runs. Scripts run
 * only through the core sandbox (QuickJS), with the automation's resources bound per run.
 */
import Type from 'typebox';
import { definePlugin } from '../../core/registry/index.ts';
import { createSandbox } from '../../core/sandbox/index.ts';
import { channelsServiceRef } from '../channels/api.ts';
import { dataServiceRef } from '../data/api.ts';
import { workflowsServiceRef } from '../workflows/api.ts';
import { automationsRoutes, webhookRoutes } from './automations.routes.ts';
import { AutomationsService } from './automations.service.ts';
import { migrations } from './migrations.ts';
import { RunsService } from './runs.service.ts';
import { TriggerRuntime } from './triggers.ts';

const config = Type.Object({
  timeoutMs: Type.Integer({ minimum: 10, default: 30_000, description: 'Wall-clock limit of one run, host calls included' }),
  cpuMs: Type.Integer({ minimum: 10, default: 5_000, description: 'CPU limit of one run (guest execution time)' }),
  memoryMb: Type.Integer({ minimum: 1, maximum: 1024, default: 64, description: 'QuickJS heap limit of one run' }),
  stackKb: Type.Integer({ minimum: 32, maximum: 384, default: 256, description: 'QuickJS stack limit of one run' }),
  maxOutputBytes: Type.Integer({ minimum: 1, default: 1024 * 1024 }),
  maxLogEvents: Type.Integer({ minimum: 1, default: 1000 }),
  maxLogBytes: Type.Integer({ minimum: 1, default: 256 * 1024 }),
  manualWaitMs: Type.Integer({ minimum: 0, default: 10_000, description: 'How long POST /automations/{id}/run waits for the run to finish' }),
  recoveryGraceMs: Type.Integer({ minimum: 0, default: 60_000, description: 'Past timeoutMs + this, a run still running belongs to a dead process and is failed' }),
  recoveryIntervalMs: Type.Integer({ minimum: 50, default: 60_000, description: 'How often each node sweeps for interrupted runs' }),
  maxWorkers: Type.Integer({ minimum: 1, maximum: 64, default: 8, description: 'Sandbox worker threads (one run each at a time)' }),
  maxQueuedRunsPerWorkspace: Type.Integer({ minimum: 0, default: 100, description: 'While this many runs of a workspace wait for a slot on this server, webhook deliveries answer 429 with retry-after (senders retry) instead of queueing more' }),
  maxConcurrentRunsPerWorkspace: Type.Integer({ minimum: 1, default: 6, description: 'Runs of one workspace executing at once per server; more wait up to timeoutMs (fairness between tenants)' }),
});

export default definePlugin({
  id: 'automations',
  description: 'Automations: scripts with resources and triggers (manual, webhook, schedule, data events), and their runs',
  config,
  permissions: {
    'automations.read': { description: 'Read automations and their runs', roles: ['editor', 'viewer'] },
    'automations.write': { description: 'Create, change and delete automations', roles: [] },
    'automations.run': { description: 'Run automations manually', roles: [] },
  },
  migrations,
  optionalDeps: { data: dataServiceRef, channels: channelsServiceRef, workflows: workflowsServiceRef },
  setup(ctx) {
    const c = ctx.config;
    const sandbox = createSandbox({
      fetch: ctx.net.fetch,
      maxWorkers: c.maxWorkers,
      limits: { timeoutMs: c.timeoutMs, cpuMs: c.cpuMs, memoryBytes: c.memoryMb * 1024 * 1024, stackBytes: c.stackKb * 1024, maxOutputBytes: c.maxOutputBytes, maxLogEvents: c.maxLogEvents, maxLogBytes: c.maxLogBytes },
    });
    const services = { data: ctx.optionalDeps.data, channels: ctx.optionalDeps.channels, workflows: ctx.optionalDeps.workflows };
    const store = new AutomationsService(ctx.db, ctx.secrets, services, ctx.core.baseUrl);
    const runs = new RunsService(ctx.db, sandbox, services, { timeoutMs: c.timeoutMs, recoveryGraceMs: c.recoveryGraceMs, maxConcurrentPerWorkspace: c.maxConcurrentRunsPerWorkspace }, ctx.logger);
    const triggers = new TriggerRuntime(store, runs, ctx.jobs, ctx.events, ctx.logger);
    store.scheduleSync = {
      sync: (t, enabled) => triggers.syncSchedule(t, enabled),
      remove: (id) => triggers.removeSchedule(id),
      changed: (workspaceId) => triggers.invalidateDataTriggers(workspaceId),
    };

    const deps = { store, runs, secrets: ctx.secrets, manualWaitMs: c.manualWaitMs, maxQueuedRuns: c.maxQueuedRunsPerWorkspace };
    ctx.routes((app) => automationsRoutes(app, deps));
    ctx.routes((app) => webhookRoutes(app, deps));

    let unsubscribe: (() => void) | undefined;
    let sweeper: NodeJS.Timeout | undefined;
    ctx.onStart(async () => {
      void sandbox.warm().catch((err: unknown) => ctx.logger.error({ err }, 'starting a sandbox worker failed'));
      await runs.recover();
      unsubscribe = await triggers.start({ dataEvents: !!services.data });
      sweeper = setInterval(() => void runs.recover().catch((err: unknown) => ctx.logger.error({ err }, 'run recovery sweep failed')), c.recoveryIntervalMs);
      sweeper.unref();
    });
    ctx.onStop(async () => {
      if (sweeper) clearInterval(sweeper);
      unsubscribe?.();
      await runs.stop();
      await sandbox.close();
    });
  },
});
