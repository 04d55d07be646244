import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_credentials',
    up: `
      CREATE TABLE credentials_credentials (
        id text PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        name text,
        credential_kind text NOT NULL CHECK (credential_kind IN ('mcp','native')),
        integration_key text,
        type text NOT NULL CHECK (type IN ('oauth','bearerToken')),
        mcp_server_name text,
        mcp_server_url text NOT NULL,
        access_token_enc text,
        client_id_enc text,
        client_secret_enc text,
        available_tools jsonb,
        tool_discovery_error text,
        last_validated_at timestamptz,
        created_by_user_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX credentials_ws_idx ON credentials_credentials (workspace_id, created_at);
    `,
  },
];
