/**
 * Console plugin: the first-party web pages. `/` (sign in or up, workspaces, API keys) and
 * `/agent-login` (where a customer approves an agent login: the `verificationUri` the agent-auth
 * plugin hands out). Static HTML, CSS and one ES module, served with a strict CSP; the pages call
 * the JSON API with the session cookie (and a workspace header, which also satisfies the CSRF rule).
 */
import { readFileSync } from 'node:fs';
import { NotFound } from '../../core/errors/index.ts';
import { definePlugin } from '../../core/registry/index.ts';

const asset = (name: string) => readFileSync(new URL(name, import.meta.url));

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export default definePlugin({
  id: 'console',
  description: 'First-party web pages: sign-in, workspaces and API keys, agent-login approval',
  setup(ctx) {
    const page = asset('page.html');
    const files: Record<string, { body: Buffer; type: string }> = {
      'console.js': { body: asset('console.js'), type: 'text/javascript; charset=utf-8' },
      'console.css': { body: asset('console.css'), type: 'text/css; charset=utf-8' },
    };
    ctx.routes(
      (app) => {
        const html = { config: { auth: 'public' as const }, schema: { hide: true } as never };
        for (const path of ['/', '/agent-login']) {
          app.get(path, html, async (_request, reply) => reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(page));
        }
        app.get('/console/assets/:name', html, async (request, reply) => {
          const f = files[(request.params as { name: string }).name];
          if (!f) throw new NotFound('No such asset.');
          return reply.headers(SECURITY_HEADERS).type(f.type).send(f.body);
        });
      },
      { prefix: '' },
    );
  },
});
