/**
 * OpenAPI plugin: the OpenAPI 3.1 document generated from the route schemas of every loaded
 * plugin (and only those) at `GET /api/v1/openapi.json`, and a readable docs page at `/docs`.
 */
import swaggerUi from '@fastify/swagger-ui';
import { definePlugin } from '../../core/registry/index.ts';

export default definePlugin({
  id: 'openapi',
  description: 'OpenAPI document and API docs page',
  setup(ctx) {
    ctx.routes((app) => {
      app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } as never }, async () => app.swagger());
    });
    ctx.routes(
      async (app) => {
        // The docs page and its static assets are public.
        app.addHook('onRoute', (route) => {
          route.config = { ...(route.config ?? {}), auth: 'public' };
        });
        await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });
      },
      { prefix: '' },
    );
  },
});
