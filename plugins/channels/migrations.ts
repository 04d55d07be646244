import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_init',
    up: `
CREATE TABLE channels_channels (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
  channel_connection_id text,
  name text NOT NULL,
  description text,
  kind text NOT NULL,
  adapter text NOT NULL,
  external_id text,
  metadata jsonb,
  config jsonb NOT NULL DEFAULT '{}'::jsonb,
  secrets text,
  last_message_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channels_channels_ws_updated ON channels_channels (workspace_id, updated_at DESC);

CREATE TABLE channels_threads (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
  channel_id uuid NOT NULL REFERENCES channels_channels(id) ON DELETE CASCADE,
  title text,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed', 'archived')),
  external_id text,
  metadata jsonb,
  last_message_at timestamptz,
  closed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX channels_threads_external ON channels_threads (channel_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX channels_threads_activity ON channels_threads (channel_id, (COALESCE(last_message_at, created_at)) DESC);

CREATE TABLE channels_messages (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
  channel_id uuid NOT NULL REFERENCES channels_channels(id) ON DELETE CASCADE,
  thread_id uuid REFERENCES channels_threads(id) ON DELETE CASCADE,
  parent_message_id uuid REFERENCES channels_messages(id) ON DELETE SET NULL,
  external_id text,
  direction text NOT NULL CHECK (direction IN ('inbound', 'outbound', 'internal', 'system')),
  status text NOT NULL CHECK (status IN ('pending', 'received', 'sent', 'delivered', 'failed')),
  kind text NOT NULL CHECK (kind IN ('text', 'event', 'call', 'comment', 'system')),
  text text,
  raw jsonb NOT NULL DEFAULT 'null'::jsonb,
  author jsonb NOT NULL,
  metadata jsonb,
  attachments jsonb NOT NULL DEFAULT '[]'::jsonb,
  delivery jsonb,
  delivery_attempts integer NOT NULL DEFAULT 0,
  delivery_next_at timestamptz,
  delivery_lease timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX channels_messages_external ON channels_messages (channel_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX channels_messages_top ON channels_messages (channel_id, created_at DESC) WHERE thread_id IS NULL;
CREATE INDEX channels_messages_thread ON channels_messages (thread_id, created_at DESC) WHERE thread_id IS NOT NULL;
CREATE INDEX channels_messages_parent ON channels_messages (parent_message_id) WHERE parent_message_id IS NOT NULL;
CREATE INDEX channels_messages_pending ON channels_messages (delivery_next_at) WHERE status = 'pending' AND direction = 'outbound';

CREATE TABLE channels_replay_keys (
  channel_id uuid NOT NULL REFERENCES channels_channels(id) ON DELETE CASCADE,
  key text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (channel_id, key)
);
`,
  },
  {
    // lastMessageAt is derived from the messages (an index probe) instead of an UPDATE of the
    // channel and thread rows per message: that hot-row lock serialised every insert in a channel.
    name: '0002_derived_last_message_at',
    up: `
CREATE INDEX channels_messages_channel_created ON channels_messages (channel_id, created_at DESC);
ALTER TABLE channels_channels DROP COLUMN last_message_at;
ALTER TABLE channels_threads DROP COLUMN last_message_at;
DROP INDEX IF EXISTS channels_threads_activity;
`,
  },
  {
    name: '0003_replay_key_expiry',
    up: `CREATE INDEX channels_replay_keys_expiry ON channels_replay_keys (expires_at);`,
  },
];
