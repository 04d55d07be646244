import t from 'tap';
import { buildTestApp } from '../../../core/testing/index.ts';
import consolePages from '../../../plugins/console/index.ts';

const app = await buildTestApp({ plugins: [consolePages] });
t.teardown(() => app.close());

t.test('pages and assets are served with a strict content security policy', async (t) => {
  for (const url of ['/', '/agent-login?code=BCDF-GHJK']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, url);
    t.match(res.headers['content-type'], /text\/html/);
    t.match(res.headers['content-security-policy'], /script-src 'self'/);
    t.match(res.headers['content-security-policy'], /frame-ancestors 'none'/);
    t.equal(res.headers['referrer-policy'], 'no-referrer', 'the login code in the URL does not leak through Referer');
    t.match(res.body, /<script type="module" src="\/console\/assets\/console.js">/);
    t.notMatch(res.body, /<script>(?!<)/, 'no inline script');
  }
  const js = await app.inject({ method: 'GET', url: '/console/assets/console.js' });
  t.equal(js.statusCode, 200);
  t.match(js.headers['content-type'], /javascript/);
  t.notMatch(js.body, /innerHTML/, 'user-provided text is never parsed as HTML');
  const css = await app.inject({ method: 'GET', url: '/console/assets/console.css' });
  t.match(css.headers['content-type'], /text\/css/);
  const missing = await app.inject({ method: 'GET', url: '/console/assets/../../package.json' });
  t.equal(missing.statusCode, 404);
  const other = await app.inject({ method: 'GET', url: '/console/assets/secret.key' });
  t.equal(other.statusCode, 404);
  t.equal(other.json().code, 'not_found');
});
