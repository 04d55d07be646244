/**
 * MCP tool discovery: connect to the server over Streamable HTTP with the credential's bearer
 * token (through the SSRF-guarded fetch), list every tool (following pagination), disconnect.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { SafeFetch } from '../../core/net/index.ts';

export interface DiscoveredTool {
  name: string;
  title: string;
  description: string;
  tags: string[];
}

export type DiscoveryResult = { ok: true; tools: DiscoveredTool[] } | { ok: false; error: string };

const MAX_TOOLS = 500;

export async function discoverTools(url: string, accessToken: string | null, fetch: SafeFetch, timeoutMs = 15_000): Promise<DiscoveryResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: accessToken ? { authorization: `Bearer ${accessToken}` } : {}, signal },
    fetch: ((input: string | URL, init?: RequestInit) => fetch(input, { ...init, timeoutMs, maxBytes: 5 * 1024 * 1024 })) as never,
  });
  const client = new Client({ name: 'trellis-tool-discovery', version: '1.0.0' });
  try {
    await client.connect(transport, { signal, timeout: timeoutMs });
    const tools: DiscoveredTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { signal, timeout: timeoutMs });
      for (const t of page.tools) {
        const meta = (t._meta ?? {}) as { tags?: unknown };
        tools.push({
          name: t.name,
          title: t.title ?? t.annotations?.title ?? t.name,
          description: t.description ?? '',
          tags: Array.isArray(meta.tags) ? meta.tags.filter((x): x is string => typeof x === 'string') : [],
        });
      }
      cursor = page.nextCursor;
    } while (cursor && tools.length < MAX_TOOLS);
    return { ok: true, tools };
  } catch (err) {
    if (err instanceof StreamableHTTPError && (err.code === 401 || err.code === 403)) {
      return { ok: false, error: `The MCP server refused the credential (HTTP ${err.code}).` };
    }
    const e = err as { code?: string; message?: string };
    if (e.code === 'ssrf_blocked') return { ok: false, error: e.message ?? 'The MCP server address is not allowed.' };
    if (signal.aborted) return { ok: false, error: `The MCP server did not answer within ${timeoutMs} ms.` };
    return { ok: false, error: `Tool discovery failed: ${(e.message ?? String(err)).slice(0, 500)}` };
  } finally {
    await client.close().catch(() => undefined);
  }
}
