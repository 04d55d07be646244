/**
 * Public API of the channels plugin (the only file other plugins and channel adapters may import).
 *
 * Event published on the core event bus after commit: `channels.message.created`, payload
 * `{channelId, threadId, message}` (`message` is the API representation, see `MessageView`).
 *
 * Channel adapters (`adapters/channels/<kind>/`, or any integrator's package) contribute a
 * `ChannelAdapter` to `channelAdaptersPoint`. The plugin owns storage, HTTP, idempotency, the
 * delivery queue and retries; an adapter only speaks its platform's protocol:
 * - `config`: the per-channel settings (a TypeBox object); fields named in `secretFields` are
 *   encrypted at rest with the core SecretBox and never returned.
 * - `inbound`: verifies a request to `POST /api/v1/channels/{channelId}/inbound` on its RAW body
 *   and maps it to messages (stored idempotently by `externalId`), status updates, or a reply.
 * - `outbound`: sends one `pending` outbound message; the plugin queues it on the job queue,
 *   retries with exponential backoff and records `externalId` and the final status.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { TObject } from 'typebox';
import { createExtensionPoint, createServiceRef } from '../../core/registry/index.ts';

export type ChannelKind = 'api' | 'cron' | 'email' | 'sms' | 'webhook' | 'custom' | 'slack' | 'discord' | 'telegram';
export const CHANNEL_KINDS: readonly ChannelKind[] = ['api', 'cron', 'email', 'sms', 'webhook', 'custom', 'slack', 'discord', 'telegram'];
export type MessageDirection = 'inbound' | 'outbound' | 'internal' | 'system';
export type MessageStatus = 'pending' | 'received' | 'sent' | 'delivered' | 'failed';
export type MessageKind = 'text' | 'event' | 'call' | 'comment' | 'system';
export type ThreadStatus = 'open' | 'closed' | 'archived';

export interface MessageAuthor {
  role: 'user' | 'assistant' | 'agent' | 'system' | 'unknown';
  name?: string;
  email?: string;
  phone?: string;
  avatarUrl?: string;
  externalId?: string;
}

export interface Attachment {
  name: string;
  contentType: string;
  url?: string;
  sizeBytes?: number;
  metadata?: Record<string, unknown>;
}

export interface PostMessageInput {
  text: string | null;
  threadId?: string | null;
  /** Default `outbound`: delivered through the channel's adapter when it has outbound delivery. */
  direction?: MessageDirection;
  kind?: MessageKind;
  /** Default `{role: 'system'}`. */
  author?: MessageAuthor;
  metadata?: Record<string, unknown> | null;
}

export interface ChannelsService {
  /** Posts a message as the platform would through the API; throws NotFound for another workspace's channel. */
  postMessage(workspaceId: string, channelId: string, input: PostMessageInput): Promise<{ id: string; channelId: string; threadId: string | null; status: string }>;
}

export const channelsServiceRef = createServiceRef<ChannelsService>({ id: 'channels.messages', plugin: 'channels' });

// ---------------------------------------------------------------------------------------------
// API representations (as the spec lists them)

