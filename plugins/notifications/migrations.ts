import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_devices',
    up: `
      CREATE TABLE notifications_devices (
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        installation_id text NOT NULL,
        user_id text NOT NULL REFERENCES core_users(id) ON DELETE CASCADE,
        provider text NOT NULL,
        platform text NOT NULL,
        permission_status text NOT NULL,
        push_token_enc text NOT NULL,
        push_token_preview text NOT NULL,
        device_name text, device_model text, os_name text, os_version text, app_version text,
        disabled_at timestamptz,
        disabled_reason text,
        last_registered_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now(),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, installation_id)
      );
      CREATE TABLE notifications_tickets (
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        ticket_id text NOT NULL,
        installation_id text NOT NULL,
        provider text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, ticket_id)
      );
    `,
  },
];
