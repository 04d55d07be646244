import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_agents',
    up: `
      CREATE TABLE agents_agents (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        handle text NOT NULL,
        name text NOT NULL,
        description text,
        model text,
        instructions text,
        capabilities jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, handle)
      );
      CREATE TABLE agents_chats (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        agent_id uuid NOT NULL REFERENCES agents_agents(id) ON DELETE CASCADE,
        title text,
        last_message_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX agents_chats_agent_idx ON agents_chats (agent_id, updated_at DESC);
      CREATE TABLE agents_messages (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        chat_id uuid NOT NULL REFERENCES agents_chats(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('user','assistant')),
        content text NOT NULL,
        status text NOT NULL CHECK (status IN ('completed','failed')),
        error text,
        model text,
        usage jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX agents_messages_chat_idx ON agents_messages (chat_id, created_at, id);
    `,
  },
];
