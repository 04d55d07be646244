/**
 * Public API of the credentials plugin (the only file other plugins may import).
 */
import { createServiceRef } from '../../core/registry/index.ts';

export interface CredentialsService {
  /** Which of `ids` are credentials of this workspace. */
  existing(workspaceId: string, ids: string[]): Promise<Set<string>>;
}

export const credentialsServiceRef = createServiceRef<CredentialsService>({ id: 'credentials.credentials', plugin: 'credentials' });
