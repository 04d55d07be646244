import t from 'tap';
import { readFileSync } from 'node:fs';
import { adapters } from '../adapters/index.ts';
import { loadConfig, validateConfig } from '../core/config/index.ts';
import { plugins } from '../plugins/index.ts';
import { buildTestApp, createApiKey, setupWorkspace } from '../core/testing/index.ts';
import notes from '../examples/custom-plugin/index.ts';
import workspaces from '../plugins/workspaces/index.ts';

t.test('the custom plugin example works as its comment says', async (t) => {
  const app = await buildTestApp({ plugins: [workspaces, notes], pluginConfig: { notes: { maxLength: 10 } } });
  t.teardown(() => app.close());
  const ws = await setupWorkspace(app);
  const other = await setupWorkspace(app);
  const created = await app.inject({ method: 'POST', url: '/api/v1/notes', headers: ws.auth, payload: { text: 'hello' } });
  t.equal(created.statusCode, 201);
  const long = await app.inject({ method: 'POST', url: '/api/v1/notes', headers: ws.auth, payload: { text: 'far too long for ten' } });
  t.equal(long.statusCode, 400, 'its config applies');
  const id = created.json().id;
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/notes/${id}`, headers: ws.auth })).json().text, 'hello');
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/notes/${id}`, headers: other.auth })).statusCode, 404);
  const viewer = await createApiKey(app, ws.user, ws.handle, { role: 'viewer' });
  const denied = await app.inject({ method: 'POST', url: '/api/v1/notes', headers: { authorization: `Bearer ${viewer.key}` }, payload: { text: 'x' } });
  t.equal(denied.statusCode, 403);
});

t.test('the example config files are valid, plugin sections included', async (t) => {
  const units = [...plugins, ...adapters];
  for (const f of ['examples/config.minimal.json', 'examples/config.full.json']) {
    const c = loadConfig({ TRELLIS_CONFIG_FILE: f, TRELLIS_SECRET_KEY: 'x'.repeat(32) });
    t.ok(c.PORT, f);
    for (const [id, section] of Object.entries(c.plugins)) {
      const unit = units.find((u) => u.id === id);
      t.ok(unit, `${f}: '${id}' is a known plugin or adapter`);
      if (unit?.config) t.doesNotThrow(() => validateConfig(unit.config!, section, `plugins.${id}.`), `${f}: plugins.${id} is valid`);
    }
  }
  t.same(JSON.parse(readFileSync('examples/config.full.json', 'utf8')).plugins.files, { backend: 's3' });
});
