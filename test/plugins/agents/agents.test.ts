import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import modelsOpenai from '../../../adapters/models/openai/index.ts';
import { buildTestApp, createApiKey, setupWorkspace } from '../../../core/testing/index.ts';
import agents from '../../../plugins/agents/index.ts';
import credentials from '../../../plugins/credentials/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

/** An OpenAI-compatible chat completions server on 127.0.0.1. */
const calls: { model: string; messages: { role: string; content: string }[] }[] = [];
const llm = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  res.setHeader('content-type', 'application/json');
  if (req.url !== '/v1/chat/completions' || req.method !== 'POST') return res.writeHead(404).end('{}');
  if (req.headers.authorization !== 'Bearer sk-test') return res.writeHead(401).end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } }));
  const body = JSON.parse(Buffer.concat(chunks).toString()) as (typeof calls)[number];
  calls.push(body);
  const last = body.messages.at(-1)!.content;
  if (last.includes('please fail')) return res.writeHead(500).end(JSON.stringify({ error: { message: 'The server had an error', type: 'server_error' } }));
  const system = body.messages.find((m) => m.role === 'system')?.content ?? 'none';
  res.end(
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: `${body.model}-2026`,
      choices: [{ index: 0, message: { role: 'assistant', content: `echo: ${last} | system: ${system} | turns: ${body.messages.length}` }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
    }),
  );
});
await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => llm.close(() => r())));

const app = await buildTestApp({
  plugins: [workspaces, credentials, agents],
  adapters: [modelsOpenai],
  pluginConfig: { 'models-openai': { baseUrl: `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`, apiKey: 'sk-test', defaultModel: 'tiny' } },
});
t.teardown(() => app.close());
const ws = await setupWorkspace(app);
const other = await setupWorkspace(app);
const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = ws.auth) =>
  app.inject({ method, url: `/api/v1${url}`, headers, ...(payload ? { payload } : {}) });

t.test('agents: create, read by id, slug, handle and URL; change; delete', async (t) => {
  const res = await call('POST', '/agents', { name: 'Support Bot', description: 'answers tickets', instructions: 'Be brief.' });
  t.equal(res.statusCode, 201);
  const a = res.json();
  t.match(a, { name: 'Support Bot', handle: 'support-bot', description: 'answers tickets', model: null, instructions: 'Be brief.', capabilities: { webAccess: false, browserAccess: false, objectsAccess: false, linkedCredentialIds: [] } });
  t.equal(a.url, `/w/${ws.handle}/agents/support-bot-${a.id}`);
  t.equal((await call('POST', '/agents', { name: 'Support  bot!' })).statusCode, 409, 'same handle');

  for (const ref of [a.id, `support-bot-${a.id}`, 'support-bot', encodeURIComponent(a.url)]) {
    const got = await call('GET', `/agents/${ref}`);
    t.equal(got.statusCode, 200, ref);
    t.equal(got.json().id, a.id);
  }
  const list = await call('GET', '/agents');
  t.same(list.json().map((x: { id: string }) => x.id), [a.id]);
  t.notOk('instructions' in list.json()[0], 'the summary omits instructions');

  const patched = await call('PATCH', `/agents/${a.id}`, { model: 'big', capabilities: { webAccess: true } });
  t.match(patched.json(), { model: 'big', capabilities: { webAccess: true, browserAccess: false } });
  t.equal((await call('GET', `/agents/${a.id}`, undefined, other.auth)).statusCode, 404, 'another workspace sees nothing');
  const tmp = (await call('POST', '/agents', { name: 'Temp' })).json();
  t.equal((await call('DELETE', `/agents/${tmp.id}`)).statusCode, 204);
  t.equal((await call('GET', `/agents/${tmp.id}`)).statusCode, 404);
});

