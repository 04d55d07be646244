/**
 * Agents (instructions, a model, capabilities) and their chats. A chat message from the user is
 * stored, the agent's instructions and the recent history go to the model provider, and the
 * answer is stored as the assistant's message; a provider failure is stored as a failed assistant
 * message, so the user's message is never lost.
 */
import { uuidv7 } from '../../core/crypto/index.ts';
import type { Database } from '../../core/db/index.ts';
import { Conflict, InvalidRequest, NotFound } from '../../core/errors/index.ts';
import { isUuid, parsePathRef, slugify } from '../../core/tenancy/index.ts';
import type { CredentialsService } from '../credentials/api.ts';
import type { ChatTurn, ModelProvider } from './api.ts';

export interface Capabilities {
  webAccess: boolean;
  browserAccess: boolean;
  objectsAccess: boolean;
  linkedCredentialIds: string[];
}

interface AgentRow {
  id: string;
  handle: string;
  name: string;
  description: string | null;
  model: string | null;
  instructions: string | null;
  capabilities: Capabilities;
  created_at: Date;
  updated_at: Date;
}

interface ChatRow {
  id: string;
  agent_id: string;
  title: string | null;
  last_message_at: Date | null;
  created_at: Date;
  updated_at: Date;
  message_count?: number;
}

interface MessageRow {
  id: string;
  chat_id: string;
  role: 'user' | 'assistant';
  content: string;
  status: 'completed' | 'failed';
  error: string | null;
  model: string | null;
  usage: { promptTokens: number; completionTokens: number } | null;
  created_at: Date;
}

export interface AgentInput {
  name: string;
  handle?: string;
  description?: string | null;
  model?: string | null;
  instructions?: string | null;
  capabilities?: Partial<Capabilities>;
}

