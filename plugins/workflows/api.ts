/**
 * Public API of the workflows plugin (the only file other plugins may import).
 *
 * A workflow definition is a versioned ES module (`code`, default export `(input, ctx)`), run
 * through the core sandbox with no capabilities (a pure function of its input). Every change of
 * `code`, `config` or `ui` creates a new version; earlier versions stay readable and runnable.
 */
import { createServiceRef } from '../../core/registry/index.ts';
import type { LogEvent, SandboxError } from '../../core/sandbox/index.ts';

export interface WorkflowRunResult {
  workflowId: string;
  version: number;
  status: 'succeeded' | 'failed';
  output: unknown;
  error: SandboxError | null;
  logs: LogEvent[];
  durationMs: number;
}

export interface WorkflowsService {
  /** Whether the workflow (and that version, when given) exists in the workspace. */
  exists(workspaceId: string, workflowId: string, version?: number | null): Promise<boolean>;
  /**
   * Runs a version (the latest when `version` is null) with `input`. Throws NotFound for an
   * unknown workflow or version; a failing script is a `failed` result, not a throw.
   */
  run(workspaceId: string, workflowId: string, opts: { version?: number | null; input?: unknown; signal?: AbortSignal; timeoutMs?: number }): Promise<WorkflowRunResult>;
}

export const workflowsServiceRef = createServiceRef<WorkflowsService>({ id: 'workflows.runner', plugin: 'workflows' });
