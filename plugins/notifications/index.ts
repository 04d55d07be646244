/**
 * Notifications plugin: push-notification device registrations of workspace members, sending
 * and receipts through push providers (adapters such as `adapters/push/expo`).
 */
import { definePlugin } from '../../core/registry/index.ts';
import { pushProvidersPoint } from './api.ts';
import { migrations } from './migrations.ts';
import { notificationsRoutes } from './notifications.routes.ts';
import { NotificationsService } from './notifications.service.ts';

export default definePlugin({
  id: 'notifications',
  description: 'Push-notification devices, sending and receipts',
  permissions: {
    'notifications.register': { description: "Register the signed-in user's own devices", roles: ['editor', 'viewer'] },
    'notifications.read': { description: 'List device registrations of the workspace', roles: [] },
    'notifications.send': { description: 'Send push notifications and read receipts', roles: [] },
  },
  migrations,
  extensionPoints: [pushProvidersPoint],
  setup(ctx) {
    const service = new NotificationsService(ctx.db, ctx.secrets, ctx.extensions(pushProvidersPoint));
    ctx.routes((app) => notificationsRoutes(app, service));
  },
});
