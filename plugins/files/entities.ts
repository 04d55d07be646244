/**
 * The files table. Bytes live in the storage backend under `storage_key`; documents keep their
 * text in `content`. Rows are soft-deleted (`deleted_at`) so ids stay unique and other plugins can
 * tell a deleted file from an unknown one.
 */
import type { Migration } from '../../core/db/index.ts';

export const migrations: Migration[] = [
  {
    name: '0001_files',
    up: `
      CREATE TABLE files_files (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
        name text NOT NULL,
        original_name text NOT NULL,
        directory text,
        path text NOT NULL,
        content_type text,
        extension text,
        size_bytes bigint NOT NULL DEFAULT 0 CHECK (size_bytes >= 0),
        checksum_sha256 text,
        expected_sha256 text,
        declared_size_bytes bigint,
        metadata jsonb,
        source text NOT NULL CHECK (source IN ('document','direct','multipart','externalUrl')),
        status text NOT NULL CHECK (status IN ('pending_upload','uploading','importing','uploaded','failed')),
        external_url text,
        etag text,
        error_message text,
        storage_key text,
        upload_id text,
        part_size_bytes bigint,
        part_count integer,
        upload_expires_at timestamptz,
        busy_until timestamptz,
        content text,
        created_by text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz,
        deleted_at timestamptz
      );
      CREATE UNIQUE INDEX files_files_path_uq ON files_files (workspace_id, path) WHERE deleted_at IS NULL;
      CREATE INDEX files_files_ws_idx ON files_files (workspace_id, created_at DESC) WHERE deleted_at IS NULL;
      CREATE INDEX files_files_pending_idx ON files_files (upload_expires_at) WHERE deleted_at IS NULL AND status IN ('pending_upload','uploading','importing');
    `,
  },
];
