/**
 * Explorer tables: folders (a tree per workspace) and placements (which folder a contributed item
 * is in, and its display name). Items without a placement live at the root.
 */
import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_explorer',
    up: `
      CREATE TABLE explorer_folders (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        parent_id uuid REFERENCES explorer_folders(id) ON DELETE RESTRICT,
        name text NOT NULL,
        created_by text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX explorer_folders_sibling_uq ON explorer_folders (workspace_id, COALESCE(parent_id, '00000000-0000-0000-0000-000000000000'::uuid), lower(name));
      CREATE INDEX explorer_folders_parent_idx ON explorer_folders (parent_id);
      CREATE TABLE explorer_placements (
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        kind text NOT NULL,
        source_id text NOT NULL,
        folder_id uuid REFERENCES explorer_folders(id) ON DELETE CASCADE,
        display_name text,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, kind, source_id)
      );
      CREATE INDEX explorer_placements_folder_idx ON explorer_placements (folder_id);
    `,
  },
];
