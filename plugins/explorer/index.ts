/**
 * Explorer plugin: a folder tree per workspace over the items other plugins contribute through
 * the `explorer.sources` extension point (files: kind `file`; data definitions: kind `table`).
 */
import { definePlugin } from '../../core/registry/index.ts';
import { explorerSourcesPoint } from './api.ts';
import { migrations } from './entities.ts';
import { explorerRoutes } from './explorer.routes.ts';
import { ExplorerService } from './explorer.service.ts';

export default definePlugin({
  id: 'explorer',
  description: 'Explorer: folders and the placement of files, tables and apps in them',
  permissions: {
    'explorer.read': { description: 'Browse folders and nodes', roles: ['editor', 'viewer'] },
    'explorer.write': { description: 'Create, rename, move and delete folders; place and rename items', roles: ['editor'] },
  },
  migrations,
  extensionPoints: [explorerSourcesPoint],
  setup(ctx) {
    const service = new ExplorerService(ctx.db, ctx.extensions(explorerSourcesPoint));
    ctx.routes((app) => explorerRoutes(app, service));
  },
});