const HISTORY = 50;
const DEFAULT_CAPABILITIES: Capabilities = { webAccess: false, browserAccess: false, objectsAccess: false, linkedCredentialIds: [] };
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export class AgentsService {
  readonly #db: Database;
  readonly #providers: readonly ModelProvider[];
  readonly #credentials: CredentialsService | undefined;
  readonly #timeoutMs: number;

  constructor(db: Database, providers: readonly ModelProvider[], credentials: CredentialsService | undefined, timeoutMs: number) {
    this.#db = db;
    this.#providers = providers;
    this.#credentials = credentials;
    this.#timeoutMs = timeoutMs;
  }

  summary(r: AgentRow, workspaceHandle: string) {
    return {
      id: r.id,
      name: r.name,
      handle: r.handle,
      url: `/w/${workspaceHandle}/agents/${slugify(r.name) || 'agent'}-${r.id}`,
      description: r.description,
      model: r.model,
      capabilities: r.capabilities,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    };
  }

  full(r: AgentRow, workspaceHandle: string) {
    return { ...this.summary(r, workspaceHandle), instructions: r.instructions };
  }

  async list(workspaceId: string): Promise<AgentRow[]> {
    return this.#db.query<AgentRow>('SELECT * FROM agents_agents WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC', [workspaceId]);
  }

  /** An agent of the workspace named by a path segment (id, name-id slug, handle or legacy URL). */
  async find(workspaceId: string, segment: string): Promise<AgentRow> {
    const ref = parsePathRef(segment);
    const rows = ref
      ? await this.#db.query<AgentRow>(`SELECT * FROM agents_agents WHERE workspace_id = $1 AND ${'id' in ref ? 'id = $2::uuid' : 'handle = $2'}`, [workspaceId, 'id' in ref ? ref.id : ref.handle])
      : [];
    if (!rows[0]) throw new NotFound('Agent was not found.');
    return rows[0];
  }

  async #capabilities(workspaceId: string, given: Partial<Capabilities> | undefined, base: Capabilities): Promise<Capabilities> {
    const caps = { ...base, ...(given ?? {}) };
    const ids = [...new Set(caps.linkedCredentialIds)];
    if (ids.length) {
      const known = this.#credentials ? await this.#credentials.existing(workspaceId, ids) : new Set<string>();
      const missing = ids.filter((id) => !known.has(id));
      if (missing.length) throw new InvalidRequest(`Unknown credentials in capabilities.linkedCredentialIds: ${missing.join(', ')}.`, { field: 'capabilities.linkedCredentialIds' });
    }
    return { ...caps, linkedCredentialIds: ids };
  }

  async create(workspaceId: string, input: AgentInput): Promise<AgentRow> {
    const handle = input.handle ? slugify(input.handle) : slugify(input.name);
    if (!handle) throw new InvalidRequest('The handle needs at least one letter or digit.', { field: 'handle' });
    const caps = await this.#capabilities(workspaceId, input.capabilities, DEFAULT_CAPABILITIES);
    try {
      const [row] = await this.#db.query<AgentRow>(
        `INSERT INTO agents_agents (id, workspace_id, handle, name, description, model, instructions, capabilities)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
        [uuidv7(), workspaceId, handle, input.name, input.description ?? null, input.model ?? null, input.instructions ?? null, JSON.stringify(caps)],
      );
      return row;
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new Conflict(`An agent with the handle '${handle}' already exists.`, { handle });
      throw err;
    }
  }

  async update(workspaceId: string, segment: string, patch: Partial<AgentInput>): Promise<AgentRow> {
    const cur = await this.find(workspaceId, segment);
    const caps = await this.#capabilities(workspaceId, patch.capabilities, cur.capabilities);
    const handle = patch.handle !== undefined ? slugify(patch.handle) : cur.handle;
    if (!handle) throw new InvalidRequest('The handle needs at least one letter or digit.', { field: 'handle' });
    try {
      const [row] = await this.#db.query<AgentRow>(
        `UPDATE agents_agents SET name = $3, handle = $4, description = $5, model = $6, instructions = $7, capabilities = $8, updated_at = now()
          WHERE id = $1 AND workspace_id = $2 RETURNING *`,
        [
          cur.id, workspaceId, patch.name ?? cur.name, handle,
          patch.description !== undefined ? patch.description : cur.description,
          patch.model !== undefined ? patch.model : cur.model,
          patch.instructions !== undefined ? patch.instructions : cur.instructions,
          JSON.stringify(caps),
        ],
      );
      return row;
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new Conflict(`An agent with the handle '${handle}' already exists.`, { handle });
      throw err;
    }
  }

  async remove(workspaceId: string, segment: string): Promise<void> {
    const a = await this.find(workspaceId, segment);
    await this.#db.query('DELETE FROM agents_agents WHERE id = $1 AND workspace_id = $2', [a.id, workspaceId]);
  }

  // --- chats ---------------------------------------------------------------------------------

  chatView(c: ChatRow) {
    return {
      id: c.id,
      agentId: c.agent_id,
      title: c.title,
      messageCount: Number(c.message_count ?? 0),
      lastMessageAt: iso(c.last_message_at),
      createdAt: c.created_at.toISOString(),
      updatedAt: c.updated_at.toISOString(),
    };
  }

  messageView(m: MessageRow) {
    return { id: m.id, chatId: m.chat_id, role: m.role, content: m.content, status: m.status, error: m.error, model: m.model, usage: m.usage, createdAt: m.created_at.toISOString() };
  }

  async chats(workspaceId: string, agentSegment: string) {
    const a = await this.find(workspaceId, agentSegment);
    const rows = await this.#db.query<ChatRow>(
      `SELECT c.*, (SELECT count(*) FROM agents_messages m WHERE m.chat_id = c.id) AS message_count
         FROM agents_chats c WHERE c.workspace_id = $1 AND c.agent_id = $2 ORDER BY coalesce(c.last_message_at, c.created_at) DESC, c.id DESC`,
      [workspaceId, a.id],
    );
    return rows.map((c) => this.chatView(c));
  }

  async createChat(workspaceId: string, agentSegment: string, title: string | null) {
    const a = await this.find(workspaceId, agentSegment);
    const [c] = await this.#db.query<ChatRow>('INSERT INTO agents_chats (id, workspace_id, agent_id, title) VALUES ($1, $2, $3, $4) RETURNING *', [uuidv7(), workspaceId, a.id, title]);
    return this.chatView(c);
  }

  async #chat(workspaceId: string, agentId: string, chatId: string): Promise<ChatRow> {
    const rows = isUuid(chatId)
      ? await this.#db.query<ChatRow>(
          `SELECT c.*, (SELECT count(*) FROM agents_messages m WHERE m.chat_id = c.id) AS message_count
             FROM agents_chats c WHERE c.id = $1 AND c.workspace_id = $2 AND c.agent_id = $3`,
          [chatId, workspaceId, agentId],
        )
      : [];
    if (!rows[0]) throw new NotFound('Chat was not found.');
    return rows[0];
  }

  async chat(workspaceId: string, agentSegment: string, chatId: string) {
    const a = await this.find(workspaceId, agentSegment);
    const c = await this.#chat(workspaceId, a.id, chatId);
    const messages = await this.#db.query<MessageRow>('SELECT * FROM agents_messages WHERE chat_id = $1 AND workspace_id = $2 ORDER BY created_at, id', [c.id, workspaceId]);
    return { ...this.chatView(c), messages: messages.map((m) => this.messageView(m)) };
  }

  /** Stores the user's message, asks the model, stores and returns both messages. */
  async send(workspaceId: string, agentSegment: string, chatId: string, content: string) {
    const a = await this.find(workspaceId, agentSegment);
    const c = await this.#chat(workspaceId, a.id, chatId);
    const insert = (m: Omit<MessageRow, 'id' | 'chat_id' | 'created_at'>) =>
      this.#db.query<MessageRow>(
        `INSERT INTO agents_messages (id, workspace_id, chat_id, role, content, status, error, model, usage) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
        [uuidv7(), workspaceId, c.id, m.role, m.content, m.status, m.error, m.model, m.usage ? JSON.stringify(m.usage) : null],
      ).then((r) => r[0]);
    const user = await insert({ role: 'user', content, status: 'completed', error: null, model: null, usage: null });
    const history = await this.#db.query<MessageRow>(
      `SELECT * FROM (SELECT * FROM agents_messages WHERE chat_id = $1 AND status = 'completed' ORDER BY created_at DESC, id DESC LIMIT ${HISTORY}) h ORDER BY created_at, id`,
      [c.id],
    );
    const turns: ChatTurn[] = [...(a.instructions ? [{ role: 'system' as const, content: a.instructions }] : []), ...history.map((m) => ({ role: m.role, content: m.content }))];
    const provider = this.#providers[0];
    let assistant: MessageRow;
    if (!provider) {
      assistant = await insert({ role: 'assistant', content: '', status: 'failed', error: 'No model provider is loaded on this server.', model: a.model, usage: null });
    } else {
      const model = a.model ?? provider.defaultModel;
      try {
        const out = await provider.complete({ model, messages: turns, signal: AbortSignal.timeout(this.#timeoutMs) });
        assistant = await insert({ role: 'assistant', content: out.content, status: 'completed', error: null, model: out.model, usage: out.usage });
      } catch (err) {
        assistant = await insert({ role: 'assistant', content: '', status: 'failed', error: `The model provider failed: ${(err as Error).message}`.slice(0, 1000), model, usage: null });
      }
    }
    await this.#db.query(
      `UPDATE agents_chats SET last_message_at = now(), updated_at = now(), title = coalesce(title, $3) WHERE id = $1 AND workspace_id = $2`,
      [c.id, workspaceId, content.slice(0, 80)],
    );
    return { messages: [this.messageView(user), this.messageView(assistant)] };
  }
}
