/**
 * Public API of the notifications plugin: the push-provider extension point.
 */
import { createExtensionPoint } from '../../core/registry/index.ts';

export interface PushMessage {
  to: string;
  title: string;
  body: string;
  data?: Record<string, unknown>;
  subtitle?: string;
  sound?: 'default';
  badge?: number;
  channelId?: string;
  ttlSeconds?: number;
  priority?: 'default' | 'normal' | 'high';
}

/** One provider answer per message, in order. `error` is the provider's error name (e.g. DeviceNotRegistered). */
export interface PushTicket {
  status: 'ok' | 'error';
  ticketId: string | null;
  message: string | null;
  error: string | null;
  details: Record<string, unknown> | null;
}

export interface PushReceipt {
  status: 'ok' | 'error';
  message: string | null;
  error: string | null;
  details: Record<string, unknown> | null;
}

export interface PushProvider {
  /** The provider id; devices register with push tokens of this provider. */
  id: string;
  /** Whether a push token belongs to this provider (e.g. `ExponentPushToken[...]`). */
  accepts(token: string): boolean;
  send(messages: PushMessage[]): Promise<PushTicket[]>;
  receipts(ticketIds: string[]): Promise<Record<string, PushReceipt>>;
}

export const pushProvidersPoint = createExtensionPoint<PushProvider>({ id: 'notifications.providers', plugin: 'notifications' });

/** The provider error that means the token is dead: the registration is deactivated. */
export const DEVICE_NOT_REGISTERED = 'DeviceNotRegistered';
