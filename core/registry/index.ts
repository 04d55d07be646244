/**
 * The plugin model (DESIGN rules 1, 2, 5, 6).
 *
 * - A plugin is one `definePlugin` default export: routes, permissions, entities, migrations,
 *   a config schema, the services it provides and the extension points it opens.
 * - An adapter is one `defineAdapter` export that extends exactly one plugin through one of its
 *   extension points (storage backends, channel adapters, query engines, ...).
 * - Cross-plugin use goes through typed service refs declared as `deps`; the loader orders
 *   plugins so providers set up before their users, and adapters before the plugin they extend.
 * - Extension points are typed lists: contributions are added before the owning plugin's setup
 *   and frozen when it reads them.
 */
import type { EntitySchema } from '@mikro-orm/core';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Static, TSchema } from 'typebox';
import type { CoreConfig } from '../config/index.ts';
import type { Database, Migration } from '../db/index.ts';
import type { SecretBox } from '../crypto/index.ts';
import type { SafeFetch } from '../net/index.ts';
import type { EventBus } from '../events/index.ts';
import type { Jobs } from '../jobs/index.ts';
import type { Role } from '../identity/entities.ts';
import type { ApiKeyResolver } from '../auth/keys.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import type { PermissionCatalogue } from '../auth/permissions.ts';
import type { SessionService } from '../auth/sessions.ts';

/** Core identity services, for the plugins that manage users, sessions and keys. */
export interface Identity {
  sessions: SessionService;
  keys: ApiKeyResolver;
  apiKeys: ApiKeys;
  catalogue: PermissionCatalogue;
}

export type App = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

// ---------------------------------------------------------------------------------------------
// Service refs and extension points

export interface ServiceRef<T> {
  readonly kind: 'service';
  readonly id: string;
  /** The plugin that provides it (named in boot errors when it is not loaded). */
  readonly plugin: string;
  /** Type carrier only. */
  readonly __type?: T;
}

export function createServiceRef<T>(opts: { id: string; plugin: string }): ServiceRef<T> {
  return { kind: 'service', id: opts.id, plugin: opts.plugin };
}

export interface ExtensionPoint<T> {
  readonly kind: 'extension-point';
  readonly id: string;
  /** The plugin that opens it and reads its contributions. */
  readonly plugin: string;
  readonly __type?: T;
}

export function createExtensionPoint<T>(opts: { id: string; plugin: string }): ExtensionPoint<T> {
  return { kind: 'extension-point', id: opts.id, plugin: opts.plugin };
}

type ResolvedDeps<D> = { [K in keyof D]: D[K] extends ServiceRef<infer T> ? T : never };
type ResolvedOptionalDeps<D> = { [K in keyof D]: D[K] extends ServiceRef<infer T> ? T | undefined : never };

// ---------------------------------------------------------------------------------------------
// Permissions and route config

/** Roles other than admin that get a permission (admin gets every permission). */
export interface PermissionDecl {
  description: string;
  roles: Exclude<Role, 'admin'>[];
}

/**
 * What a route needs, read by core in `onRoute` (DESIGN rule 2). A route must declare
 * `permission` or `auth`, or the boot stops.
 * - `permission: 'files.read'`: an API key or a session, a workspace (from the key, or the
 *   session's workspace header), and that permission.
 * - `auth: 'session'`: a first-party session only; with `:workspaceHandle` in the path the
 *   workspace is resolved from it (404 when not a member). May combine with `permission`; then
 *   without `:workspaceHandle` the workspace comes from the workspace header (required).
 * - `auth: 'principal'`: an API key or a session with a workspace, and no specific permission.
 * - `auth: 'public'`: no credential; the handler does its own checks (webhooks, sign-in).
 */
export type AuthMode = 'public' | 'session' | 'principal';

export interface RouteAuthConfig {
  permission?: string;
  auth?: AuthMode;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    permission?: string;
    auth?: AuthMode;
  }
}

// ---------------------------------------------------------------------------------------------
// Plugin and adapter definitions

export interface RoutesOptions {
  /** Path prefix; default `/api/v1`. */
  prefix?: string;
}

