/**
 * MCP plugin: Trellis as an MCP server (Streamable HTTP, stateless) at `POST /api/v1/mcp`, so an
 * AI agent that logged in (agent-auth) discovers and calls workspace tools with its API key.
 * Tools come from other plugins through the `mcp.tools` extension point; each call is checked
 * against the caller's permissions and runs in the caller's workspace. Argument schemas are
 * validated (ajv) before a tool runs.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ValidateFunction } from 'ajv';
import Type from 'typebox';
import { AppError, DecodeError } from '../../core/errors/index.ts';
import { definePlugin } from '../../core/registry/index.ts';
import { mcpToolsPoint, type McpTool, type McpToolContext } from './api.ts';

const VERSION = '1.0.0';

function builtinTools(): McpTool[] {
  return [
    {
      name: 'workspace_whoami',
      title: 'Who am I',
      description: 'The workspace this credential works in, and the permissions it holds.',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      permission: 'mcp.use',
      tags: ['workspace'],
      run: async (ctx) => ({ workspace: ctx.workspaceHandle, permissions: [...ctx.permissions].sort() }),
    },
  ];
}

export default definePlugin({
  id: 'mcp',
  description: 'MCP server exposing workspace tools to AI agents',
  permissions: { 'mcp.use': { description: 'Connect to the MCP endpoint and list tools', roles: ['editor', 'viewer'] } },
  extensionPoints: [mcpToolsPoint],
  setup(ctx) {
    const tools = [...builtinTools(), ...ctx.extensions(mcpToolsPoint)];
    const names = new Set<string>();
    for (const tool of tools) {
      if (names.has(tool.name)) throw new Error(`Two MCP tools are named '${tool.name}'`);
      names.add(tool.name);
    }
    const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true });
    const validators = new Map<string, ValidateFunction>(tools.map((t) => [t.name, ajv.compile(t.inputSchema)]));

    /** One MCP server per request (stateless), bound to the caller's workspace and permissions. */
    function serverFor(call: Omit<McpToolContext, 'signal'>, signal: AbortSignal): Server {
      const server = new Server({ name: 'trellis', version: VERSION }, { capabilities: { tools: {} } });
      const visible = tools.filter((t) => call.permissions.has(t.permission));
      server.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: visible.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema as never, _meta: { tags: t.tags ?? [] } })),
      }));
      server.setRequestHandler(CallToolRequestSchema, async (req) => {
        const tool = visible.find((t) => t.name === req.params.name);
        const fail = (text: string) => ({ isError: true, content: [{ type: 'text' as const, text }] });
        if (!tool) return fail(`Unknown tool '${req.params.name}' (or this credential lacks its permission).`);
        const args = structuredClone(req.params.arguments ?? {}) as Record<string, unknown>;
        const validate = validators.get(tool.name)!;
        if (!validate(args)) return fail(`Invalid arguments: ${ajv.errorsText(validate.errors, { dataVar: 'arguments' })}`);
        try {
          const result = await tool.run({ ...call, signal }, args);
          return { content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }], structuredContent: (result && typeof result === 'object' && !Array.isArray(result) ? result : { result }) as Record<string, unknown> };
        } catch (err) {
          if (err instanceof AppError) return fail(`${err.code}: ${err.message}`);
          if (err instanceof DecodeError) return fail(`invalid input: ${err.message}`);
          ctx.logger.error({ err, tool: tool.name }, 'MCP tool failed');
          return fail('The tool failed with an internal error.');
        }
      });
      return server;
    }

    ctx.routes((app) => {
      const handle = async (request: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => {
        const abort = new AbortController();
        reply.raw.on('close', () => abort.abort());
        const server = serverFor({ workspaceId: request.workspace!.id, workspaceHandle: request.workspace!.handle, permissions: request.permissions }, abort.signal);
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        reply.raw.on('close', () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        reply.hijack();
        reply.raw.setHeader('x-request-id', request.id);
        await transport.handleRequest(request.raw, reply.raw, request.body);
      };
      const schema = {
        tags: ['mcp'],
        summary: 'MCP endpoint (Streamable HTTP, stateless, JSON responses)',
        description:
          'Connect an MCP client with `Authorization: Bearer <API key>`. `tools/list` shows the tools this key may use (each needs its own permission); `tools/call` runs one in the key\'s workspace. Invalid arguments and tool errors are `isError` results.',
      };
      app.post('/mcp', { config: { permission: 'mcp.use' }, schema: { ...schema, body: Type.Unknown() } }, handle);
      app.get('/mcp', { config: { permission: 'mcp.use' }, schema }, async (_request, reply) =>
        reply.code(405).header('allow', 'POST').send({ code: 'method_not_allowed', message: 'This MCP endpoint is stateless: POST JSON-RPC messages; there is no event stream.' }),
      );
    });
  },
});
