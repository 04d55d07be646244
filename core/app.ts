/**
 * buildApp: the composition of core and the loaded plugins into one fastify server.
 *
 * Boot order: select and order plugins -> validate their config -> open the database (entities
 * of every loaded unit) -> apply migrations -> fastify with core infrastructure (errors, request
 * ids, cookies, auth guard, OpenAPI collection) -> each unit's setup in order -> route checks ->
 * ready. Anything wrong stops the boot with a message that names the plugin or config key.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import type { EntitySchema } from '@mikro-orm/core';
import { Ajv, type Options as AjvOptions } from 'ajv';
import * as ajvFormats from 'ajv-formats';
import Fastify, { type FastifyBaseLogger, type FastifyServerOptions } from 'fastify';
import type { TSchema } from 'typebox';
import { createGuard } from './auth/guard.ts';
import { ApiKeyResolver } from './auth/keys.ts';
import { ApiKeys } from './auth/api-keys.ts';
import { PermissionCatalogue } from './auth/permissions.ts';
import { authPlugin } from './auth/routes.ts';
import { SessionService } from './auth/sessions.ts';
import { isProduction, validateConfig, type CoreConfig } from './config/index.ts';
import { SecretBox, randomToken } from './crypto/index.ts';
import { openDatabase, type Database } from './db/index.ts';
import { installErrorHandling } from './errors/http.ts';
import { InvalidRequest } from './errors/index.ts';
import { createEventBus } from './events/index.ts';
import { coreEntities, coreMigrations } from './identity/entities.ts';
import { createJobs } from './jobs/index.ts';
import { createSafeFetch } from './net/index.ts';
import {
  BootError,
  type AnyAdapter,
  type AnyPlugin,
  type App,
  type BaseContext,
  type ExtensionPoint,
  type ServiceRef,
} from './registry/index.ts';
import { orderUnits, selectUnits } from './registry/loader.ts';
import { corePermissions } from './auth/routes.ts';
import { scopedEm } from './tenancy/index.ts';
import type { EntityManager } from '@mikro-orm/postgresql';

export interface BuildAppOptions {
  config: CoreConfig;
  /** Every available plugin (the operator's TRELLIS_PLUGINS picks among them). */
  plugins: AnyPlugin[];
  adapters?: AnyAdapter[];
  /** Resolved PostgreSQL URL (embedded or DATABASE_URL). */
  databaseUrl: string;
  logger?: FastifyServerOptions['logger'];
}

export interface RouteInfo {
  method: string;
  url: string;
  plugin: string;
  permission: string | null;
  auth: string | null;
}

export interface LoadedUnit {
  id: string;
  kind: 'plugin' | 'adapter';
  description: string;
  extends: string | null;
  permissions: string[];
  routes: RouteInfo[];
}

export interface Trellis {
  app: App;
  db: Database;
  units: LoadedUnit[];
  routes: RouteInfo[];
  catalogue: PermissionCatalogue;
  /** Stops accepting, finishes in-flight requests, stops jobs and plugins, closes the database. */
  close(): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** An EntityManager fork for this request, scoped to its workspace (DESIGN rule 4). */
    readonly em: EntityManager;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Error bodies as documented on every operation (the spec's Errors section). */
const DOC_ERROR = {
  description: 'Error: `{code, message, details?}` (401 authentication_required | invalid_api_key | session_required, 403 insufficient_permissions, 404 not_found, 409 conflict, 413 payload_too_large, 429 too_many_requests, 500 internal_error)',
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object', additionalProperties: { type: 'string' } } },
};
const DOC_BAD_REQUEST = {
  description: 'Invalid request: an HttpApiDecodeError body for schema failures, otherwise `{code, message, details?}` (invalid_request, workspace_context_required, ...)',
  anyOf: [
    {
      type: 'object',
      required: ['_tag', 'message', 'issues'],
      properties: {
        _tag: { const: 'HttpApiDecodeError' },
        message: { type: 'string' },
        issues: {
          type: 'array',
          items: {
            type: 'object',
            required: ['_tag', 'path', 'message'],
            properties: {
              _tag: { enum: ['Pointer', 'Unexpected', 'Missing', 'Composite', 'Refinement', 'Transformation', 'Type', 'Forbidden'] },
              path: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }] } },
              message: { type: 'string' },
            },
          },
        },
      },
    },
    DOC_ERROR,
  ],
};

function makeAjv(extra: AjvOptions): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true, removeAdditional: false, ...extra });
  const addFormats = ((ajvFormats as unknown as { default: { default?: unknown } }).default.default ?? (ajvFormats as unknown as { default: unknown }).default) as (a: Ajv) => void;
  addFormats(ajv);
  return ajv;
}

