/**
 * Push-notification devices of workspace members, sending through push providers (adapters) and
 * resolving delivery receipts. Push tokens are encrypted at rest; only a masked preview is ever
 * returned. A provider's `DeviceNotRegistered` (on a ticket or a receipt) deactivates the device.
 */
import type { SecretBox } from '../../core/crypto/index.ts';
import type { Database } from '../../core/db/index.ts';
import { InvalidRequest, NotFound } from '../../core/errors/index.ts';
import { DEVICE_NOT_REGISTERED, type PushMessage, type PushProvider, type PushTicket } from './api.ts';

const CHUNK = 100;

interface DeviceRow {
  installation_id: string;
  user_id: string;
  user_name: string | null;
  user_email: string;
  provider: string;
  platform: string;
  permission_status: string;
  push_token_enc: string;
  push_token_preview: string;
  device_name: string | null;
  device_model: string | null;
  os_name: string | null;
  os_version: string | null;
  app_version: string | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  last_registered_at: Date;
  last_seen_at: Date;
  created_at: Date;
  updated_at: Date;
}

export interface RegisterInput {
  installationId: string;
  pushToken: string;
  platform: 'ios' | 'android' | 'web';
  permissionStatus: 'granted' | 'denied' | 'undetermined';
  deviceName?: string | null;
  deviceModel?: string | null;
  osName?: string | null;
  osVersion?: string | null;
  appVersion?: string | null;
}

/** A push message without its recipient, plus optional targets (default: every active device). */
export type SendInput = Omit<PushMessage, 'to'> & { userIds?: string[]; installationIds?: string[] };

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** `ExponentPushToken[abcd…wxyz]`-style preview: enough to recognise, not enough to use. */
export function maskToken(token: string): string {
  if (token.length <= 12) return `${token.slice(0, 2)}…`;
  return `${token.slice(0, 8)}…${token.slice(-4)}`;
}

