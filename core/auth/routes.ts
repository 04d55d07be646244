/**
 * First-party sign-up, sign-in, sign-out and session routes (built in: always loaded).
 */
import Type from 'typebox';
import { definePlugin, type PermissionDecl } from '../registry/index.ts';
import { SessionRequired } from '../errors/index.ts';
import { SESSION_COOKIE } from './sessions.ts';

/** Permissions core itself declares. */
export const corePermissions: Record<string, PermissionDecl> = {
  'plugins.read': { description: 'List loaded plugins, routes and the permission catalogue', roles: [] },
  'workspace.read': { description: 'Read workspace metadata', roles: ['editor', 'viewer'] },
};

export const UserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
});

const Credentials = {
  email: Type.String({ format: 'email', maxLength: 320 }),
  password: Type.String({ minLength: 8, maxLength: 256 }),
};

export const authPlugin = definePlugin({
  id: 'auth',
  description: 'First-party users and sessions: sign-up, sign-in, sign-out, current session',
  setup(ctx) {
    const { sessions } = ctx.identity;
    const secure = ctx.core.baseUrl.startsWith('https://');
    const cookieOptions = (expires: Date) => ({ path: '/', httpOnly: true, sameSite: 'lax' as const, secure, expires });

    ctx.routes((app) => {
      app.post(
        '/auth/sign-up',
        {
          config: { auth: 'public' },
          schema: {
            tags: ['auth'],
            summary: 'Create a user account and sign in',
            body: Type.Object({ ...Credentials, name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }, { additionalProperties: false }),
            response: { 201: Type.Object({ user: UserSchema }) },
          },
        },
        async (request, reply) => {
          const { email, password, name } = request.body;
          const user = await sessions.signUp(email, password, name ?? null);
          const s = await sessions.createSession(user.id);
          reply.setCookie(SESSION_COOKIE, s.token, cookieOptions(s.expiresAt));
          return reply.code(201).send({ user });
        },
      );

      app.post(
        '/auth/sign-in',
        {
          config: { auth: 'public' },
          schema: {
            tags: ['auth'],
            summary: 'Sign in with email and password (sets the session cookie)',
            description: 'Repeated failures for one email from one address answer 429 `too_many_requests` with `retry-after`.',
            body: Type.Object(Credentials, { additionalProperties: false }),
            response: { 200: Type.Object({ user: UserSchema }) },
          },
        },
        async (request, reply) => {
          const user = await sessions.signIn(request.body.email, request.body.password, request.ip);
          const s = await sessions.createSession(user.id);
          reply.setCookie(SESSION_COOKIE, s.token, cookieOptions(s.expiresAt));
          return { user };
        },
      );

      app.post(
        '/auth/sign-out',
        { config: { auth: 'session' }, schema: { tags: ['auth'], summary: 'End the current session' } },
        async (request, reply) => {
          if (request.principal?.kind !== 'session') throw new SessionRequired();
          await sessions.destroy(request.principal.sessionId);
          reply.clearCookie(SESSION_COOKIE, { path: '/' });
          return reply.code(204).send();
        },
      );

      app.get(
        '/auth/session',
        {
          config: { auth: 'session' },
          schema: {
            tags: ['auth'],
            summary: 'The signed-in user and their workspaces',
            response: {
              200: Type.Object({
                user: UserSchema,
                workspaces: Type.Array(Type.Object({ id: Type.String(), handle: Type.String(), name: Type.String(), role: Type.String() })),
              }),
            },
          },
        },
        async (request) => {
          if (request.principal?.kind !== 'session') throw new SessionRequired();
          const workspaces = await sessions.workspacesOf(request.principal.user.id);
          return { user: request.principal.user, workspaces };
        },
      );
    });
  },
});
