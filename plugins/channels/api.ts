/**
 * Public API of the channels plugin (the only file other plugins and channel adapters may import).
 *
 * Event published on the core event bus after commit: `channels.message.created`, payload
 * `{channelId, threadId, message}`.
 */
import { createServiceRef } from '../../core/registry/index.ts';

export interface MessageAuthor {
  role: 'user' | 'assistant' | 'agent' | 'system' | 'unknown';
  name?: string;
  email?: string;
  phone?: string;
  avatarUrl?: string;
  externalId?: string;
}

export interface PostMessageInput {
  text: string | null;
  threadId?: string | null;
  direction?: 'inbound' | 'outbound' | 'internal' | 'system';
  kind?: 'text' | 'event' | 'call' | 'comment' | 'system';
  author?: MessageAuthor;
  metadata?: Record<string, unknown> | null;
}

export interface ChannelsService {
  /** Posts a message as the platform would through the API; throws NotFound for another workspace's channel. */
  postMessage(workspaceId: string, channelId: string, input: PostMessageInput): Promise<{ id: string; channelId: string; threadId: string | null; status: string }>;
}

export const channelsServiceRef = createServiceRef<ChannelsService>({ id: 'channels.messages', plugin: 'channels' });
