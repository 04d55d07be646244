/**
 * Configuration: environment variables (and optionally a JSON config file named by
 * `TRELLIS_CONFIG_FILE`) validated by TypeBox at boot. A bad value stops the boot with a message
 * naming the key. Plugins never read `process.env`: each declares a TypeBox schema and receives
 * its slice (`plugins.<id>` in the config file, or `TRELLIS_PLUGIN_<ID>_<KEY>` variables).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Type, { type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';

export const CoreConfigSchema = Type.Object({
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  PORT: Type.Integer({ default: 8787, minimum: 0, maximum: 65535 }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  TRELLIS_DATA_DIR: Type.String({ default: './.data', minLength: 1 }),
  TRELLIS_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://[^/]+' })),
  TRELLIS_SECRET_KEY: Type.Optional(Type.String({ minLength: 32 })),
  /** Comma-separated plugin ids, `all` (default), or `all,-channels` to switch some off. */
  TRELLIS_PLUGINS: Type.String({ default: 'all' }),
  /** Whether anyone may sign up after the first user exists. */
  TRELLIS_OPEN_SIGNUP: Type.Boolean({ default: true }),
  TRELLIS_LOG_LEVEL: Type.Union(
    [Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')],
    { default: 'info' },
  ),
  NODE_ENV: Type.String({ default: 'development' }),
  /** Largest accepted JSON body in bytes. */
  TRELLIS_BODY_LIMIT: Type.Integer({ default: 10 * 1024 * 1024, minimum: 1024 }),
  /** Session lifetime in milliseconds (default 30 days). */
  TRELLIS_SESSION_TTL_MS: Type.Integer({ default: 30 * 24 * 3600 * 1000, minimum: 60_000 }),
  /** Failed sign-ins per email and address before a cool-down. */
  TRELLIS_SIGNIN_MAX_FAILURES: Type.Integer({ default: 5, minimum: 1 }),
  TRELLIS_SIGNIN_LOCKOUT_MS: Type.Integer({ default: 15 * 60 * 1000, minimum: 1000 }),
  /**
   * Outbound destinations allowed even though they are private/loopback (comma-separated hosts
   * and CIDRs), e.g. `10.0.0.5,internal.example` or `127.0.0.1` for local test peers.
   */
  TRELLIS_OUTBOUND_ALLOW: Type.String({ default: '' }),
  /** Size of the database connection pool. */
  TRELLIS_DB_POOL_SIZE: Type.Integer({ default: 10, minimum: 1 }),
});

export type CoreConfig = Static<typeof CoreConfigSchema> & {
  /** Resolved, absolute data directory. */
  dataDir: string;
  /** `{base_url}` of the spec: generated URLs start with it. */
  baseUrl: string;
  /** Raw per-plugin config sections, validated by each plugin's schema at load. */
  plugins: Record<string, Record<string, unknown>>;
};

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const BOOL_TRUE = new Set(['1', 'true', 'yes', 'on']);
const BOOL_FALSE = new Set(['0', 'false', 'no', 'off']);

/** Converts env strings to the schema's types (integers, booleans); leaves anything else alone. */
function coerce(schema: TSchema, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const s = schema as { type?: string };
  if (s.type === 'integer' || s.type === 'number') {
    const n = Number(value);
    return value.trim() !== '' && Number.isFinite(n) ? n : value;
  }
  if (s.type === 'boolean') {
    const v = value.toLowerCase();
    if (BOOL_TRUE.has(v)) return true;
    if (BOOL_FALSE.has(v)) return false;
  }
  if (s.type === 'array') return value.split(',').map((x) => x.trim()).filter(Boolean);
  return value;
}

/**
 * Validates `input` against an object schema with defaults; throws a ConfigError naming every bad
 * key as `<prefix><key>`.
 */
export function validateConfig<T extends TSchema>(schema: T, input: Record<string, unknown>, prefix = ''): Static<T> {
  const props = (schema as unknown as { properties?: Record<string, TSchema> }).properties ?? {};
  const known: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries(props)) {
    if (input[key] !== undefined && input[key] !== '') known[key] = coerce(sub, input[key]);
  }
  const value = Value.Default(schema, known) as Record<string, unknown>;
  const errors = [...Value.Errors(schema, value)];
  if (errors.length > 0) {
    const lines = errors.map((e) => {
      const p = (e as { instancePath?: string }).instancePath ?? '';
      const key = p.split('/').filter(Boolean).join('.') || (e.params as { requiredProperties?: string[] })?.requiredProperties?.join(', ') || '(root)';
      const shown = p ? JSON.stringify(p.split('/').filter(Boolean).reduce<unknown>((o, k) => (o as Record<string, unknown>)?.[k], value)) : '';
      return `  ${prefix}${key}: ${e.message}${shown ? ` (got ${shown})` : ''}`;
    });
    throw new ConfigError(`Invalid configuration:\n${[...new Set(lines)].join('\n')}`);
  }
  return value as Static<T>;
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`TRELLIS_CONFIG_FILE: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the top level must be an object');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`TRELLIS_CONFIG_FILE: ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Collects `TRELLIS_PLUGIN_<ID>_<KEY>=value` variables into `{<id>: {<KEY>: value}}` (ids with `-` use `_`). */
function pluginEnv(env: Record<string, string | undefined>): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, value] of Object.entries(env)) {
    const m = /^TRELLIS_PLUGIN_([A-Z0-9]+(?:_[A-Z0-9]+)*?)__([A-Za-z0-9_]+)$/.exec(name);
    if (!m || value === undefined) continue;
    const id = m[1].toLowerCase().replace(/_/g, '-');
    (out[id] ??= {})[m[2]] = value;
  }
  return out;
}

/**
 * Loads the core config from environment variables and the optional config file. Environment
 * wins over the file. Plugin sections stay raw here and are validated by the loader.
 */
export function loadConfig(env: Record<string, string | undefined> = {}): CoreConfig {
  const file = env.TRELLIS_CONFIG_FILE ? readConfigFile(env.TRELLIS_CONFIG_FILE) : {};
  const { plugins: filePlugins, ...fileCore } = file as { plugins?: Record<string, Record<string, unknown>> };
  const merged: Record<string, unknown> = { ...fileCore };
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') merged[k] = v;
  const core = validateConfig(CoreConfigSchema, merged);
  const dataDir = path.resolve(core.TRELLIS_DATA_DIR);
  const baseUrl = (core.TRELLIS_BASE_URL ?? `http://${core.HOST.includes(':') ? `[${core.HOST}]` : core.HOST}:${core.PORT}`).replace(/\/+$/, '');
  const plugins: Record<string, Record<string, unknown>> = {};
  for (const [id, section] of Object.entries(filePlugins ?? {})) plugins[id] = { ...section };
  for (const [id, section] of Object.entries(pluginEnv(env))) plugins[id] = { ...(plugins[id] ?? {}), ...section };
  return { ...core, dataDir, baseUrl, plugins };
}

export const isProduction = (config: Pick<CoreConfig, 'NODE_ENV'>): boolean => config.NODE_ENV === 'production';
