import t from 'tap';
import Type from 'typebox';
import { loadConfig } from '../../core/config/index.ts';
import {
  createExtensionPoint,
  createServiceRef,
  defineAdapter,
  definePlugin,
  type AnyPlugin,
} from '../../core/registry/index.ts';
import { orderUnits, selectUnits } from '../../core/registry/loader.ts';
import { buildTestApp, setupWorkspace } from '../../core/testing/index.ts';
import workspaces from '../../plugins/workspaces/index.ts';

const greeterRef = createServiceRef<{ greet(name: string): string }>({ id: 'greeter.service', plugin: 'greeter' });
const stylesPoint = createExtensionPoint<{ name: string; wrap(s: string): string }>({ id: 'greeter.styles', plugin: 'greeter' });

const greeter = definePlugin({
  id: 'greeter',
  description: 'provides a service and opens an extension point',
  config: Type.Object({ greeting: Type.String({ default: 'Hello', minLength: 1 }) }),
  permissions: { 'greetings.read': { description: 'read greetings', roles: ['viewer', 'editor'] } },
  provides: [greeterRef],
  extensionPoints: [stylesPoint],
  setup(ctx) {
    const styles = ctx.extensions(stylesPoint);
    ctx.provide(greeterRef, { greet: (n) => styles.reduce((s, st) => st.wrap(s), `${ctx.config.greeting}, ${n}`) });
    ctx.routes((app) => {
      app.get('/greetings/:name', { config: { permission: 'greetings.read' } }, async (request) => ({
        text: `${ctx.config.greeting}, ${(request.params as { name: string }).name}`,
        styles: styles.map((s) => s.name),
      }));
    });
  },
});

const shout = defineAdapter({
  id: 'greeter-shout',
  description: 'an adapter that extends the greeter',
  extends: stylesPoint,
  setup(ctx) {
    ctx.extend(stylesPoint, { name: 'shout', wrap: (s) => s.toUpperCase() });
  },
});

const user = definePlugin({
  id: 'user-of-greeter',
  description: 'uses the greeter service',
  deps: { greeter: greeterRef },
  permissions: { 'welcome.read': { description: 'read', roles: ['viewer'] } },
  setup(ctx) {
    ctx.routes((app) => {
      app.get('/welcome', { config: { permission: 'welcome.read' } }, async () => ({ text: ctx.deps.greeter.greet('you') }));
    });
  },
});

t.test('dependency order, services and extension points work end to end', async (t) => {
  const app = await buildTestApp({ plugins: [workspaces, user, greeter], adapters: [shout], pluginConfig: { greeter: { greeting: 'Hi' } } });
  t.teardown(() => app.close());
  const ws = await setupWorkspace(app);
  const res = await app.inject({ method: 'GET', url: '/api/v1/welcome', headers: ws.auth });
  t.same(res.json(), { text: 'HI, YOU' }, 'the adapter set up before the plugin it extends, the provider before its user');
  const ids = app.trellis.units.map((u) => u.id);
  t.ok(ids.indexOf('greeter-shout') < ids.indexOf('greeter') && ids.indexOf('greeter') < ids.indexOf('user-of-greeter'));
  const plugins = await app.inject({ method: 'GET', url: '/api/v1/plugins', headers: ws.auth });
  const g = plugins.json().items.find((u: { id: string }) => u.id === 'greeter');
  t.same(g.routes, [{ method: 'GET', url: '/api/v1/greetings/:name', plugin: 'greeter', permission: 'greetings.read', auth: null }]);
  t.ok(plugins.json().permissions.some((p: { name: string }) => p.name === 'greetings.read'));
});

t.test('a plugin switched off has no routes, no permissions and its adapters do not load', async (t) => {
  const app = await buildTestApp({ plugins: [workspaces, greeter], adapters: [shout], env: { TRELLIS_PLUGINS: 'all,-greeter' } });
  t.teardown(() => app.close());
  const ws = await setupWorkspace(app);
  const res = await app.inject({ method: 'GET', url: '/api/v1/greetings/bob', headers: ws.auth });
  t.equal(res.statusCode, 404);
  t.equal(res.json().code, 'not_found');
  t.notOk(app.trellis.catalogue.has('greetings.read'));
  t.notOk(app.trellis.units.some((u) => u.id === 'greeter' || u.id === 'greeter-shout'));
  const doc = await app.inject({ method: 'GET', url: '/api/v1/plugins', headers: ws.auth });
  t.notMatch(doc.body, /greetings/);
});

t.test('boot stops on a missing dependency, a cycle, an undeclared route guard or a bad config, naming the culprits', async (t) => {
  await t.rejects(buildTestApp({ plugins: [user] }), /'user-of-greeter' needs service 'greeter.service' from plugin 'greeter', which is not loaded/);

  const aRef = createServiceRef<number>({ id: 'a.svc', plugin: 'a' });
  const bRef = createServiceRef<number>({ id: 'b.svc', plugin: 'b' });
  const a = definePlugin({ id: 'a', description: 'a', deps: { b: bRef }, provides: [aRef], setup: (ctx) => ctx.provide(aRef, 1) });
  const b = definePlugin({ id: 'b', description: 'b', deps: { a: aRef }, provides: [bRef], setup: (ctx) => ctx.provide(bRef, 2) });
  t.throws(() => orderUnits([a, b]), /Plugins 'a' and 'b' depend on each other/);

  const unguarded = definePlugin({
    id: 'unguarded',
    description: 'forgot its permission',
    setup(ctx) {
      ctx.routes((app) => {
        app.get('/open', async () => ({ ok: true }));
      });
    },
  });
  await t.rejects(buildTestApp({ plugins: [unguarded] }), /Route GET \/api\/v1\/open of plugin 'unguarded' declares neither a permission nor an auth mode/);

  const typo = definePlugin({
    id: 'typo',
    description: 'names a permission nobody declares',
    setup(ctx) {
      ctx.routes((app) => {
        app.get('/x', { config: { permission: 'nothing.here' } }, async () => ({}));
      });
    },
  });
  await t.rejects(buildTestApp({ plugins: [typo] }), /needs permission 'nothing.here', which no loaded plugin declares/);

  await t.rejects(buildTestApp({ plugins: [greeter], pluginConfig: { greeter: { greeting: 5 } } }), /plugins\.greeter\.greeting: must be string/);
  t.throws(() => selectUnits('all,-nope', [greeter as AnyPlugin], []), /'nope', which is not a known plugin/);
  t.throws(() => loadConfig({ PORT: 'eighty' }), /PORT: must be integer/);
});
