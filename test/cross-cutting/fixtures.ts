/**
 * Resource factories for the generated tenant-isolation test: for each path parameter name a
 * route uses, how to create such a resource in a workspace (through the API) and return its id.
 * A plugin that adds a route with a new path parameter adds its factory here; the isolation test
 * fails for any parameter without one, so no route escapes the check.
 */
import type { TestApp, WorkspaceFixture } from '../../core/testing/index.ts';

export interface FixtureContext {
  app: TestApp;
  ws: WorkspaceFixture;
  /** Parameters of the same route resolved so far (left to right), e.g. `channelId` for `threadId`. */
  params: Record<string, string>;
}

export type ParamFactory = (c: FixtureContext) => Promise<string>;

/**
 * Path parameter name -> factory. Parameters resolved by core (`workspaceHandle`) are not listed.
 * A generic name used by several plugins (`id`) can be keyed by the route prefix up to and
 * including it instead, e.g. `/api/v1/apps/:id`; that key wins over the bare name.
 */
export const paramFactories: Record<string, ParamFactory> = {
  async userId({ ws }) {
    return ws.user.id;
  },
  async keyId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/api-keys`, headers: ws.user.headers(ws.handle), payload: { name: 'fixture' } });
    return res.json().apiKey.id;
  },
  async credentialId({ app, ws }) {
    const res = await app.inject({
      method: 'POST',
      url: `/api/v1/workspaces/${ws.handle}/credentials`,
      headers: ws.user.headers(ws.handle),
      payload: { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: 'http://127.0.0.1:1/mcp', accessToken: 'fixture' },
    });
    return res.json().id;
  },
  async installationId({ app, ws }) {
    await app.inject({
      method: 'POST',
      url: '/api/v1/notifications/devices',
      headers: ws.user.headers(ws.handle),
      payload: { installationId: 'fixture-device', pushToken: 'ExponentPushToken[fixture]', platform: 'android', permissionStatus: 'granted' },
    });
    return 'fixture-device';
  },
  async agentId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/agents', headers: ws.auth, payload: { name: `Fixture agent ${Date.now()}${Math.random()}` } });
    return res.json().id;
  },
  async chatId({ app, ws, params }) {
    const res = await app.inject({ method: 'POST', url: `/api/v1/agents/${params.agentId}/chats`, headers: ws.auth, payload: {} });
    return res.json().id;
  },
  async userCode({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/agent/auth/requests', payload: { agentName: 'fixture agent', workspaceHandle: ws.handle } });
    return res.json().userCode;
  },
  async invitationId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: `/api/v1/workspaces/${ws.handle}/invitations`, headers: ws.user.headers(ws.handle), payload: { email: 'fixture@example.test' } });
    return res.json().invitation.id;
  },
  // channels plugin (needs the `api` channel adapter loaded)
  async channelId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/channels', headers: ws.auth, payload: { name: 'fixture', kind: 'api' } });
    return res.json().id;
  },
  /** A thread in the route's channel (`params.channelId`), else in a new channel. */
  async threadId({ app, ws, params }) {
    let channelId = params?.channelId;
    if (!channelId) channelId = (await app.inject({ method: 'POST', url: '/api/v1/channels', headers: ws.auth, payload: { name: 'fixture', kind: 'api' } })).json().id;
    const res = await app.inject({ method: 'POST', url: `/api/v1/channels/${channelId}/threads`, headers: ws.auth, payload: { title: 'fixture' } });
    return res.json().id;
  },
  // files plugin (a document: no upload needed)
  async fileId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/files', headers: ws.auth, payload: { mode: 'document', name: 'fixture.md', content: 'fixture' } });
    return res.json().file.id;
  },
  // explorer plugin (a folder node; item nodes are `file:<fileId>`)
  async nodeId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/workspace-nodes/folders', headers: ws.auth, payload: { name: 'fixture' } });
    return res.json().folder.id;
  },
  // data plugin
  async definitionId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/data-definitions', headers: ws.auth, payload: { name: `Fixture ${Date.now()}${Math.random()}`.replace('.', '') } });
    return res.json().id;
  },
  /** A row of the route's definition (`params.definitionId`), else of a new definition. */
  async rowId({ app, ws, params }) {
    let def = params?.definitionId;
    if (!def) def = (await app.inject({ method: 'POST', url: '/api/v1/data-definitions', headers: ws.auth, payload: { name: `Fixture ${Date.now()}${Math.random()}`.replace('.', '') } })).json().id;
    const res = await app.inject({ method: 'POST', url: `/api/v1/data-definitions/${def}/data/upsert-many`, headers: ws.auth, payload: { rows: [{ data: {} }] } });
    return res.json().items[0].id;
  },
  // automations plugin
  async automationId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/automations', headers: ws.auth, payload: { name: `Fixture ${Date.now()}${Math.random()}`.replace('.', ''), scriptSource: 'export default (i) => i' } });
    return res.json().id;
  },
  /** A run of the route's automation (`params.automationId`), else of a new automation. */
  async runId({ app, ws, params }) {
    let id = params?.automationId;
    if (!id) id = (await app.inject({ method: 'POST', url: '/api/v1/automations', headers: ws.auth, payload: { name: `Fixture ${Date.now()}${Math.random()}`.replace('.', ''), scriptSource: 'export default (i) => i' } })).json().id;
    const res = await app.inject({ method: 'POST', url: `/api/v1/automations/${id}/run`, headers: ws.auth, payload: { input: 1 } });
    return res.json().id;
  },
  // workflows plugin
  async workflowId({ app, ws }) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/workflows', headers: ws.auth, payload: { name: `Fixture ${Date.now()}${Math.random()}`.replace('.', ''), code: 'export default (i) => i' } });
    return res.json().id;
  },
  /** Version 1 exists for every workflow. */
  async version() {
    return '1';
  },
};

/**
 * Valid bodies for routes whose body would otherwise fail validation before the resource lookup,
 * keyed `METHOD /api/v1/path/:param` exactly as the route is declared.
 */
export const sampleBodies: Record<string, unknown> = {
  'POST /api/v1/agents/:agentId/chats/:chatId/messages': { content: 'hello' },
  'PATCH /api/v1/workspaces/:workspaceHandle/users/:userId': { role: 'editor' },
  'PATCH /api/v1/channels/:channelId': { name: 'renamed' },
  'POST /api/v1/channels/:channelId/threads': {},
  'POST /api/v1/channels/:channelId/messages': { direction: 'inbound', author: { role: 'user' }, text: 'x' },
  'POST /api/v1/channels/:channelId/threads/:threadId/messages': { direction: 'inbound', author: { role: 'user' }, text: 'x' },
  'PATCH /api/v1/data-definitions/:definitionId': { name: 'renamed' },
  'POST /api/v1/data-definitions/:definitionId/data/upsert-many': { rows: [{ data: {} }] },
  'PATCH /api/v1/data-definitions/:definitionId/data/patch-many': { ids: ['00000000-0000-7000-8000-000000000000'], data: {} },
  'POST /api/v1/data-definitions/:definitionId/data/delete-many': { ids: ['00000000-0000-7000-8000-000000000000'] },
  'POST /api/v1/files/:fileId/parts': { partNumbers: [1] },
  'PATCH /api/v1/workspace-nodes/:nodeId/rename': { name: 'renamed' },
  'POST /api/v1/workspace-nodes/:nodeId/move': { parentId: null },
  'POST /api/v1/files/:fileId/complete': { parts: [{ partNumber: 1, etag: 'x' }] },
};
