/**
 * Public API of the mcp plugin: the extension point through which plugins offer tools to AI
 * agents over MCP. A tool runs with the caller's workspace and is listed and callable only when
 * the caller holds its permission.
 */
import { createExtensionPoint } from '../../core/registry/index.ts';

export interface McpToolContext {
  workspaceId: string;
  workspaceHandle: string;
  /** The caller's effective permissions. */
  permissions: ReadonlySet<string>;
  signal: AbortSignal;
}

export interface McpTool {
  /** Unique, snake_case (e.g. `data_query_rows`). */
  name: string;
  title: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  inputSchema: Record<string, unknown>;
  /** Permission needed to see and call the tool. */
  permission: string;
  tags?: string[];
  /** Returns JSON-serialisable data; thrown errors become `isError` results with the message. */
  run(ctx: McpToolContext, args: Record<string, unknown>): Promise<unknown>;
}

export const mcpToolsPoint = createExtensionPoint<McpTool>({ id: 'mcp.tools', plugin: 'mcp' });
