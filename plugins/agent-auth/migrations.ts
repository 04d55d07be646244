import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_requests',
    up: `
      CREATE TABLE agent_auth_requests (
        id uuid PRIMARY KEY,
        user_code text NOT NULL UNIQUE,
        device_code_hash text NOT NULL UNIQUE,
        status text NOT NULL CHECK (status IN ('pending','approved','denied','issuing','consumed','expired')),
        agent_name text NOT NULL,
        agent_description text,
        requested_workspace_handle text,
        role text NOT NULL CHECK (role IN ('admin','editor','viewer','custom')),
        permissions jsonb,
        api_key_name text NOT NULL,
        api_key_expires_in_ms bigint,
        expires_at timestamptz NOT NULL,
        approved_at timestamptz,
        denied_at timestamptz,
        consumed_at timestamptz,
        approved_workspace_id uuid REFERENCES core_workspaces(id) ON DELETE CASCADE,
        approved_by_user_id text,
        api_key_id uuid,
        last_polled_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX agent_auth_requests_expires_idx ON agent_auth_requests (expires_at) WHERE status IN ('pending','approved');
    `,
  },
];
