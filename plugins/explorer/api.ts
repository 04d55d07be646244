/**
 * Public API of the explorer plugin: the extension point through which other plugins contribute
 * nodes (files, tables, apps) without the explorer importing them.
 */
import { createExtensionPoint } from '../../core/registry/index.ts';

/** One item a source contributes; the explorer adds placement (folder, display name). */
export interface ExplorerItem {
  /** The id of the underlying resource (file id, data definition id, app id). */
  sourceId: string;
  name: string;
  sizeBytes: number | null;
  owner: string | null;
  /** Relative UI path of the resource, if it has one. */
  href: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ExplorerSource {
  kind: 'file' | 'table' | 'app';
  /** Every live (not deleted) item of this kind in the workspace. */
  list(workspaceId: string): Promise<ExplorerItem[]>;
}

export const explorerSourcesPoint = createExtensionPoint<ExplorerSource>({ id: 'explorer.sources', plugin: 'explorer' });
