/**
 * The route guard: one root `onRequest` hook that reads the route's declared `permission` /
 * `auth` (DESIGN rule 2) and resolves, before any handler runs, the principal (API key or
 * session), the workspace (tenant) and the effective permissions.
 *
 * - API key (`x-api-key` or `Authorization: Bearer`): its own workspace; header ignored.
 * - Session cookie: the workspace from `x-workspace-handle` / `x-workspace-id` (session-only
 *   routes: the `:workspaceHandle` path parameter, or the header when they need a permission);
 *   not a member answers 404, as for any other tenant's id.
 * - Cookie-authenticated unsafe requests need a same-origin `Origin` or a workspace header
 *   (a custom header cannot be sent cross-site without a CORS preflight), else 403.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyRole } from '../identity/entities.ts';
import {
  AuthenticationRequired,
  Forbidden,
  NotFound,
  SessionRequired,
  WorkspaceContextRequired,
  insufficientPermissions,
} from '../errors/index.ts';
import type { ApiKeyResolver } from './keys.ts';
import type { PermissionCatalogue } from './permissions.ts';
import { SESSION_COOKIE, type SessionService, type SessionUser } from './sessions.ts';

export type Principal =
  | { kind: 'apiKey'; keyId: string; role: KeyRole }
  | { kind: 'session'; sessionId: string; user: SessionUser };

export interface WorkspaceRef {
  id: string;
  handle: string;
  name: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    workspace: WorkspaceRef | null;
    permissions: ReadonlySet<string>;
  }
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const EMPTY: ReadonlySet<string> = new Set();

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The API key presented in `x-api-key` or `Authorization: Bearer`, if any. */
export function presentedKey(request: FastifyRequest): string | undefined {
  const x = header(request, 'x-api-key');
  if (x !== undefined) return x.trim();
  const auth = header(request, 'authorization');
  if (auth !== undefined) {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return m ? m[1].trim() : auth.trim();
  }
  return undefined;
}

/** The workspace a session request names with `x-workspace-id` or `x-workspace-handle`. */
function workspaceHeader(request: FastifyRequest): { id: string } | { handle: string } | undefined {
  const id = header(request, 'x-workspace-id');
  if (id !== undefined) return { id };
  const handle = header(request, 'x-workspace-handle');
  return handle !== undefined ? { handle } : undefined;
}

export interface GuardDeps {
  keys: ApiKeyResolver;
  sessions: SessionService;
  catalogue: PermissionCatalogue;
  baseUrl: string;
}

export function createGuard(deps: GuardDeps) {
  const baseOrigin = new URL(deps.baseUrl).origin;

  function checkCsrf(request: FastifyRequest): void {
    if (!UNSAFE.has(request.method)) return;
    if (header(request, 'x-workspace-handle') !== undefined || header(request, 'x-workspace-id') !== undefined) return;
    const origin = header(request, 'origin');
    const own = `${request.protocol}://${request.host}`;
    if (origin && (origin === baseOrigin || origin === own)) return;
    throw new Forbidden('Cookie-authenticated requests that change state need a same-origin Origin header or a workspace header.', {
      reason: 'csrf',
    });
  }

  async function session(request: FastifyRequest) {
    const token = request.cookies?.[SESSION_COOKIE];
    return token ? deps.sessions.resolve(token) : undefined;
  }

  function requirePermission(request: FastifyRequest, permission: string | undefined): void {
    if (permission && !request.permissions.has(permission)) throw insufficientPermissions(permission);
  }

  return async function guard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    request.principal = null;
    request.workspace = null;
    request.permissions = EMPTY;
    const cfg = request.routeOptions.config;
    const mode = cfg.auth ?? (cfg.permission ? 'principal' : undefined);
    if (mode === undefined || mode === 'public') return;

    if (mode === 'session') {
      const s = await session(request);
      if (!s) throw new SessionRequired();
      checkCsrf(request);
      request.principal = { kind: 'session', sessionId: s.sessionId, user: s.user };
      // The workspace comes from the path; a session-only route that needs a permission but has
      // no :workspaceHandle takes it from the workspace header instead.
      const param = (request.params as Record<string, string> | undefined)?.workspaceHandle;
      const ref = param !== undefined ? { handle: param } : cfg.permission ? workspaceHeader(request) : undefined;
      if (ref) {
        const m = await deps.sessions.membership(s.user.id, ref);
        if (!m) throw new NotFound('Workspace was not found.');
        request.workspace = { id: m.id, handle: m.handle, name: m.name };
        request.permissions = deps.catalogue.forRole(m.role);
      } else if (cfg.permission) {
        throw new WorkspaceContextRequired();
      }
      requirePermission(request, cfg.permission);
      return;
    }

    // 'principal': an API key or a session, with a workspace.
    const key = presentedKey(request);
    if (key !== undefined) {
      const k = await deps.keys.resolve(key);
      request.principal = { kind: 'apiKey', keyId: k.id, role: k.role };
      request.workspace = { id: k.workspaceId, handle: k.workspaceHandle, name: k.workspaceName };
      request.permissions = deps.catalogue.effective(k.role, k.permissions);
      requirePermission(request, cfg.permission);
      return;
    }
    const s = await session(request);
    if (!s) throw new AuthenticationRequired();
    checkCsrf(request);
    request.principal = { kind: 'session', sessionId: s.sessionId, user: s.user };
    const ref = workspaceHeader(request);
    if (!ref) throw new WorkspaceContextRequired();
    const m = await deps.sessions.membership(s.user.id, ref);
    if (!m) throw new NotFound('Workspace was not found.');
    request.workspace = { id: m.id, handle: m.handle, name: m.name };
    request.permissions = deps.catalogue.forRole(m.role);
    requirePermission(request, cfg.permission);
  };
}
