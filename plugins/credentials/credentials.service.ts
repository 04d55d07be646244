/**
 * Shared credentials for MCP servers and native integrations. Tokens and client secrets are
 * encrypted at rest (ctx.secrets) and never returned: responses say only `hasAccessToken`,
 * `hasClientId`, `hasClientSecret`. Creating or re-validating a credential discovers the
 * server's tools.
 */
import { prefixedId } from '../../core/crypto/index.ts';
import type { SecretBox } from '../../core/crypto/index.ts';
import type { Database } from '../../core/db/index.ts';
import { InvalidRequest, NotFound } from '../../core/errors/index.ts';
import type { SafeFetch } from '../../core/net/index.ts';
import { discoverTools, type DiscoveredTool } from './discovery.ts';

interface Row {
  id: string;
  name: string | null;
  credential_kind: 'mcp' | 'native';
  integration_key: string | null;
  type: 'oauth' | 'bearerToken';
  mcp_server_name: string | null;
  mcp_server_url: string;
  access_token_enc: string | null;
  client_id_enc: string | null;
  client_secret_enc: string | null;
  available_tools: DiscoveredTool[] | null;
  tool_discovery_error: string | null;
  last_validated_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface CredentialInput {
  name?: string | null;
  credentialKind: 'mcp' | 'native';
  integrationKey?: string | null;
  type: 'oauth' | 'bearerToken';
  mcpServerName?: string | null;
  mcpServerUrl: string;
  accessToken?: string;
  clientId?: string;
  clientSecret?: string;
}

export interface CredentialPatch {
  name?: string | null;
  integrationKey?: string | null;
  type?: 'oauth' | 'bearerToken';
  mcpServerName?: string | null;
  mcpServerUrl?: string;
  /** `null` clears the stored secret. */
  accessToken?: string | null;
  clientId?: string | null;
  clientSecret?: string | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function credentialView(r: Row) {
  return {
    id: r.id,
    name: r.name,
    credentialKind: r.credential_kind,
    integrationKey: r.integration_key,
    type: r.type,
    mcpServerName: r.mcp_server_name,
    mcpServerUrl: r.mcp_server_url,
    hasAccessToken: r.access_token_enc !== null,
    hasClientId: r.client_id_enc !== null,
    hasClientSecret: r.client_secret_enc !== null,
    availableTools: r.available_tools,
    toolDiscoveryError: r.tool_discovery_error,
    lastValidatedAt: iso(r.last_validated_at),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

function checkShape(c: { credentialKind: string; type: string; integrationKey?: string | null; mcpServerUrl: string; hasToken: boolean; hasClient: boolean }): void {
  let url: URL;
  try {
    url = new URL(c.mcpServerUrl);
  } catch {
    throw new InvalidRequest('mcpServerUrl must be an absolute http(s) URL.', { field: 'mcpServerUrl' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidRequest('mcpServerUrl must be an http(s) URL.', { field: 'mcpServerUrl' });
  if (c.credentialKind === 'native' && !c.integrationKey) throw new InvalidRequest('A native credential needs an integrationKey.', { field: 'integrationKey' });
  if (c.type === 'bearerToken' && !c.hasToken) throw new InvalidRequest('A bearerToken credential needs an accessToken.', { field: 'accessToken' });
  if (c.type === 'oauth' && !c.hasClient && !c.hasToken) throw new InvalidRequest('An oauth credential needs a clientId or an accessToken.', { field: 'clientId' });
}

export class CredentialsService {
  readonly #db: Database;
  readonly #secrets: SecretBox;
  readonly #fetch: SafeFetch;

  constructor(db: Database, secrets: SecretBox, fetch: SafeFetch) {
    this.#db = db;
    this.#secrets = secrets;
    this.#fetch = fetch;
  }

  #enc(v: string | null | undefined): string | null {
    return v ? this.#secrets.encrypt(v) : null;
  }

  async #row(workspaceId: string, id: string): Promise<Row> {
    const [r] = await this.#db.query<Row>('SELECT * FROM credentials_credentials WHERE id = $1 AND workspace_id = $2', [id, workspaceId]);
    if (!r) throw new NotFound('Credential was not found.');
    return r;
  }

  async list(workspaceId: string) {
    const rows = await this.#db.query<Row>('SELECT * FROM credentials_credentials WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC', [workspaceId]);
    return rows.map(credentialView);
  }

  async get(workspaceId: string, id: string) {
    return credentialView(await this.#row(workspaceId, id));
  }

  async create(workspaceId: string, userId: string, input: CredentialInput) {
    checkShape({ ...input, hasToken: !!input.accessToken, hasClient: !!input.clientId });
    const id = prefixedId('cred');
    await this.#db.query(
      `INSERT INTO credentials_credentials (id, workspace_id, name, credential_kind, integration_key, type, mcp_server_name, mcp_server_url,
         access_token_enc, client_id_enc, client_secret_enc, created_by_user_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        id, workspaceId, input.name ?? null, input.credentialKind, input.integrationKey ?? null, input.type, input.mcpServerName ?? null,
        input.mcpServerUrl, this.#enc(input.accessToken), this.#enc(input.clientId), this.#enc(input.clientSecret), userId,
      ],
    );
    return this.discover(workspaceId, id);
  }

  async update(workspaceId: string, id: string, patch: CredentialPatch) {
    const cur = await this.#row(workspaceId, id);
    const next = {
      name: patch.name !== undefined ? patch.name : cur.name,
      integration_key: patch.integrationKey !== undefined ? patch.integrationKey : cur.integration_key,
      type: patch.type ?? cur.type,
      mcp_server_name: patch.mcpServerName !== undefined ? patch.mcpServerName : cur.mcp_server_name,
      mcp_server_url: patch.mcpServerUrl ?? cur.mcp_server_url,
      access_token_enc: patch.accessToken !== undefined ? this.#enc(patch.accessToken) : cur.access_token_enc,
      client_id_enc: patch.clientId !== undefined ? this.#enc(patch.clientId) : cur.client_id_enc,
      client_secret_enc: patch.clientSecret !== undefined ? this.#enc(patch.clientSecret) : cur.client_secret_enc,
    };
    checkShape({
      credentialKind: cur.credential_kind,
      type: next.type,
      integrationKey: next.integration_key,
      mcpServerUrl: next.mcp_server_url,
      hasToken: next.access_token_enc !== null,
      hasClient: next.client_id_enc !== null,
    });
    await this.#db.query(
      `UPDATE credentials_credentials SET name = $3, integration_key = $4, type = $5, mcp_server_name = $6, mcp_server_url = $7,
         access_token_enc = $8, client_id_enc = $9, client_secret_enc = $10, updated_at = now()
        WHERE id = $1 AND workspace_id = $2`,
      [id, workspaceId, next.name, next.integration_key, next.type, next.mcp_server_name, next.mcp_server_url, next.access_token_enc, next.client_id_enc, next.client_secret_enc],
    );
    const reachChanged = patch.mcpServerUrl !== undefined || patch.accessToken !== undefined;
    return reachChanged ? this.discover(workspaceId, id) : this.get(workspaceId, id);
  }

  /** Connects to the MCP server and records its tools, or why discovery failed. */
  async discover(workspaceId: string, id: string) {
    const r = await this.#row(workspaceId, id);
    const result = await discoverTools(r.mcp_server_url, r.access_token_enc ? this.#secrets.decrypt(r.access_token_enc) : null, this.#fetch);
    const [row] = result.ok
      ? await this.#db.query<Row>(
          `UPDATE credentials_credentials SET available_tools = $3, tool_discovery_error = NULL, last_validated_at = now(), updated_at = now()
            WHERE id = $1 AND workspace_id = $2 RETURNING *`,
          [id, workspaceId, JSON.stringify(result.tools)],
        )
      : await this.#db.query<Row>(
          `UPDATE credentials_credentials SET tool_discovery_error = $3, updated_at = now() WHERE id = $1 AND workspace_id = $2 RETURNING *`,
          [id, workspaceId, result.error],
        );
    if (!row) throw new NotFound('Credential was not found.');
    return credentialView(row);
  }

  async remove(workspaceId: string, id: string): Promise<void> {
    const rows = await this.#db.query('DELETE FROM credentials_credentials WHERE id = $1 AND workspace_id = $2 RETURNING id', [id, workspaceId]);
    if (rows.length === 0) throw new NotFound('Credential was not found.');
  }

  async existing(workspaceId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.#db.query<{ id: string }>(
      'SELECT id FROM credentials_credentials WHERE workspace_id = $1 AND id IN (SELECT jsonb_array_elements_text($2::jsonb))',
      [workspaceId, JSON.stringify(ids)],
    );
    return new Set(rows.map((r) => r.id));
  }
}