export interface ChannelView {
  id: string;
  channelConnectionId: string | null;
  name: string;
  description: string | null;
  kind: ChannelKind;
  adapter: string;
  externalId: string | null;
  metadata: Record<string, unknown> | null;
  lastMessageAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ThreadView {
  id: string;
  channelId: string;
  title: string | null;
  status: ThreadStatus;
  externalId: string | null;
  metadata: Record<string, unknown> | null;
  lastMessageAt: string | null;
  closedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface MessageView {
  id: string;
  channelId: string;
  threadId: string | null;
  parentMessageId: string | null;
  externalId: string | null;
  direction: MessageDirection;
  status: MessageStatus;
  kind: MessageKind;
  text: string | null;
  raw: unknown;
  author: MessageAuthor;
  metadata: Record<string, unknown> | null;
  attachments: Attachment[];
  createdAt: string;
  updatedAt: string;
}

// ---------------------------------------------------------------------------------------------
// The channel-adapter extension point

/** What an adapter sees of a channel: its row, its decrypted config (secrets included). */
export interface AdapterChannel<C = Record<string, unknown>> {
  id: string;
  workspaceId: string;
  kind: ChannelKind;
  name: string;
  externalId: string | null;
  metadata: Record<string, unknown> | null;
  config: C;
  /** The public URL of this channel's inbound route (for signatures over the URL, callbacks). */
  inboundUrl: string;
}

/** One inbound request, exactly as received. */
export interface InboundRequest {
  method: string;
  headers: Record<string, string | undefined>;
  /** The raw body bytes (signatures are verified on these, never on re-serialized JSON). */
  rawBody: Buffer;
  query: Record<string, string>;
  /** The full public URL the platform called (`baseUrl` + path + query). */
  url: string;
  /** Unix seconds, for timestamp tolerance checks. */
  now: number;
}

/** One message the platform delivered; stored once per (channel, externalId). */
export interface InboundMessage {
  externalId: string;
  text: string | null;
  author: MessageAuthor;
  raw: unknown;
  direction?: MessageDirection;
  kind?: MessageKind;
  metadata?: Record<string, unknown> | null;
  attachments?: Attachment[];
  /**
   * The thread it belongs to, by the platform's id (created on first sight with `title`).
   * Omit for channel-level messages.
   */
  thread?: { externalId: string; title?: string | null; metadata?: Record<string, unknown> | null };
  /**
   * External ids of earlier messages this one answers (e-mail In-Reply-To / References): when
   * one is found in this channel, the message joins that message's thread and names it as parent.
   */
  references?: string[];
}

/** A delivery-status report for an earlier outbound message, found by its `externalId`. */
export interface StatusUpdate {
  externalId: string;
  status: 'sent' | 'delivered' | 'failed';
  reason?: string;
}

export type InboundResult =
  /** The signature (or token) did not verify, or is stale: 401, nothing stored. */
  | { ok: false; reason: string }
  | {
      ok: true;
      /**
       * A key unique to this signed request (e.g. the signature itself) remembered for
       * `replayWindowSeconds`: the same key again is a replay (401, nothing stored). Omit when the
       * protocol has no per-request signature (static tokens).
       */
      replayKey?: string;
      messages?: InboundMessage[];
      statusUpdates?: StatusUpdate[];
      /** What to answer (default 200 `{received, duplicates}`): url_verification, PING, TwiML. */
      reply?: { status?: number; contentType?: string; body: unknown };
    };

export interface OutboundContext<C = Record<string, unknown>> {
  channel: AdapterChannel<C>;
  message: MessageView;
  thread: ThreadView | null;
  /** The latest inbound message of the same thread (or channel when no thread): who to answer. */
  lastInbound: MessageView | null;
  /** 1 for the first attempt. */
  attempt: number;
}

export interface OutboundResult {
  /** The platform's id of the sent message (recorded as the message's `externalId`). */
  externalId: string | null;
  /** `sent` (accepted; a status callback may report `delivered`) or `delivered`. */
  status: 'sent' | 'delivered';
  /** Merged into `metadata.delivery`. */
  details?: Record<string, unknown>;
}

/**
 * Thrown (or any Error) by `send`: transient failures are retried with backoff; `permanent` ones
 * (bad credentials, rejected recipient) fail the message at once.
 */
export class DeliveryError extends Error {
  readonly permanent: boolean;
  constructor(message: string, opts: { permanent?: boolean } = {}) {
    super(message);
    this.name = 'DeliveryError';
    this.permanent = opts.permanent ?? false;
  }
}

/** Given to adapters at start: how they create messages outside a request (cron, polling). */
export interface ChannelRuntime {
  /** Stores inbound items for a channel idempotently, exactly as the inbound route does. */
  ingest(channelId: string, messages: InboundMessage[]): Promise<{ created: MessageView[]; duplicates: number }>;
  /** Loads a channel with its decrypted config, or null when it is gone. */
  channel(channelId: string): Promise<AdapterChannel | null>;
}

export interface ChannelAdapter<C = Record<string, unknown>> {
  /** The value of a channel's `adapter` field (e.g. `slack`). */
  id: string;
  /** Channel kinds it may serve (a channel whose kind is not listed is refused with 400). */
  kinds: readonly ChannelKind[];
  description: string;
  /** Per-channel config (a TypeBox object, validated at create and update). */
  config?: TObject;
  /** Names of config fields that are secrets: encrypted at rest, never returned. */
  secretFields?: readonly string[];
  /** Seconds a replay key is remembered (default 600). */
  replayWindowSeconds?: number;
  inbound?: (request: InboundRequest, channel: AdapterChannel<C>) => Promise<InboundResult> | InboundResult;
  outbound?: (ctx: OutboundContext<C>) => Promise<OutboundResult>;
  /** After a channel of this adapter is created or its config changed (schedules, webhooks). */
  onChannelSaved?: (channel: AdapterChannel<C>) => Promise<void>;
  onChannelDeleted?: (channel: { id: string; workspaceId: string }) => Promise<void>;
  /** Once, when the server starts. */
  start?: (runtime: ChannelRuntime) => Promise<void> | void;
}

export const channelAdaptersPoint = createExtensionPoint<ChannelAdapter<never>>({ id: 'channels.adapters', plugin: 'channels' });

/** Typed helper for adapter authors: `channelAdaptersPoint` with a config type. */
export function channelAdapter<C>(adapter: ChannelAdapter<C>): ChannelAdapter<never> {
  return adapter as unknown as ChannelAdapter<never>;
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by adapters

/** A readable reason for a failed `fetch` (undici hides the cause, e.g. ECONNREFUSED, in `cause`). */
export function describeFetchError(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  const cause = e.cause ? (e.cause.code ?? e.cause.message) : undefined;
  return `${e.message ?? String(err)}${cause ? ` (${cause})` : ''}`;
}

export function hmacHex(algorithm: 'sha1' | 'sha256', key: string | Buffer, data: string | Buffer): string {
  return createHmac(algorithm, key).update(data).digest('hex');
}

export function hmacBase64(algorithm: 'sha1' | 'sha256', key: string | Buffer, data: string | Buffer): string {
  return createHmac(algorithm, key).update(data).digest('base64');
}

/** Constant-time comparison of two strings (false on length mismatch). */
export function timingSafeStringEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function standardWebhookKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
}

/**
 * Standard Webhooks (standardwebhooks.com): `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">` (space-separated list), keyed by the base64 part of a `whsec_` secret.
 */
export function signStandardWebhook(secret: string, id: string, timestamp: number, body: string | Buffer): Record<string, string> {
  const sig = hmacBase64('sha256', standardWebhookKey(secret), Buffer.concat([Buffer.from(`${id}.${timestamp}.`), Buffer.from(body)]));
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${sig}` };
}

export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string | undefined>,
  rawBody: Buffer,
  now: number,
  toleranceSeconds = 300,
): { ok: true; id: string; signature: string } | { ok: false; reason: string } {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (!id || !ts || !sigs) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d{1,12}$/.test(ts)) return { ok: false, reason: 'malformed webhook-timestamp' };
  if (Math.abs(now - Number(ts)) > toleranceSeconds) return { ok: false, reason: 'stale webhook-timestamp' };
  const expected = signStandardWebhook(secret, id, Number(ts), rawBody)['webhook-signature'];
  for (const s of sigs.split(' ')) if (timingSafeStringEqual(s, expected)) return { ok: true, id, signature: s };
  return { ok: false, reason: 'signature mismatch' };
}