export interface BaseContext<C> {
  /** This plugin's or adapter's id. */
  readonly id: string;
  readonly config: C;
  readonly core: Readonly<CoreConfig>;
  readonly logger: FastifyBaseLogger;
  readonly db: Database;
  readonly jobs: Jobs;
  readonly events: EventBus;
  readonly secrets: SecretBox;
  readonly identity: Identity;
  /**
   * fetch for user-given URLs, through the SSRF guard: loopback, private, link-local and metadata
   * addresses are refused (unless allow-listed by the operator), on every redirect hop and every
   * resolved address; size and time limits apply. Throws `SsrfBlockedError` (400 `ssrf_blocked`).
   */
  readonly net: { fetch: SafeFetch };
  /** Adds to another plugin's extension point (ignored when that plugin is not loaded). */
  extend<T>(point: ExtensionPoint<T>, contribution: T): void;
  /** Runs after every plugin is set up and the server is about to listen. */
  onStart(fn: () => Promise<void> | void): void;
  /** Runs at shutdown, in reverse setup order, after the server stops accepting requests. */
  onStop(fn: () => Promise<void> | void): void;
}

export interface PluginContext<C, D, O = Record<string, never>> extends BaseContext<C> {
  readonly deps: ResolvedDeps<D>;
  /** Services of plugins that may be switched off: `undefined` when their provider is not loaded. */
  readonly optionalDeps: ResolvedOptionalDeps<O>;
  provide<T>(ref: ServiceRef<T>, impl: T): void;
  /** The frozen contributions to one of this plugin's extension points. */
  extensions<T>(point: ExtensionPoint<T>): readonly T[];
  /** Registers routes in an encapsulated fastify context (DESIGN rule 6). */
  routes(fn: (app: App) => Promise<void> | void, opts?: RoutesOptions): void;
}

export interface PluginDefinition<
  C extends TSchema = TSchema,
  D extends Record<string, ServiceRef<unknown>> = Record<string, never>,
  O extends Record<string, ServiceRef<unknown>> = Record<string, never>,
> {
  readonly kind?: 'plugin';
  id: string;
  description: string;
  config?: C;
  permissions?: Record<string, PermissionDecl>;
  entities?: EntitySchema[];
  migrations?: Migration[];
  deps?: D;
  /** Like `deps`, but the plugin still loads when the provider is switched off. */
  optionalDeps?: O;
  provides?: ServiceRef<unknown>[];
  extensionPoints?: ExtensionPoint<unknown>[];
  /** Extension points of other plugins this plugin contributes to (orders it before them). */
  extends?: ExtensionPoint<unknown>[];
  setup(ctx: PluginContext<Static<C>, D, O>): Promise<void> | void;
}

export type AnyPlugin = PluginDefinition<TSchema, Record<string, ServiceRef<unknown>>, Record<string, ServiceRef<unknown>>> & { kind: 'plugin' };

export function definePlugin<
  C extends TSchema = TSchema,
  D extends Record<string, ServiceRef<unknown>> = Record<string, never>,
  O extends Record<string, ServiceRef<unknown>> = Record<string, never>,
>(def: PluginDefinition<C, D, O>): AnyPlugin {
  return { ...def, kind: 'plugin' } as unknown as AnyPlugin;
}

export interface AdapterContext<C, D> extends BaseContext<C> {
  readonly deps: ResolvedDeps<D>;
}

export interface AdapterDefinition<C extends TSchema = TSchema, D extends Record<string, ServiceRef<unknown>> = Record<string, never>> {
  readonly kind?: 'adapter';
  id: string;
  description: string;
  /** The one extension point this adapter extends; its owner is the plugin it belongs to. */
  extends: ExtensionPoint<unknown>;
  config?: C;
  deps?: D;
  entities?: EntitySchema[];
  migrations?: Migration[];
  setup(ctx: AdapterContext<Static<C>, D>): Promise<void> | void;
}

export type AnyAdapter = AdapterDefinition<TSchema, Record<string, ServiceRef<unknown>>> & { kind: 'adapter' };

export function defineAdapter<C extends TSchema = TSchema, D extends Record<string, ServiceRef<unknown>> = Record<string, never>>(
  def: AdapterDefinition<C, D>,
): AnyAdapter {
  return { ...def, kind: 'adapter' } as unknown as AnyAdapter;
}

export class BootError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BootError';
  }
}
