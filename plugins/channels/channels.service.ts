/**
 * Channels, threads and messages: storage (hand-written SQL on the pg pool, every query scoped by
 * workspace), idempotent ingest by `externalId`, adapter config with encrypted secrets, and the
 * outbound delivery queue (pending -> sent/delivered, or failed with the reason; exponential
 * backoff on the job queue; a sweeper re-queues anything left pending by a crash).
 */
import { isUuid } from '../../core/tenancy/index.ts';
import type pg from 'pg';
import { Ajv, type ValidateFunction } from 'ajv';
import * as ajvFormats from 'ajv-formats';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../core/db/index.ts';
import type { EventBus } from '../../core/events/index.ts';
import type { Jobs } from '../../core/jobs/index.ts';
import type { SecretBox } from '../../core/crypto/index.ts';
import { uuidv7 } from '../../core/crypto/index.ts';
import { Conflict, DecodeError, InvalidRequest, NotFound, defineError, decodeIssuesFromAjv, type AjvLikeError } from '../../core/errors/index.ts';
import { PostMessageInputSchema } from './channels.schemas.ts';
import {
  DeliveryError,
  type AdapterChannel,
  type Attachment,
  type ChannelAdapter,
  type ChannelKind,
  type ChannelView,
  type InboundMessage,
  type InboundRequest,
  type MessageAuthor,
  type MessageDirection,
  type MessageKind,
  type MessageStatus,
  type MessageView,
  type StatusUpdate,
  type ThreadStatus,
  type ThreadView,
} from './api.ts';

export const InvalidSignature = defineError('invalid_signature', 401, 'The request signature is missing, invalid, stale or replayed.');

export const DELIVER_QUEUE = 'channels.deliver';
export const SWEEP_QUEUE = 'channels.deliver-sweep';
export const MESSAGE_CREATED = 'channels.message.created';


export interface DeliveryConfig {
  maxAttempts: number;
  backoffMs: number;
  maxBackoffMs: number;
}

type Row = Record<string, unknown>;
type Queryable = Pick<pg.PoolClient, 'query'>;
const iso = (d: unknown): string | null => (d == null ? null : d instanceof Date ? d.toISOString() : new Date(d as string).toISOString());