/** Whether a parsed JSON value holds a NUL character in any string or key. */
function containsNul(v: unknown): boolean {
  if (typeof v === 'string') return v.includes('\0');
  if (Array.isArray(v)) return v.some(containsNul);
  if (v && typeof v === 'object') return Object.entries(v).some(([k, x]) => k.includes('\0') || containsNul(x));
  return false;
}

/**
 * PostgreSQL text cannot hold NUL (U+0000): a body or query string carrying one is refused with a
 * 400 here, once for every plugin, instead of failing as a 500 deep in a write. The JSON parser is
 * fastify's own (with its prototype-poisoning protection); the walk runs only when the body text
 * contains an escaped NUL, the only way JSON can carry one.
 */
function rejectNulCharacters(app: App): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parseJson(request, body as string, (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined);
      if ((body as string).includes('\\u0000') && containsNul(value)) {
        return done(new InvalidRequest('Text may not contain NUL characters (\\u0000).'), undefined);
      }
      done(null, value);
    });
  });
  app.addHook('onRequest', async (request) => {
    if (request.url.includes('%00')) throw new InvalidRequest('The URL may not contain NUL characters (%00).');
  });
}

/** The secret-at-rest key: configured, or (outside production) generated once in the data dir. */
function secretKey(config: CoreConfig): string {
  if (config.TRELLIS_SECRET_KEY) return config.TRELLIS_SECRET_KEY;
  if (isProduction(config)) throw new BootError('TRELLIS_SECRET_KEY is required when NODE_ENV=production (at least 32 characters)');
  const file = path.join(config.dataDir, 'secret.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomToken(48);
  writeFileSync(file, key, { mode: 0o600 });
  return key;
}

export async function buildApp(opts: BuildAppOptions): Promise<Trellis> {
  const { config } = opts;
  const units = orderUnits([authPlugin, ...selectUnits(config.TRELLIS_PLUGINS, opts.plugins, opts.adapters ?? [])]);

  const pluginConfigs = new Map<string, unknown>();
  for (const u of units) {
    pluginConfigs.set(u.id, u.config ? validateConfig(u.config as TSchema, config.plugins[u.id] ?? {}, `plugins.${u.id}.`) : {});
  }
  const secrets = new SecretBox(secretKey(config));

  const app = Fastify({
    logger: opts.logger ?? { level: config.TRELLIS_LOG_LEVEL, redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'] },
    bodyLimit: config.TRELLIS_BODY_LIMIT,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    trustProxy: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  }).withTypeProvider() as unknown as App;
  const log: FastifyBaseLogger = app.log;

  const entities: EntitySchema[] = [...coreEntities, ...units.flatMap((u) => u.entities ?? [])] as EntitySchema[];
  const db = await openDatabase({ url: opts.databaseUrl, entities, poolSize: config.TRELLIS_DB_POOL_SIZE, log: (m) => log.info(m) });
  const jobs = createJobs(opts.databaseUrl, log);
  try {
    await db.migrate([{ plugin: 'core', migrations: coreMigrations }, ...units.map((u) => ({ plugin: u.id, migrations: u.migrations ?? [] }))]);

    const catalogue = new PermissionCatalogue();
    catalogue.add('core', corePermissions);
    for (const u of units) if (u.kind === 'plugin' && u.permissions) catalogue.add(u.id, u.permissions);

    const keys = new ApiKeyResolver(db);
    await keys.start();
    const sessions = new SessionService(db, {
      ttlMs: config.TRELLIS_SESSION_TTL_MS,
      maxFailures: config.TRELLIS_SIGNIN_MAX_FAILURES,
      lockoutMs: config.TRELLIS_SIGNIN_LOCKOUT_MS,
      openSignup: config.TRELLIS_OPEN_SIGNUP,
    });
    const events = createEventBus(log);
    const identity = { sessions, keys, apiKeys: new ApiKeys(keys, catalogue), catalogue };
    const netService = { fetch: createSafeFetch({ allow: config.TRELLIS_OUTBOUND_ALLOW.split(',') }) };

    // Validation: bodies are not coerced (a string is not a number); query, params and headers are.
    const strict = makeAjv({ coerceTypes: false });
    const coercing = makeAjv({ coerceTypes: 'array' });
    app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object));
    installErrorHandling(app);
    rejectNulCharacters(app);
    let shuttingDown = false;
    app.addHook('onRequest', async (request, reply) => {
      reply.header('x-request-id', request.id);
    });
    // During shutdown, responses close their keep-alive connection so the server can finish
    // as soon as in-flight requests are done instead of waiting out idle keep-alive sockets.
    app.addHook('onSend', async (_request, reply) => {
      if (shuttingDown) reply.header('connection', 'close');
    });
    await app.register(cookie);
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'Trellis API', version: '1', description: 'Multi-tenant workspace platform. Paths are under /api/v1.' },
        servers: [{ url: config.baseUrl }],
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', description: 'Workspace API key (trk_...)' },
            apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
            sessionCookie: { type: 'apiKey', in: 'cookie', name: 'trellis_session' },
          },
        },
      },
      hideUntagged: false,
      refResolver: { buildLocalReference: (json, _base, _fragment, i) => String((json as { $id?: string }).$id ?? `def-${i}`) },
      transform: ({ schema, url, route }) => {
        const cfg = (route.config ?? {}) as { permission?: string; auth?: string };
        const s = { ...(schema ?? {}) } as Record<string, unknown>;
        if (cfg.auth === 'public') s.security = [];
        else if (cfg.auth === 'session') s.security = [{ sessionCookie: [] }];
        else s.security = [{ bearerAuth: [] }, { apiKeyHeader: [] }, { sessionCookie: [] }];
        if (cfg.permission) s.description = `${s.description ? `${s.description}\n\n` : ''}Needs permission \`${cfg.permission}\`.`;
        s.response = { 400: { description: DOC_BAD_REQUEST.description, $ref: 'BadRequest#' }, default: { description: DOC_ERROR.description, $ref: 'Error#' }, ...((s.response as object) ?? {}) };
        return { schema: s as never, url };
      },
    });

    app.addSchema({ $id: 'Error', ...DOC_ERROR });
    app.addSchema({ $id: 'BadRequest', ...DOC_BAD_REQUEST, anyOf: [DOC_BAD_REQUEST.anyOf[0], { $ref: 'Error#' }] });

    const requestEm = Symbol('em');
    app.decorateRequest('em', {
      getter(this: { [requestEm]?: EntityManager; workspace: { id: string } | null }) {
        if (!this[requestEm]) {
          this[requestEm] = this.workspace ? scopedEm(db.orm.em, this.workspace.id) : (db.orm.em.fork() as EntityManager);
        }
        return this[requestEm]!;
      },
    });
    app.decorateRequest('principal', null);
    app.decorateRequest('workspace', null);
    app.decorateRequest('permissions', null as never);
    app.addHook('onRequest', createGuard({ keys, sessions, catalogue, baseUrl: config.baseUrl }));

    // Route inventory + the boot check that every route declares a permission or an auth mode.
    const routes: RouteInfo[] = [];
    const pending: { plugin: string; route: { method: string | string[]; url: string; config?: Record<string, unknown> } }[] = [];

    const loaded: LoadedUnit[] = [];
    const services = new Map<string, unknown>();
    const contributions = new Map<string, unknown[]>();
    const frozen = new Set<string>();
    const starters: (() => Promise<void> | void)[] = [];
    const stoppers: (() => Promise<void> | void)[] = [];
    const loadedIds = new Set(units.map((u) => u.id));

    for (const unit of units) {
      const ulog = log.child({ plugin: unit.id });
      const deps: Record<string, unknown> = {};
      for (const [name, ref] of Object.entries(unit.deps ?? {})) deps[name] = services.get(ref.id);
      const base: BaseContext<unknown> = {
        id: unit.id,
        config: pluginConfigs.get(unit.id),
        core: config,
        logger: ulog,
        db,
        jobs,
        events,
        secrets,
        identity,
        net: netService,
        extend<T>(point: ExtensionPoint<T>, item: T) {
          if (!loadedIds.has(point.plugin)) return;
          if (frozen.has(point.id)) throw new BootError(`'${unit.id}' extends '${point.id}' after plugin '${point.plugin}' was set up`);
          const declared = unit.kind === 'adapter' ? [unit.extends] : (unit.extends ?? []);
          if (!declared.some((d) => d.id === point.id)) throw new BootError(`'${unit.id}' extends '${point.id}' without declaring it in 'extends'`);
          let list = contributions.get(point.id);
          if (!list) contributions.set(point.id, (list = []));
          list.push(item);
        },
        onStart: (fn) => void starters.push(fn),
        onStop: (fn) => void stoppers.push(fn),
      };
      const info: LoadedUnit = {
        id: unit.id,
        kind: unit.kind,
        description: unit.description,
        extends: unit.kind === 'adapter' ? unit.extends.plugin : null,
        permissions: unit.kind === 'plugin' ? Object.keys(unit.permissions ?? {}) : [],
        routes: [],
      };
      loaded.push(info);
      if (unit.kind === 'adapter') {
        await unit.setup({ ...base, deps } as never);
        continue;
      }
      const routeFns: { fn: (app: App) => Promise<void> | void; prefix: string }[] = [];
      const optionalDeps: Record<string, unknown> = {};
      for (const [name, ref] of Object.entries(unit.optionalDeps ?? {})) optionalDeps[name] = services.get(ref.id);
      await unit.setup({
        ...base,
        deps,
        optionalDeps,
        provide<T>(ref: ServiceRef<T>, impl: T) {
          if (!(unit.provides ?? []).some((r) => r.id === ref.id)) throw new BootError(`'${unit.id}' provides '${ref.id}' without declaring it in 'provides'`);
          services.set(ref.id, impl);
        },
        extensions<T>(point: ExtensionPoint<T>) {
          if (point.plugin !== unit.id) throw new BootError(`'${unit.id}' reads extension point '${point.id}' of plugin '${point.plugin}'`);
          frozen.add(point.id);
          return Object.freeze([...((contributions.get(point.id) ?? []) as T[])]);
        },
        routes(fn: (app: App) => Promise<void> | void, o?: { prefix?: string }) {
          routeFns.push({ fn, prefix: o?.prefix ?? '/api/v1' });
        },
      } as never);
      for (const ref of unit.provides ?? []) {
        if (!services.has(ref.id)) throw new BootError(`'${unit.id}' declares service '${ref.id}' but did not provide it in setup`);
      }
      for (const { fn, prefix } of routeFns) {
        await app.register(
          async (child) => {
            child.addHook('onRoute', (route) => {
              pending.push({ plugin: unit.id, route: route as never });
            });
            await fn(child as App);
          },
          { prefix },
        );
      }
    }

    // Core routes outside any plugin.
    app.get('/healthz', { config: { auth: 'public' }, schema: { hide: true } as never }, async () => ({ status: 'ok' }));
    app.get('/readyz', { config: { auth: 'public' }, schema: { hide: true } as never }, async (_req, reply) => {
      const ok = await db.ready();
      const body: object = ok ? { status: 'ready' } : { code: 'service_unavailable', message: 'Database unreachable or migrations not applied.' };
      return reply.code(ok ? 200 : 503).send(body as never);
    });
    app.get(
      '/api/v1/plugins',
      { config: { permission: 'plugins.read' }, schema: { tags: ['core'], summary: 'List loaded plugins with their routes and permissions' } },
      async () => ({ items: loaded, permissions: catalogue.list() }),
    );

    await app.ready();

    for (const { plugin, route } of pending) {
      const cfg = route.config ?? {};
      const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((m) => m !== 'HEAD');
      if (methods.length === 0) continue;
      const permission = typeof cfg.permission === 'string' ? cfg.permission : null;
      const auth = typeof cfg.auth === 'string' ? cfg.auth : null;
      if (!permission && !auth) throw new BootError(`Route ${methods.join(',')} ${route.url} of plugin '${plugin}' declares neither a permission nor an auth mode`);
      if (auth && !['public', 'session', 'principal'].includes(auth)) throw new BootError(`Route ${route.url} of plugin '${plugin}' has unknown auth mode '${auth}'`);
      if (permission && !catalogue.has(permission)) throw new BootError(`Route ${route.url} of plugin '${plugin}' needs permission '${permission}', which no loaded plugin declares`);
      for (const method of methods) {
        const info = { method, url: route.url, plugin, permission, auth };
        routes.push(info);
        loaded.find((u) => u.id === plugin)!.routes.push(info);
      }
    }

    for (const fn of starters) await fn();

    let closing: Promise<void> | undefined;
    return {
      app,
      db,
      units: loaded,
      routes,
      catalogue,
      close() {
        closing ??= (async () => {
          shuttingDown = true;
          await app.close();
          for (const fn of stoppers.reverse()) await Promise.resolve(fn()).catch((err: unknown) => log.error({ err }, 'plugin stop failed'));
          await events.idle();
          await jobs.stop().catch((err: unknown) => log.error({ err }, 'job queue stop failed'));
          await keys.stop().catch((err: unknown) => log.error({ err }, 'flushing key usage failed'));
          await db.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    // A failed boot leaves nothing running: a plugin's setup may already have started the queue.
    await app.close().catch(() => undefined);
    await jobs.stop().catch(() => undefined);
    await db.close().catch(() => undefined);
    throw err;
  }
}