t.test('linked credentials must be credentials of this workspace', async (t) => {
  const bad = await call('POST', '/agents', { name: 'Linked', capabilities: { linkedCredentialIds: ['cred_nope'] } });
  t.equal(bad.statusCode, 400);
  t.match(bad.json().message, /cred_nope/);
  const cred = await app.inject({
    method: 'POST',
    url: `/api/v1/workspaces/${ws.handle}/credentials`,
    headers: ws.user.headers(ws.handle),
    payload: { credentialKind: 'mcp', type: 'bearerToken', mcpServerUrl: 'http://169.254.169.254/mcp', accessToken: 'x' },
  });
  const ok = await call('POST', '/agents', { name: 'Linked', capabilities: { linkedCredentialIds: [cred.json().id, cred.json().id] } });
  t.equal(ok.statusCode, 201);
  t.same(ok.json().capabilities.linkedCredentialIds, [cred.json().id], 'deduplicated');
  const foreign = await call('POST', '/agents', { name: 'Linked2', capabilities: { linkedCredentialIds: [cred.json().id] } }, other.auth);
  t.equal(foreign.statusCode, 400, "another workspace's credential cannot be linked");
});

t.test('chats: the model answers with the instructions and the history', async (t) => {
  const agent = (await call('GET', '/agents/support-bot')).json();
  const chat = await call('POST', `/agents/support-bot/chats`, {});
  t.equal(chat.statusCode, 201);
  const chatId = chat.json().id;
  const first = await call('POST', `/agents/${agent.id}/chats/${chatId}/messages`, { content: 'Where is my order?' });
  t.equal(first.statusCode, 201);
  const [user, assistant] = first.json().messages;
  t.match(user, { role: 'user', content: 'Where is my order?', status: 'completed' });
  t.match(assistant, { role: 'assistant', status: 'completed', content: 'echo: Where is my order? | system: Be brief. | turns: 2', model: 'big-2026', usage: { promptTokens: 12, completionTokens: 5 } });
  t.equal(calls.at(-1)!.model, 'big', "the agent's model is used");

  const second = await call('POST', `/agents/${agent.id}/chats/${chatId}/messages`, { content: 'Thanks' });
  t.match(second.json().messages[1].content, /turns: 4$/, 'system + three earlier turns');

  const failed = await call('POST', `/agents/${agent.id}/chats/${chatId}/messages`, { content: 'please fail' });
  t.equal(failed.statusCode, 201);
  t.match(failed.json().messages[1], { role: 'assistant', status: 'failed', content: '' });
  t.match(failed.json().messages[1].error, /The server had an error/);

  const after = await call('POST', `/agents/${agent.id}/chats/${chatId}/messages`, { content: 'again' });
  t.match(after.json().messages[1].content, /turns: 7$/, 'the failed answer is not sent back to the model; the user message is');

  const full = await call('GET', `/agents/${agent.id}/chats/${chatId}`);
  t.equal(full.json().messages.length, 8);
  t.equal(full.json().title, 'Where is my order?');
  const chats = await call('GET', `/agents/${agent.id}/chats`);
  t.match(chats.json(), [{ id: chatId, messageCount: 8 }]);
  t.equal((await call('GET', `/agents/${agent.id}/chats/${chatId}`, undefined, other.auth)).statusCode, 404);
  t.equal((await call('GET', `/agents/${agent.id}/chats/00000000-0000-7000-8000-000000000000`)).statusCode, 404);
  t.equal((await call('POST', `/agents/${agent.id}/chats/${chatId}/messages`, { content: '' })).statusCode, 400);
});

t.test('agents are admin-only unless a key is granted them', async (t) => {
  const editor = await createApiKey(app, ws.user, ws.handle, { role: 'editor' });
  const denied = await call('GET', '/agents', undefined, { authorization: `Bearer ${editor.key}` });
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().details.requiredPermission, 'agents.read');
  const granted = await createApiKey(app, ws.user, ws.handle, { role: 'editor', permissions: { agents: ['read', 'chat'] } });
  t.equal((await call('GET', '/agents', undefined, { authorization: `Bearer ${granted.key}` })).statusCode, 200);
  t.equal((await call('POST', '/agents', { name: 'x' }, { authorization: `Bearer ${granted.key}` })).statusCode, 403);
});