export function deviceView(r: DeviceRow) {
  return {
    installationId: r.installation_id,
    userId: r.user_id,
    userName: r.user_name ?? r.user_email,
    userEmail: r.user_email,
    platform: r.platform,
    permissionStatus: r.permission_status,
    providerPushTokenPreview: r.push_token_preview,
    deviceName: r.device_name,
    deviceModel: r.device_model,
    osName: r.os_name,
    osVersion: r.os_version,
    appVersion: r.app_version,
    disabledAt: iso(r.disabled_at),
    disabledReason: r.disabled_reason,
    lastRegisteredAt: r.last_registered_at.toISOString(),
    lastSeenAt: r.last_seen_at.toISOString(),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

const DEVICE_SELECT = `SELECT d.*, u.name AS user_name, u.email AS user_email FROM notifications_devices d
  JOIN core_users u ON u.id = d.user_id
  JOIN core_memberships m ON m.workspace_id = d.workspace_id AND m.user_id = d.user_id`;

export class NotificationsService {
  readonly #db: Database;
  readonly #secrets: SecretBox;
  readonly #providers: readonly PushProvider[];

  constructor(db: Database, secrets: SecretBox, providers: readonly PushProvider[]) {
    this.#db = db;
    this.#secrets = secrets;
    this.#providers = providers;
  }

  #provider(id: string): PushProvider | undefined {
    return this.#providers.find((p) => p.id === id);
  }

  /** Registers (or re-registers, re-enabling) the signed-in user's device in the workspace. */
  async register(workspaceId: string, userId: string, input: RegisterInput) {
    const provider = this.#providers.find((p) => p.accepts(input.pushToken));
    if (!provider) throw new InvalidRequest(`The push token is not one any loaded push provider accepts (${this.#providers.map((p) => p.id).join(', ') || 'none loaded'}).`, { field: 'pushToken' });
    await this.#db.query(
      `INSERT INTO notifications_devices (workspace_id, installation_id, user_id, provider, platform, permission_status, push_token_enc, push_token_preview,
         device_name, device_model, os_name, os_version, app_version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (workspace_id, installation_id) DO UPDATE SET user_id = excluded.user_id, provider = excluded.provider, platform = excluded.platform,
         permission_status = excluded.permission_status, push_token_enc = excluded.push_token_enc, push_token_preview = excluded.push_token_preview,
         device_name = excluded.device_name, device_model = excluded.device_model, os_name = excluded.os_name, os_version = excluded.os_version,
         app_version = excluded.app_version, disabled_at = NULL, disabled_reason = NULL, last_registered_at = now(), last_seen_at = now(), updated_at = now()`,
      [
        workspaceId, input.installationId, userId, provider.id, input.platform, input.permissionStatus, this.#secrets.encrypt(input.pushToken), maskToken(input.pushToken),
        input.deviceName ?? null, input.deviceModel ?? null, input.osName ?? null, input.osVersion ?? null, input.appVersion ?? null,
      ],
    );
    const [row] = await this.#db.query<DeviceRow>(`${DEVICE_SELECT} WHERE d.workspace_id = $1 AND d.installation_id = $2`, [workspaceId, input.installationId]);
    return deviceView(row);
  }

  /** Active registrations of current members. */
  async devices(workspaceId: string) {
    const rows = await this.#db.query<DeviceRow>(`${DEVICE_SELECT} WHERE d.workspace_id = $1 AND d.disabled_at IS NULL ORDER BY d.last_registered_at DESC`, [workspaceId]);
    return rows.map(deviceView);
  }

  /** Removes one of the user's own devices. */
  async unregister(workspaceId: string, userId: string, installationId: string): Promise<void> {
    const rows = await this.#db.query('DELETE FROM notifications_devices WHERE workspace_id = $1 AND installation_id = $2 AND user_id = $3 RETURNING 1', [workspaceId, installationId, userId]);
    if (rows.length === 0) throw new NotFound('Device registration was not found.');
  }

  async #deactivate(workspaceId: string, installationIds: string[], reason: string): Promise<void> {
    if (installationIds.length === 0) return;
    await this.#db.query(
      `UPDATE notifications_devices SET disabled_at = now(), disabled_reason = $3, updated_at = now()
        WHERE workspace_id = $1 AND installation_id IN (SELECT jsonb_array_elements_text($2::jsonb)) AND disabled_at IS NULL`,
      [workspaceId, JSON.stringify(installationIds), reason],
    );
  }

  /** Sends to the explicit targets, or to every active registration of the workspace. */
  async send(workspaceId: string, input: SendInput) {
    const params: unknown[] = [workspaceId];
    let where = 'd.workspace_id = $1 AND d.disabled_at IS NULL';
    if (input.userIds) {
      params.push(JSON.stringify(input.userIds));
      where += ` AND d.user_id IN (SELECT jsonb_array_elements_text($${params.length}::jsonb))`;
    }
    if (input.installationIds) {
      params.push(JSON.stringify(input.installationIds));
      where += ` AND d.installation_id IN (SELECT jsonb_array_elements_text($${params.length}::jsonb))`;
    }
    const targets = await this.#db.query<DeviceRow>(`${DEVICE_SELECT} WHERE ${where} ORDER BY d.installation_id`, params);
    const results: {
      installationId: string; userId: string; providerPushTokenPreview: string; ticketId: string | null;
      status: 'ok' | 'error'; message: string | null; error: string | null; details: Record<string, unknown> | null;
    }[] = [];
    const byProvider = new Map<string, DeviceRow[]>();
    for (const d of targets) byProvider.set(d.provider, [...(byProvider.get(d.provider) ?? []), d]);
    for (const [providerId, devices] of byProvider) {
      const provider = this.#provider(providerId);
      for (let i = 0; i < devices.length; i += CHUNK) {
        const chunk = devices.slice(i, i + CHUNK);
        let tickets: PushTicket[];
        if (!provider) {
          tickets = chunk.map(() => ({ status: 'error', ticketId: null, message: `Push provider '${providerId}' is not loaded.`, error: 'ProviderUnavailable', details: null }));
        } else {
          const { userIds: _u, installationIds: _i, ...message } = input;
          const messages: PushMessage[] = chunk.map((d) => ({ ...message, to: this.#secrets.decrypt(d.push_token_enc) }));
          tickets = await provider.send(messages).catch((err: Error) =>
            chunk.map(() => ({ status: 'error' as const, ticketId: null, message: `The push provider failed: ${err.message}`, error: 'ProviderError', details: null })),
          );
        }
        const dead: string[] = [];
        for (const [j, d] of chunk.entries()) {
          const tk = tickets[j] ?? { status: 'error', ticketId: null, message: 'The provider returned no ticket.', error: 'ProviderError', details: null };
          if (tk.error === DEVICE_NOT_REGISTERED) dead.push(d.installation_id);
          results.push({ installationId: d.installation_id, userId: d.user_id, providerPushTokenPreview: d.push_token_preview, ...tk });
        }
        await this.#deactivate(workspaceId, dead, DEVICE_NOT_REGISTERED);
        const ok = chunk.flatMap((d, j) => (tickets[j]?.status === 'ok' && tickets[j].ticketId ? [{ ticket: tickets[j].ticketId, installation: d.installation_id }] : []));
        if (ok.length) {
          await this.#db.query(
            `INSERT INTO notifications_tickets (workspace_id, ticket_id, installation_id, provider)
             SELECT $1, x.ticket, x.installation, $3 FROM jsonb_to_recordset($2::jsonb) AS x(ticket text, installation text) ON CONFLICT DO NOTHING`,
            [workspaceId, JSON.stringify(ok), providerId],
          );
        }
      }
    }
    const acceptedCount = results.filter((r) => r.status === 'ok').length;
    return { registrationCount: targets.length, acceptedCount, failedCount: results.length - acceptedCount, results };
  }

  /** Resolves receipts of tickets this workspace received; DeviceNotRegistered deactivates the device. */
  async receipts(workspaceId: string, items: { installationId: string; receiptId: string }[]) {
    const known = await this.#db.query<{ ticket_id: string; installation_id: string; provider: string }>(
      `SELECT ticket_id, installation_id, provider FROM notifications_tickets
        WHERE workspace_id = $1 AND ticket_id IN (SELECT jsonb_array_elements_text($2::jsonb))`,
      [workspaceId, JSON.stringify(items.map((i) => i.receiptId))],
    );
    const ticket = new Map(known.map((k) => [k.ticket_id, k]));
    const byProvider = new Map<string, string[]>();
    for (const i of items) {
      const k = ticket.get(i.receiptId);
      if (k && k.installation_id === i.installationId) byProvider.set(k.provider, [...(byProvider.get(k.provider) ?? []), i.receiptId]);
    }
    const answers = new Map<string, { status: 'ok' | 'error'; message: string | null; error: string | null; details: Record<string, unknown> | null }>();
    for (const [providerId, ids] of byProvider) {
      const provider = this.#provider(providerId);
      const got = provider ? await provider.receipts(ids).catch((err: Error) => ({ failed: err.message })) : { failed: `Push provider '${providerId}' is not loaded.` };
      for (const id of ids) {
        if ('failed' in got) answers.set(id, { status: 'error', message: `The push provider failed: ${got.failed}`, error: 'ProviderError', details: null });
        else answers.set(id, (got as Record<string, never>)[id] ?? { status: 'error', message: 'The receipt is not available yet; ask again later.', error: 'ReceiptNotReady', details: null });
      }
    }
    const dead = new Set<string>();
    const out = items.map((i) => {
      const k = ticket.get(i.receiptId);
      if (!k || k.installation_id !== i.installationId) {
        return { ...i, status: 'error' as const, message: 'No ticket with this id was sent to this installation in this workspace.', error: 'UnknownReceipt', details: null, deactivated: false };
      }
      const a = answers.get(i.receiptId)!;
      const deactivated = a.error === DEVICE_NOT_REGISTERED;
      if (deactivated) dead.add(i.installationId);
      return { ...i, ...a, deactivated };
    });
    await this.#deactivate(workspaceId, [...dead], DEVICE_NOT_REGISTERED);
    return { items: out };
  }
}