function channelView(r: Row): ChannelView {
  return {
    id: r.id as string,
    channelConnectionId: (r.channel_connection_id as string | null) ?? null,
    name: r.name as string,
    description: (r.description as string | null) ?? null,
    kind: r.kind as ChannelKind,
    adapter: r.adapter as string,
    externalId: (r.external_id as string | null) ?? null,
    metadata: (r.metadata as Record<string, unknown> | null) ?? null,
    lastMessageAt: iso(r.last_message_at),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

function threadView(r: Row): ThreadView {
  return {
    id: r.id as string,
    channelId: r.channel_id as string,
    title: (r.title as string | null) ?? null,
    status: r.status as ThreadStatus,
    externalId: (r.external_id as string | null) ?? null,
    metadata: (r.metadata as Record<string, unknown> | null) ?? null,
    lastMessageAt: iso(r.last_message_at),
    closedAt: iso(r.closed_at),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

function messageView(r: Row): MessageView {
  const delivery = r.delivery as Record<string, unknown> | null;
  let metadata = (r.metadata as Record<string, unknown> | null) ?? null;
  if (delivery) metadata = { ...(metadata ?? {}), delivery };
  return {
    id: r.id as string,
    channelId: r.channel_id as string,
    threadId: (r.thread_id as string | null) ?? null,
    parentMessageId: (r.parent_message_id as string | null) ?? null,
    externalId: (r.external_id as string | null) ?? null,
    direction: r.direction as MessageDirection,
    status: r.status as MessageStatus,
    kind: r.kind as MessageKind,
    text: (r.text as string | null) ?? null,
    raw: r.raw === undefined ? null : r.raw,
    author: r.author as MessageAuthor,
    metadata,
    attachments: (r.attachments as Attachment[]) ?? [],
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

export interface CreateChannelInput {
  name: string;
  kind: ChannelKind;
  description?: string | null;
  adapter?: string;
  externalId?: string | null;
  metadata?: Record<string, unknown> | null;
  config?: Record<string, unknown>;
}

export interface CreateMessageInput {
  direction: MessageDirection;
  author: MessageAuthor;
  parentMessageId?: string | null;
  externalId?: string | null;
  status?: MessageStatus;
  kind?: MessageKind;
  text?: string | null;
  raw?: unknown;
  metadata?: Record<string, unknown> | null;
  attachments?: Attachment[];
}

/** Channels with their derived `last_message_at` (newest message of the channel). */
const CHANNEL_SELECT = `SELECT c.*, (SELECT max(m.created_at) FROM channels_messages m WHERE m.channel_id = c.id) AS last_message_at FROM channels_channels c`;
/** Threads with their derived `last_message_at`. */
const THREAD_SELECT = `SELECT t.*, (SELECT max(m.created_at) FROM channels_messages m WHERE m.thread_id = t.id) AS last_message_at FROM channels_threads t`;

const STATUS_RANK: Record<string, number> = { pending: 0, received: 0, sent: 1, delivered: 2, failed: 2 };

export class ChannelsService {
  readonly #db: Database;
  readonly #secrets: SecretBox;
  readonly #events: EventBus;
  readonly #jobs: Jobs;
  readonly #log: FastifyBaseLogger;
  readonly #baseUrl: string;
  readonly #delivery: DeliveryConfig;
  readonly #adapters = new Map<string, ChannelAdapter<Record<string, unknown>>>();
  readonly #validators = new Map<string, ValidateFunction>();
  readonly #postMessageInput: ValidateFunction;
  /** Loaded adapters without outbound delivery: outbound messages on their channels are recorded as sent. */
  readonly #recordOnly: string[];

  constructor(deps: { db: Database; secrets: SecretBox; events: EventBus; jobs: Jobs; log: FastifyBaseLogger; baseUrl: string; delivery: DeliveryConfig; adapters: readonly ChannelAdapter<never>[] }) {
    this.#db = deps.db;
    this.#secrets = deps.secrets;
    this.#events = deps.events;
    this.#jobs = deps.jobs;
    this.#log = deps.log;
    this.#baseUrl = deps.baseUrl;
    this.#delivery = deps.delivery;
    const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: false });
    const addFormats = ((ajvFormats as unknown as { default: { default?: unknown } }).default.default ?? (ajvFormats as unknown as { default: unknown }).default) as (a: Ajv) => void;
    addFormats(ajv);
    this.#postMessageInput = ajv.compile(PostMessageInputSchema as object);
    for (const a of deps.adapters as unknown as ChannelAdapter<Record<string, unknown>>[]) {
      if (this.#adapters.has(a.id)) throw new Error(`Two channel adapters named '${a.id}'`);
      this.#adapters.set(a.id, a);
      if (a.config) this.#validators.set(a.id, ajv.compile(a.config as object));
    }
    this.#recordOnly = [...this.#adapters.values()].filter((a) => !a.outbound).map((a) => a.id);
  }

  adapters(): ChannelAdapter<Record<string, unknown>>[] {
    return [...this.#adapters.values()];
  }

  /** The public URL of a request path (the base URL the operator configured + the path). */
  publicUrl(path: string): string {
    return `${this.#baseUrl}${path}`;
  }

  inboundUrl(channelId: string): string {
    return `${this.#baseUrl}/api/v1/channels/${channelId}/inbound`;
  }

  // --- adapter config ---------------------------------------------------------------------

  #validateConfig(adapter: ChannelAdapter<Record<string, unknown>>, config: Record<string, unknown>): Record<string, unknown> {
    const copy = structuredClone(config);
    const validate = this.#validators.get(adapter.id);
    if (validate && !validate(copy)) {
      const issues = decodeIssuesFromAjv((validate.errors ?? []) as AjvLikeError[]).map((i) => ({ ...i, path: ['config', ...i.path] }));
      throw new DecodeError(issues);
    }
    if (!validate && Object.keys(copy).length > 0) throw new DecodeError([{ _tag: 'Unexpected', path: ['config'], message: `adapter '${adapter.id}' takes no config` }]);
    return copy;
  }

  #splitConfig(adapter: ChannelAdapter<Record<string, unknown>>, config: Record<string, unknown>): { plain: Record<string, unknown>; secret: string | null } {
    const plain: Record<string, unknown> = {};
    const secret: Record<string, unknown> = {};
    const names = new Set(adapter.secretFields ?? []);
    for (const [k, v] of Object.entries(config)) (names.has(k) ? secret : plain)[k] = v;
    return { plain, secret: Object.keys(secret).length ? this.#secrets.encrypt(JSON.stringify(secret)) : null };
  }

  #fullConfig(r: Row): Record<string, unknown> {
    const plain = (r.config as Record<string, unknown>) ?? {};
    const secret = r.secrets ? (JSON.parse(this.#secrets.decrypt(r.secrets as string)) as Record<string, unknown>) : {};
    return { ...plain, ...secret };
  }

  #adapterChannel(r: Row): AdapterChannel<Record<string, unknown>> {
    return {
      id: r.id as string,
      workspaceId: r.workspace_id as string,
      kind: r.kind as ChannelKind,
      name: r.name as string,
      externalId: (r.external_id as string | null) ?? null,
      metadata: (r.metadata as Record<string, unknown> | null) ?? null,
      config: this.#fullConfig(r),
      inboundUrl: this.inboundUrl(r.id as string),
    };
  }

  #adapterFor(r: Row): ChannelAdapter<Record<string, unknown>> | undefined {
    return this.#adapters.get(r.adapter as string);
  }

  // --- channels ---------------------------------------------------------------------------

  async listChannels(workspaceId: string): Promise<ChannelView[]> {
    const rows = await this.#db.query(`${CHANNEL_SELECT} WHERE c.workspace_id = $1 ORDER BY c.updated_at DESC, c.id DESC`, [workspaceId]);
    return rows.map(channelView);
  }

  /** `view`: with the derived lastMessageAt; `lock`: the row FOR UPDATE; `plain`: the row. */
  async #channelRow(q: Queryable, workspaceId: string, channelId: string, mode: 'view' | 'lock' | 'plain' = 'view'): Promise<Row> {
    if (!isUuid(channelId)) throw new NotFound('Channel was not found.');
    const sql =
      mode === 'view' ? `${CHANNEL_SELECT} WHERE c.id = $1 AND c.workspace_id = $2` : `SELECT * FROM channels_channels WHERE id = $1 AND workspace_id = $2${mode === 'lock' ? ' FOR UPDATE' : ''}`;
    const { rows } = await q.query(sql, [channelId, workspaceId]);
    if (!rows[0]) throw new NotFound('Channel was not found.');
    return rows[0];
  }

  async getChannel(workspaceId: string, channelId: string): Promise<ChannelView> {
    return channelView(await this.#channelRow(this.#db.pool, workspaceId, channelId));
  }

  async createChannel(workspaceId: string, input: CreateChannelInput): Promise<ChannelView> {
    const adapterId = input.adapter ?? (input.kind === 'custom' ? undefined : input.kind);
    if (!adapterId) throw new InvalidRequest("A channel of kind 'custom' needs an `adapter`.", { field: 'adapter' });
    const adapter = this.#adapters.get(adapterId);
    if (!adapter) {
      throw new InvalidRequest(`Unknown channel adapter '${adapterId}'. Loaded adapters: ${[...this.#adapters.keys()].join(', ') || 'none'}.`, { field: 'adapter', adapter: adapterId });
    }
    if (!adapter.kinds.includes(input.kind)) {
      throw new InvalidRequest(`Adapter '${adapterId}' does not serve channels of kind '${input.kind}' (it serves: ${adapter.kinds.join(', ')}).`, { field: 'kind' });
    }
    const config = this.#validateConfig(adapter, input.config ?? {});
    const { plain, secret } = this.#splitConfig(adapter, config);
    const id = uuidv7();
    const now = new Date();
    return this.#db.transaction(async (c) => {
      const { rows } = await c.query(
        `INSERT INTO channels_channels (id, workspace_id, name, description, kind, adapter, external_id, metadata, config, secrets, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $11) RETURNING *`,
        [id, workspaceId, input.name, input.description ?? null, input.kind, adapterId, input.externalId ?? null, json(input.metadata ?? null), JSON.stringify(plain), secret, now],
      );
      if (adapter.onChannelSaved) await adapter.onChannelSaved(this.#adapterChannel(rows[0]));
      return channelView(rows[0]);
    });
  }

  async updateChannel(workspaceId: string, channelId: string, patch: Omit<Partial<CreateChannelInput>, 'kind' | 'adapter'>): Promise<ChannelView> {
    return this.#db.transaction(async (c) => {
      const row = await this.#channelRow(c, workspaceId, channelId, 'lock');
      const adapter = this.#adapterFor(row);
      let plain = row.config;
      let secret = row.secrets;
      if (patch.config !== undefined) {
        if (!adapter) throw new InvalidRequest(`The adapter '${row.adapter as string}' of this channel is not loaded.`);
        const next: Record<string, unknown> = { ...this.#fullConfig(row), ...patch.config };
        for (const [k, v] of Object.entries(patch.config)) if (v === null) delete next[k]; // null unsets an optional field
        const merged = this.#validateConfig(adapter, next);
        ({ plain, secret } = this.#splitConfig(adapter, merged));
      }
      const has = (k: string) => Object.prototype.hasOwnProperty.call(patch, k);
      const { rows } = await c.query(
        `UPDATE channels_channels SET name = $3, description = $4, external_id = $5, metadata = $6::jsonb, config = $7::jsonb, secrets = $8, updated_at = $9
         WHERE id = $1 AND workspace_id = $2 RETURNING *`,
        [
          channelId,
          workspaceId,
          patch.name ?? row.name,
          has('description') ? (patch.description ?? null) : row.description,
          has('externalId') ? (patch.externalId ?? null) : row.external_id,
          json(has('metadata') ? (patch.metadata ?? null) : row.metadata),
          JSON.stringify(plain),
          secret,
          new Date(),
        ],
      );
      if (patch.config !== undefined && adapter?.onChannelSaved) await adapter.onChannelSaved(this.#adapterChannel(rows[0]));
      return channelView(await this.#channelRow(c, workspaceId, channelId));
    });
  }

  async deleteChannel(workspaceId: string, channelId: string): Promise<void> {
    const row = await this.#channelRow(this.#db.pool, workspaceId, channelId, 'plain');
    await this.#db.query(`DELETE FROM channels_channels WHERE id = $1 AND workspace_id = $2`, [channelId, workspaceId]);
    await this.#adapterFor(row)?.onChannelDeleted?.({ id: channelId, workspaceId });
  }

  async adapterInfo(workspaceId: string, channelId: string) {
    const row = await this.#channelRow(this.#db.pool, workspaceId, channelId, 'plain');
    const adapter = this.#adapterFor(row);
    const secretNames = adapter?.secretFields ?? [];
    const stored = row.secrets ? (JSON.parse(this.#secrets.decrypt(row.secrets as string)) as Record<string, unknown>) : {};
    return {
      adapter: row.adapter as string,
      kind: row.kind as ChannelKind,
      config: (row.config as Record<string, unknown>) ?? {},
      secrets: Object.fromEntries(secretNames.map((n) => [n, stored[n] !== undefined && stored[n] !== null && stored[n] !== ''])),
      inboundUrl: adapter?.inbound ? this.inboundUrl(channelId) : null,
      outbound: !!adapter?.outbound,
    };
  }

  // --- threads ----------------------------------------------------------------------------

  async listThreads(workspaceId: string, channelId: string): Promise<ThreadView[]> {
    await this.#channelRow(this.#db.pool, workspaceId, channelId, 'plain');
    const rows = await this.#db.query(
      `SELECT * FROM (${THREAD_SELECT} WHERE t.channel_id = $1 AND t.workspace_id = $2) x
       ORDER BY COALESCE(x.last_message_at, x.created_at) DESC, x.id DESC`,
      [channelId, workspaceId],
    );
    return rows.map(threadView);
  }

  async createThread(workspaceId: string, channelId: string, input: { title?: string | null; status?: ThreadStatus; externalId?: string | null; metadata?: Record<string, unknown> | null }): Promise<ThreadView> {
    await this.#channelRow(this.#db.pool, workspaceId, channelId, 'plain');
    const now = new Date();
    const status = input.status ?? 'open';
    try {
      const rows = await this.#db.query(
        `INSERT INTO channels_threads (id, workspace_id, channel_id, title, status, external_id, metadata, closed_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $9) RETURNING *`,
        [uuidv7(), workspaceId, channelId, input.title ?? null, status, input.externalId ?? null, json(input.metadata ?? null), status === 'closed' ? now : null, now],
      );
      return threadView(rows[0]);
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new Conflict(`A thread with externalId '${input.externalId}' already exists in this channel.`);
      throw err;
    }
  }

  async #threadRow(q: Queryable, workspaceId: string, channelId: string, threadId: string): Promise<Row> {
    await this.#channelRow(q, workspaceId, channelId, 'plain');
    if (!isUuid(threadId)) throw new NotFound('Thread was not found.');
    const { rows } = await q.query(`${THREAD_SELECT} WHERE t.id = $1 AND t.channel_id = $2 AND t.workspace_id = $3`, [threadId, channelId, workspaceId]);
    if (!rows[0]) throw new NotFound('Thread was not found.');
    return rows[0];
  }

  /** Trellis extension: title, status (closing sets closedAt, reopening clears it), externalId, metadata. */
  async updateThread(workspaceId: string, channelId: string, threadId: string, patch: { title?: string | null; status?: ThreadStatus; externalId?: string | null; metadata?: Record<string, unknown> | null }): Promise<ThreadView> {
    const row = await this.#threadRow(this.#db.pool, workspaceId, channelId, threadId);
    const has = (k: string) => Object.prototype.hasOwnProperty.call(patch, k);
    const status = patch.status ?? (row.status as ThreadStatus);
    const closedAt = status === 'closed' ? ((row.status === 'closed' ? row.closed_at : null) ?? new Date()) : status === 'archived' ? (row.closed_at ?? null) : null;
    try {
      await this.#db.query(
        `UPDATE channels_threads SET title = $4, status = $5, external_id = $6, metadata = $7::jsonb, closed_at = $8, updated_at = $9 WHERE id = $1 AND channel_id = $2 AND workspace_id = $3`,
        [
          threadId,
          channelId,
          workspaceId,
          has('title') ? (patch.title ?? null) : row.title,
          status,
          has('externalId') ? (patch.externalId ?? null) : row.external_id,
          json(has('metadata') ? (patch.metadata ?? null) : row.metadata),
          closedAt,
          new Date(),
        ],
      );
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new Conflict(`A thread with externalId '${patch.externalId}' already exists in this channel.`);
      throw err;
    }
    return this.getThread(workspaceId, channelId, threadId);
  }

  async getThread(workspaceId: string, channelId: string, threadId: string): Promise<ThreadView> {
    return threadView(await this.#threadRow(this.#db.pool, workspaceId, channelId, threadId));
  }

  // --- messages ---------------------------------------------------------------------------

  async listMessages(workspaceId: string, channelId: string, threadId: string | null, limit = 200): Promise<MessageView[]> {
    if (threadId) await this.#threadRow(this.#db.pool, workspaceId, channelId, threadId);
    else await this.#channelRow(this.#db.pool, workspaceId, channelId, 'plain');
    const rows = await this.#db.query(
      `SELECT * FROM (SELECT * FROM channels_messages WHERE channel_id = $1 AND workspace_id = $2 AND ${threadId ? 'thread_id = $4' : 'thread_id IS NULL'}
         ORDER BY created_at DESC, id DESC LIMIT $3) m ORDER BY created_at ASC, id ASC`,
      threadId ? [channelId, workspaceId, limit, threadId] : [channelId, workspaceId, limit],
    );
    return rows.map(messageView);
  }

  /**
   * Creates a message through the API (channel level, or in a thread). An `externalId` already
   * stored in this channel returns the stored message with `created: false` (idempotent retry).
   */
  async createMessage(workspaceId: string, channelId: string, threadId: string | null, input: CreateMessageInput): Promise<{ message: MessageView; created: boolean }> {
    if (!isUuid(channelId)) throw new NotFound('Channel was not found.');
    if (threadId !== null && !isUuid(threadId)) throw new NotFound('Thread was not found.');
    const parent = input.parentMessageId ?? null;
    if (parent !== null && !isUuid(parent)) throw new InvalidRequest('parentMessageId does not name a message of this channel.', { field: 'parentMessageId' });
    // One statement (one round trip) for the common case: the channel (tenant-scoped), thread and
    // parent checks, the status from the channel's adapter, and the insert. An outbound message
    // is queued unless the adapter is loaded and does not deliver (`api`, `cron`): an adapter that
    // is not loaded is queued too and fails with that reason, never recorded as sent by mistake.
    const now = new Date();
    const { rows } = await this.#db.pool
      .query(
        `WITH ch AS (
           SELECT id, adapter = ANY($15::text[]) AS recorded FROM channels_channels WHERE id = $3 AND workspace_id = $2
         ), st AS (
           SELECT COALESCE($8::text, CASE WHEN $7::text = 'outbound' THEN CASE WHEN ch.recorded THEN 'sent' ELSE 'pending' END ELSE 'received' END) AS status,
                  $7::text = 'outbound' AND NOT ch.recorded AS deliverable
           FROM ch
         )
         INSERT INTO channels_messages (id, workspace_id, channel_id, thread_id, parent_message_id, external_id, direction, status, kind, text, raw, author, metadata, attachments, delivery, delivery_next_at, created_at, updated_at)
         SELECT $1, $2, ch.id, $4::uuid, $5::uuid, $6, $7, st.status, $9, $10, $11::jsonb, $12::jsonb, $13::jsonb, $14::jsonb,
                CASE WHEN st.deliverable AND st.status = 'pending' THEN '{"attempts":0,"error":null}'::jsonb END,
                CASE WHEN st.deliverable AND st.status = 'pending' THEN $16::timestamptz END, $16, $16
         FROM ch, st
         WHERE ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM channels_threads WHERE id = $4::uuid AND channel_id = $3 AND workspace_id = $2))
           AND ($5::uuid IS NULL OR EXISTS (SELECT 1 FROM channels_messages WHERE id = $5::uuid AND channel_id = $3))
         ON CONFLICT (channel_id, external_id) WHERE external_id IS NOT NULL DO NOTHING
         RETURNING *`,
        [
          uuidv7(),
          workspaceId,
          channelId,
          threadId,
          parent,
          input.externalId ?? null,
          input.direction,
          input.status ?? null,
          input.kind ?? 'text',
          input.text ?? null,
          JSON.stringify(input.raw ?? null),
          JSON.stringify(input.author),
          json(input.metadata ?? null),
          JSON.stringify(input.attachments ?? []),
          this.#recordOnly,
          now,
        ],
      )
      .catch((err: unknown) => {
        if ((err as { code?: string }).code === '23503') throw new NotFound('Channel was not found.'); // deleted meanwhile
        throw err;
      });
    if (rows[0]) {
      const message = messageView(rows[0]);
      this.#afterCreate(workspaceId, message, rows[0].delivery != null);
      return { message, created: true };
    }
    // Nothing inserted: say why (the rare path).
    await this.#channelRow(this.#db.pool, workspaceId, channelId, 'plain');
    if (threadId !== null) await this.#threadRow(this.#db.pool, workspaceId, channelId, threadId);
    if (parent !== null && (await this.#db.query(`SELECT 1 FROM channels_messages WHERE id = $1 AND channel_id = $2`, [parent, channelId])).length === 0) {
      throw new InvalidRequest('parentMessageId does not name a message of this channel.', { field: 'parentMessageId' });
    }
    const existing = await this.#db.query(`SELECT * FROM channels_messages WHERE channel_id = $1 AND external_id = $2`, [channelId, input.externalId ?? null]);
    if (!existing[0]) throw new NotFound('Channel was not found.');
    return { message: messageView(existing[0]), created: false };
  }

  async #insertMessage(
    c: Queryable,
    m: Omit<MessageView, 'id' | 'createdAt' | 'updatedAt'> & { workspaceId: string; delivery: Record<string, unknown> | null },
  ): Promise<Row | null> {
    const now = new Date();
    const { rows } = await c.query(
      `INSERT INTO channels_messages (id, workspace_id, channel_id, thread_id, parent_message_id, external_id, direction, status, kind, text, raw, author, metadata, attachments, delivery, delivery_next_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12::jsonb, $13::jsonb, $14::jsonb, $15::jsonb, $16, $17, $17)
       ON CONFLICT (channel_id, external_id) WHERE external_id IS NOT NULL DO NOTHING RETURNING *`,
      [
        uuidv7(),
        m.workspaceId,
        m.channelId,
        m.threadId,
        m.parentMessageId,
        m.externalId,
        m.direction,
        m.status,
        m.kind,
        m.text,
        JSON.stringify(m.raw ?? null),
        JSON.stringify(m.author),
        json(m.metadata),
        JSON.stringify(m.attachments),
        json(m.delivery),
        m.delivery ? now : null,
        now,
      ],
    );
    return rows[0] ?? null;
  }

  #afterCreate(workspaceId: string, message: MessageView, queue: boolean): void {
    this.#events.publish(MESSAGE_CREATED, workspaceId, { channelId: message.channelId, threadId: message.threadId, message });
    if (queue) {
      this.#jobs.send(DELIVER_QUEUE, { messageId: message.id }).catch((err: unknown) => this.#log.error({ err, messageId: message.id }, 'queueing delivery failed; the sweeper will retry'));
    }
  }

  /** The service other plugins use (ChannelsService in api.ts); input is checked like the route's body. */
  async postMessage(workspaceId: string, channelId: string, input: { text: string | null; threadId?: string | null; direction?: MessageDirection; kind?: MessageKind; author?: MessageAuthor; metadata?: Record<string, unknown> | null }) {
    if (!this.#postMessageInput(input)) {
      const issues = decodeIssuesFromAjv((this.#postMessageInput.errors ?? []) as AjvLikeError[]);
      throw new InvalidRequest(`Invalid message: ${issues.map((i) => `${i.path.join('.') || '(root)'} ${i.message}`).join('; ')}`);
    }
    const { message } = await this.createMessage(workspaceId, channelId, input.threadId ?? null, {
      direction: input.direction ?? 'outbound',
      author: input.author ?? { role: 'system' },
      kind: input.kind,
      text: input.text,
      metadata: input.metadata ?? null,
    });
    return { id: message.id, channelId: message.channelId, threadId: message.threadId, status: message.status };
  }

  // --- inbound ----------------------------------------------------------------------------

  /** Loads a channel by id alone (public inbound route; the signature is the credential). */
  async #publicChannel(channelId: string): Promise<Row | null> {
    if (!isUuid(channelId)) return null;
    const rows = await this.#db.query(`SELECT * FROM channels_channels WHERE id = $1`, [channelId]);
    return rows[0] ?? null;
  }

  async loadAdapterChannel(channelId: string): Promise<AdapterChannel | null> {
    const row = await this.#publicChannel(channelId);
    return row ? this.#adapterChannel(row) : null;
  }

  async inbound(channelId: string, request: InboundRequest): Promise<{ status: number; contentType?: string; body: unknown }> {
    const row = await this.#publicChannel(channelId);
    const adapter = row ? this.#adapterFor(row) : undefined;
    if (!row || !adapter?.inbound) throw new NotFound('Channel was not found or takes no inbound requests.');
    const channel = this.#adapterChannel(row);
    const result = await adapter.inbound(request, channel);
    if (!result.ok) {
      this.#log.info({ channelId, reason: result.reason }, 'inbound request refused');
      throw new InvalidSignature(`The request was refused: ${result.reason}.`);
    }
    const window = adapter.replayWindowSeconds ?? 600;
    const fast = await this.#inboundFast(row, result, window);
    const out = fast ?? await this.#db.transaction(async (c) => {
      if (result.replayKey) {
        // A key already stored and not yet expired is a replay; an expired one is taken over.
        const { rows } = await c.query(
          `INSERT INTO channels_replay_keys (channel_id, key, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
           ON CONFLICT (channel_id, key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE channels_replay_keys.expires_at < now() RETURNING 1`,
          [channelId, result.replayKey, window],
        );
        if (rows.length === 0) throw new InvalidSignature('The request was refused: replayed signature.');
      }
      const ingested = await this.#ingest(c, row, result.messages ?? []);
      if (result.statusUpdates?.length) await this.#applyStatusUpdates(c, channelId, result.statusUpdates);
      return ingested;
    });
    for (const m of out.created) this.#afterCreate(row.workspace_id as string, m, false);
    if (result.reply) return { status: result.reply.status ?? 200, contentType: result.reply.contentType, body: result.reply.body };
    return { status: 200, body: { received: out.created.length, duplicates: out.duplicates } };
  }

  /**
   * The common inbound case in one statement (one round trip, atomic without BEGIN/COMMIT): one
   * message, no references, no status updates, its thread (if any) already known. Stores the
   * replay key and the message together; returns null when the general path is needed (nothing
   * was written then).
   */
  async #inboundFast(channel: Row, result: { replayKey?: string; messages?: InboundMessage[]; statusUpdates?: StatusUpdate[] }, window: number): Promise<{ created: MessageView[]; duplicates: number } | null> {
    const m = result.messages?.length === 1 ? result.messages[0] : undefined;
    if (!m || result.statusUpdates?.length || m.references?.length) return null;
    const rows = await this.#db.query<{ thread_ok: boolean; fresh: number; message: Row | null }>(
      `WITH th AS (
         SELECT id FROM channels_threads WHERE channel_id = $1 AND $12::text IS NOT NULL AND external_id = $12
       ), ok AS (
         SELECT ($12::text IS NULL OR EXISTS (SELECT 1 FROM th)) AS v
       ), rk AS (
         INSERT INTO channels_replay_keys (channel_id, key, expires_at)
         SELECT $1, $13, now() + make_interval(secs => $14::double precision) WHERE $13::text IS NOT NULL AND (SELECT v FROM ok)
         ON CONFLICT (channel_id, key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE channels_replay_keys.expires_at < now()
         RETURNING 1
       ), ins AS (
         INSERT INTO channels_messages (id, workspace_id, channel_id, thread_id, external_id, direction, status, kind, text, raw, author, metadata, attachments, created_at, updated_at)
         SELECT $2, $3, $1, (SELECT id FROM th), $4, $5, 'received', $6, $7, $8::jsonb, $9::jsonb, $10::jsonb, $11::jsonb, $15, $15
         WHERE (SELECT v FROM ok) AND ($13::text IS NULL OR EXISTS (SELECT 1 FROM rk))
         ON CONFLICT (channel_id, external_id) WHERE external_id IS NOT NULL DO NOTHING
         RETURNING *
       )
       SELECT (SELECT v FROM ok) AS thread_ok, (SELECT count(*) FROM rk)::int AS fresh, (SELECT row_to_json(ins) FROM ins) AS message`,
      [
        channel.id,
        uuidv7(),
        channel.workspace_id,
        m.externalId,
        m.direction ?? 'inbound',
        m.kind ?? 'text',
        m.text,
        JSON.stringify(m.raw ?? null),
        JSON.stringify(m.author),
        json(m.metadata ?? null),
        JSON.stringify(m.attachments ?? []),
        m.thread?.externalId ?? null,
        result.replayKey ?? null,
        window,
        new Date(),
      ],
    );
    const r = rows[0];
    if (!r.thread_ok) return null;
    if (result.replayKey && r.fresh === 0) throw new InvalidSignature('The request was refused: replayed signature.');
    return r.message ? { created: [messageView(r.message)], duplicates: 0 } : { created: [], duplicates: 1 };
  }

  /** Ingest outside a request (cron, polling adapters). */
  async ingest(channelId: string, messages: InboundMessage[]): Promise<{ created: MessageView[]; duplicates: number }> {
    const row = await this.#publicChannel(channelId);
    if (!row) throw new NotFound('Channel was not found.');
    const out = await this.#db.transaction((c) => this.#ingest(c, row, messages));
    for (const m of out.created) this.#afterCreate(row.workspace_id as string, m, false);
    return out;
  }

  async #ingest(c: Queryable, channel: Row, messages: InboundMessage[]): Promise<{ created: MessageView[]; duplicates: number }> {
    const created: MessageView[] = [];
    let duplicates = 0;
    const channelId = channel.id as string;
    const workspaceId = channel.workspace_id as string;
    for (const m of messages) {
      let threadId: string | null = null;
      let parentMessageId: string | null = null;
      if (m.references?.length) {
        const { rows } = await c.query(
          `SELECT id, thread_id FROM channels_messages WHERE channel_id = $1 AND external_id = ANY($2::text[]) ORDER BY created_at DESC LIMIT 1`,
          [channelId, m.references],
        );
        if (rows[0]) {
          threadId = rows[0].thread_id as string | null;
          parentMessageId = rows[0].id as string;
        }
      }
      if (!threadId && m.thread) {
        // Find, else create (no row lock on an existing thread: concurrent messages do not queue).
        const find = () => c.query(`SELECT id FROM channels_threads WHERE channel_id = $1 AND external_id = $2`, [channelId, m.thread!.externalId]);
        let found = (await find()).rows[0];
        if (!found) {
          const now = new Date();
          found = (
            await c.query(
              `INSERT INTO channels_threads (id, workspace_id, channel_id, title, status, external_id, metadata, created_at, updated_at)
               VALUES ($1, $2, $3, $4, 'open', $5, $6::jsonb, $7, $7)
               ON CONFLICT (channel_id, external_id) WHERE external_id IS NOT NULL DO NOTHING RETURNING id`,
              [uuidv7(), workspaceId, channelId, m.thread.title ?? null, m.thread.externalId, json(m.thread.metadata ?? null), now],
            )
          ).rows[0] ?? (await find()).rows[0];
        }
        threadId = found.id as string;
      }
      const inserted = await this.#insertMessage(c, {
        workspaceId,
        channelId,
        threadId,
        parentMessageId,
        externalId: m.externalId,
        direction: m.direction ?? 'inbound',
        status: 'received',
        kind: m.kind ?? 'text',
        text: m.text,
        raw: m.raw,
        author: m.author,
        metadata: m.metadata ?? null,
        attachments: m.attachments ?? [],
        delivery: null,
      });
      if (inserted) created.push(messageView(inserted));
      else duplicates++;
    }
    return { created, duplicates };
  }

  async #applyStatusUpdates(c: Queryable, channelId: string, updates: StatusUpdate[]): Promise<void> {
    for (const u of updates) {
      const { rows } = await c.query(`SELECT id, status, delivery FROM channels_messages WHERE channel_id = $1 AND external_id = $2 AND direction = 'outbound' FOR UPDATE`, [channelId, u.externalId]);
      const r = rows[0];
      if (!r) continue;
      if (u.status !== 'failed' && STATUS_RANK[u.status] <= STATUS_RANK[r.status as string]) continue;
      if (r.status === 'failed' && u.status === 'failed') continue;
      const delivery = { ...((r.delivery as Row) ?? {}), ...(u.reason ? { error: u.reason } : {}), reportedAt: new Date().toISOString() };
      await c.query(`UPDATE channels_messages SET status = $2, delivery = $3::jsonb, updated_at = now() WHERE id = $1`, [r.id, u.status, JSON.stringify(delivery)]);
    }
  }

  // --- outbound delivery ------------------------------------------------------------------

  /** One delivery attempt (the job handler). Never throws for platform failures. */
  async deliver(messageId: string): Promise<void> {
    if (!isUuid(messageId)) return;
    const leased = await this.#db.query(
      `UPDATE channels_messages SET delivery_lease = now() + interval '2 minutes'
       WHERE id = $1 AND status = 'pending' AND direction = 'outbound' AND (delivery_lease IS NULL OR delivery_lease < now()) RETURNING *`,
      [messageId],
    );
    const row = leased[0];
    if (!row) return;
    const channelRows = await this.#db.query(`SELECT * FROM channels_channels WHERE id = $1`, [row.channel_id]);
    const channelRow = channelRows[0];
    const adapter = channelRow ? this.#adapterFor(channelRow) : undefined;
    const attempt = ((row.delivery_attempts as number) ?? 0) + 1;
    const prev = (row.delivery as Row) ?? {};
    if (!channelRow || !adapter?.outbound) {
      await this.#finish(messageId, 'failed', null, { ...prev, attempts: attempt, error: 'The channel adapter is not loaded.' }, attempt);
      return;
    }
    try {
      const message = messageView(row);
      const thread = row.thread_id ? threadView((await this.#db.query(`${THREAD_SELECT} WHERE t.id = $1`, [row.thread_id]))[0]) : null;
      const last = await this.#db.query(
        `SELECT * FROM channels_messages WHERE channel_id = $1 AND ${row.thread_id ? 'thread_id = $2' : 'thread_id IS NULL'} AND direction = 'inbound' ORDER BY created_at DESC LIMIT 1`,
        row.thread_id ? [row.channel_id, row.thread_id] : [row.channel_id],
      );
      const res = await adapter.outbound({ channel: this.#adapterChannel(channelRow), message, thread, lastInbound: last[0] ? messageView(last[0]) : null, attempt });
      const delivery = { ...prev, ...(res.details ?? {}), attempts: attempt, error: null, lastAttemptAt: new Date().toISOString() };
      await this.#finish(messageId, res.status, res.externalId, delivery, attempt);
    } catch (err) {
      const reason = (err as Error).message || String(err);
      const permanent = err instanceof DeliveryError && err.permanent;
      const delivery = { ...prev, attempts: attempt, error: reason, lastAttemptAt: new Date().toISOString() };
      if (permanent || attempt >= this.#delivery.maxAttempts) {
        this.#log.warn({ messageId, attempt, reason }, 'outbound delivery failed');
        await this.#finish(messageId, 'failed', null, delivery, attempt);
        return;
      }
      const delay = Math.min(this.#delivery.maxBackoffMs, this.#delivery.backoffMs * 2 ** (attempt - 1));
      const next = new Date(Date.now() + delay);
      await this.#db.query(
        `UPDATE channels_messages SET delivery_attempts = $2, delivery = $3::jsonb, delivery_next_at = $4, delivery_lease = NULL, updated_at = now() WHERE id = $1`,
        [messageId, attempt, JSON.stringify(delivery), next],
      );
      await this.#jobs.send(DELIVER_QUEUE, { messageId }, { startAfter: next });
    }
  }

  async #finish(messageId: string, status: MessageStatus, externalId: string | null, delivery: Row, attempt: number): Promise<void> {
    const params = [messageId, status, externalId, JSON.stringify(delivery), attempt];
    const sql = `UPDATE channels_messages SET status = $2, external_id = COALESCE($3, external_id), delivery = $4::jsonb, delivery_attempts = $5,
                 delivery_lease = NULL, delivery_next_at = NULL, updated_at = now() WHERE id = $1`;
    try {
      await this.#db.query(sql, params);
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err;
      // The platform's id is already stored on another message of the channel (an echo): keep it in delivery.
      await this.#db.query(sql, [messageId, status, null, JSON.stringify({ ...delivery, externalId }), attempt]);
    }
  }

  /** Re-queues outbound messages left pending past their due time (a crash between commit and queue). */
  async sweep(): Promise<number> {
    await this.#db.query(`DELETE FROM channels_replay_keys WHERE expires_at < now()`);
    const rows = await this.#db.query<{ id: string }>(
      `SELECT id FROM channels_messages WHERE status = 'pending' AND direction = 'outbound' AND delivery_next_at < now() - interval '1 minute'
       AND (delivery_lease IS NULL OR delivery_lease < now()) LIMIT 500`,
    );
    for (const r of rows) await this.#jobs.send(DELIVER_QUEUE, { messageId: r.id });
    return rows.length;
  }
}
