import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_init',
    up: `
      CREATE TABLE workflows_workflows (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        name text NOT NULL,
        handle text NOT NULL,
        description text,
        code text NOT NULL,
        version integer NOT NULL CHECK (version > 0),
        config jsonb NOT NULL DEFAULT '{}',
        ui jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, handle)
      );
      CREATE INDEX workflows_workflows_ws_idx ON workflows_workflows (workspace_id, created_at);

      CREATE TABLE workflows_versions (
        workflow_id uuid NOT NULL REFERENCES workflows_workflows(id) ON DELETE CASCADE,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        version integer NOT NULL CHECK (version > 0),
        code text NOT NULL,
        config jsonb NOT NULL,
        ui jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workflow_id, version)
      );
    `,
  },
];
