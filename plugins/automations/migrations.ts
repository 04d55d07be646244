import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_init',
    up: `
      CREATE TABLE automations_automations (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        name text NOT NULL,
        handle text NOT NULL,
        description text,
        enabled boolean NOT NULL DEFAULT true,
        script_source text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, handle)
      );
      CREATE INDEX automations_automations_ws_idx ON automations_automations (workspace_id, created_at);

      CREATE TABLE automations_resources (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        automation_id uuid NOT NULL REFERENCES automations_automations(id) ON DELETE CASCADE,
        label text NOT NULL,
        resource_type text NOT NULL,
        resource_ref text NOT NULL,
        config jsonb NOT NULL DEFAULT '{}',
        position integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (automation_id, label)
      );

      CREATE TABLE automations_triggers (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        automation_id uuid NOT NULL REFERENCES automations_automations(id) ON DELETE CASCADE,
        name text NOT NULL,
        type text NOT NULL CHECK (type IN ('manual','schedule','webhook','data_event')),
        enabled boolean NOT NULL DEFAULT true,
        position integer NOT NULL,
        config jsonb NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        public_id text UNIQUE,
        secret_box text,
        signing_secret_box text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX automations_triggers_auto_idx ON automations_triggers (automation_id, position);
      CREATE INDEX automations_triggers_type_idx ON automations_triggers (workspace_id, type) WHERE enabled;

      CREATE TABLE automations_runs (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        automation_id uuid NOT NULL REFERENCES automations_automations(id) ON DELETE CASCADE,
        trigger_id uuid REFERENCES automations_triggers(id) ON DELETE SET NULL,
        trigger_type text NOT NULL,
        trigger_name text NOT NULL,
        status text NOT NULL CHECK (status IN ('running','succeeded','failed')),
        input jsonb,
        output jsonb,
        error jsonb,
        delivery_key text,
        deadline_at timestamptz NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        duration_ms integer,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX automations_runs_ws_idx ON automations_runs (workspace_id, created_at DESC);
      CREATE INDEX automations_runs_auto_idx ON automations_runs (automation_id, created_at DESC);
      CREATE INDEX automations_runs_running_idx ON automations_runs (deadline_at) WHERE status = 'running';
      CREATE UNIQUE INDEX automations_runs_delivery_idx ON automations_runs (automation_id, delivery_key) WHERE delivery_key IS NOT NULL;

      CREATE TABLE automations_run_events (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        run_id uuid NOT NULL REFERENCES automations_runs(id) ON DELETE CASCADE,
        seq integer NOT NULL,
        type text NOT NULL CHECK (type IN ('received','log','result','error')),
        level text NOT NULL CHECK (level IN ('info','error')),
        message text NOT NULL,
        payload jsonb,
        meta jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX automations_run_events_run_idx ON automations_run_events (run_id, seq);
    `,
  },
];
