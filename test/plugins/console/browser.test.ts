/**
 * The console as a person uses it, in headless Chromium (Debian's, driven by playwright-core):
 * sign up, create a workspace, mint and revoke an API key, and approve an agent login that the
 * agent then exchanges for its key. Skipped (visibly) where Chromium is not installed; `.ci/run`
 * installs it.
 */
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { buildTestApp } from '../../../core/testing/index.ts';
import agentAuth from '../../../plugins/agent-auth/index.ts';
import consolePages from '../../../plugins/console/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

function chromiumPath(): string | undefined {
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim() || undefined;
    } catch {
      /* not this one */
    }
  }
  return undefined;
}

const executablePath = chromiumPath();
if (!executablePath) {
  t.skip('the console in a browser: Chromium is not installed (apt-get install -y chromium; .ci/run does this)', async () => {});
} else {
  const { chromium } = await import('playwright-core');
  const app = await buildTestApp({ plugins: [workspaces, agentAuth, consolePages] });
  t.teardown(() => app.close());
  await app.trellis.app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.trellis.app.server.address() as { port: number }).port}`;
  const browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  t.test('sign up, create a workspace, create and revoke an API key', async (t) => {
    await page.goto(`${base}/`);
    await page.getByRole('button', { name: 'New here? Create an account' }).click();
    await page.getByLabel('Email').fill('browser@example.test');
    await page.getByLabel('Password').fill('a long enough password');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByLabel('New workspace').fill('Browser Co');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'API keys of Browser Co' }).waitFor();
    t.match(page.url(), /\?workspace=browser-co$/);

    await page.getByLabel('New key name').fill('from the browser');
    await page.getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('new-key').textContent())!.trim();
    t.match(key, /^trk_[0-9a-f]{32}_/);
    const use = await fetch(`${base}/api/v1/workspaces`, { headers: { authorization: `Bearer ${key}` } });
    t.equal(use.status, 401, 'the key is a real key (session-only route answers session_required)');
    t.equal(((await use.json()) as { code: string }).code, 'session_required');

    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('cell', { name: 'revoked' }).waitFor();
    const [row] = await app.trellis.db.query<{ revoked_at: Date | null }>("SELECT revoked_at FROM core_api_keys WHERE name = 'from the browser'");
    t.ok(row.revoked_at, 'revoked in the database');
    await page.screenshot({ path: `${app.config.dataDir}/console-home.png` });
  });

  t.test('approve an agent login from its verification URL', async (t) => {
    const start = await fetch(`${base}/api/v1/agent/auth/requests`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agentName: 'Browser Agent', agentDescription: 'wants to help', workspaceHandle: 'browser-co', role: 'editor' }),
    });
    const login = (await start.json()) as { userCode: string; deviceCode: string; verificationUriComplete: string };
    const path = new URL(login.verificationUriComplete).pathname + new URL(login.verificationUriComplete).search;
    await page.goto(`${base}${path}`);
    t.equal(await page.getByTestId('user-code').textContent(), login.userCode);
    await page.getByText('Browser Agent', { exact: true }).waitFor();
    t.equal(await page.getByLabel('Workspace').inputValue(), 'browser-co', 'the workspace the agent asked for is preselected');
    await page.getByRole('button', { name: 'Approve' }).click();
    t.match(await page.getByTestId('status').textContent(), /Approved for Browser Co/);
    await page.screenshot({ path: `${app.config.dataDir}/console-agent-login.png` });

    const exchange = await fetch(`${base}/api/v1/agent/auth/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deviceCode: login.deviceCode }) });
    t.equal(exchange.status, 200);
    const { apiKey } = (await exchange.json()) as { apiKey: { role: string } };
    t.equal(apiKey.role, 'editor');

    await page.reload();
    t.match(await page.getByTestId('status').textContent(), /consumed/);
    t.same(errors, [], 'no script errors on the pages');
  });
}
