/**
 * Public API of the files plugin (the only file other plugins may import).
 */
import { createServiceRef } from '../../core/registry/index.ts';

export interface FilesService {
  /** Which of `ids` are files of this workspace that are not deleted. */
  existing(workspaceId: string, ids: string[]): Promise<Set<string>>;
}

export const filesServiceRef = createServiceRef<FilesService>({ id: 'files.files', plugin: 'files' });
