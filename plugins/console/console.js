// First-party console: sign-in/sign-up, workspaces and API keys, and the agent-login approval
// page. Plain DOM, no framework; every user-provided string goes through textContent.
const api = async (method, path, body, workspace) => {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (workspace) headers['x-workspace-handle'] = workspace;
  const res = await fetch(`/api/v1${path}`, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const msg = data?.issues ? data.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ') : data?.message;
    throw Object.assign(new Error(msg || `HTTP ${res.status}`), { status: res.status, code: data?.code });
  }
  return data;
};

const h = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
};

const main = document.getElementById('main');
const show = (...nodes) => main.replaceChildren(...nodes);
const errorLine = () => h('p', { class: 'error', role: 'alert' });
const fail = (line, err) => (line.textContent = err.message);

async function session() {
  try {
    return await api('GET', '/auth/session');
  } catch (err) {
    if (err.status === 401) return null;
    throw err;
  }
}

function authForm(title, done) {
  let mode = 'sign-in';
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'email', required: true });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true, minlength: 8 });
  const err = errorLine();
  const submit = h('button', { type: 'submit' }, 'Sign in');
  const toggle = h('button', { type: 'button', class: 'secondary', onclick: () => {
    mode = mode === 'sign-in' ? 'sign-up' : 'sign-in';
    submit.textContent = mode === 'sign-in' ? 'Sign in' : 'Create account';
    toggle.textContent = mode === 'sign-in' ? 'New here? Create an account' : 'Have an account? Sign in';
  } }, 'New here? Create an account');
  const form = h('form', { onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    try {
      await api('POST', `/auth/${mode}`, { email: email.value, password: password.value });
      await done();
    } catch (x) { fail(err, x); }
  } }, h('label', { for: 'email' }, 'Email'), email, h('label', { for: 'password' }, 'Password'), password, submit, toggle, err);
  email.id = 'email';
  password.id = 'password';
  show(h('h1', {}, title), form);
}

function whoami(s) {
  const who = document.getElementById('who');
  who.replaceChildren();
  if (!s) return;
  who.append(s.user.email, ' ', h('a', { href: '#', onclick: async (e) => {
    e.preventDefault();
    await api('POST', '/auth/sign-out').catch(() => {});
    location.reload();
  } }, 'Sign out'));
}

// --- agent login approval -------------------------------------------------------------------

async function agentLogin() {
  const params = new URLSearchParams(location.search);
  const s = await session();
  whoami(s);
  if (!s) return authForm('Sign in to approve an agent', agentLogin);
  const code = params.get('code');
  if (!code) {
    const input = h('input', { id: 'code', name: 'code', placeholder: 'XXXX-XXXX', autocomplete: 'off' });
    return show(h('h1', {}, 'Connect an agent'), h('form', { onsubmit: (e) => { e.preventDefault(); location.search = `?code=${encodeURIComponent(input.value.trim())}`; } },
      h('label', { for: 'code' }, 'Code shown by the agent'), input, h('button', { type: 'submit' }, 'Continue')));
  }
  const err = errorLine();
  let req;
  try {
    req = await api('GET', `/agent/auth/requests/${encodeURIComponent(code)}`);
  } catch (x) {
    return show(h('h1', {}, 'Connect an agent'), h('p', { class: 'error' }, x.status === 404 ? `No login request has the code ${code}.` : x.message));
  }
  const details = h('div', {},
    h('p', {}, 'The agent ', h('strong', {}, req.agentName), ' asks for an API key', req.agentDescription ? ` (${req.agentDescription})` : '', '.'),
    h('p', { class: 'code', 'data-testid': 'user-code' }, req.userCode),
    h('p', {}, `Access: ${req.role}`, req.permissions ? ` + ${Object.entries(req.permissions).map(([r, a]) => `${r}: ${a.join(', ')}`).join('; ')}` : '', ` · key name "${req.apiKeyName}"`));
  if (req.status !== 'pending') {
    return show(h('h1', {}, 'Connect an agent'), details, h('p', { class: req.status === 'approved' || req.status === 'consumed' ? 'ok' : 'error', 'data-testid': 'status' }, `This request is ${req.status}.`));
  }
  const admin = s.workspaces.filter((w) => w.role === 'admin');
  if (admin.length === 0) return show(h('h1', {}, 'Connect an agent'), details, h('p', { class: 'error' }, 'You are not an admin of any workspace, so you cannot create keys.'));
  const select = h('select', { id: 'workspace', name: 'workspace' }, admin.map((w) => h('option', { value: w.handle, selected: w.handle === req.requestedWorkspaceHandle }, `${w.name} (${w.handle})`)));
  const decide = (action) => async () => {
    err.textContent = '';
    try {
      const body = action === 'approve' ? { workspaceHandle: select.value } : undefined;
      const r = await api('POST', `/agent/auth/requests/${encodeURIComponent(req.userCode)}/${action}`, body, select.value);
      show(h('h1', {}, 'Connect an agent'), details, h('p', { class: r.status === 'approved' ? 'ok' : 'error', 'data-testid': 'status' },
        r.status === 'approved' ? `Approved for ${r.approvedWorkspace.name}. The agent will finish signing in by itself.` : 'Denied. The agent gets no key.'));
    } catch (x) { fail(err, x); }
  };
  show(h('h1', {}, 'Connect an agent'), details, h('label', { for: 'workspace' }, 'Workspace'), select,
    h('button', { type: 'button', onclick: decide('approve') }, 'Approve'), h('button', { type: 'button', class: 'danger', onclick: decide('deny') }, 'Deny'), err);
}

// --- home: workspaces and API keys ------------------------------------------------------------

async function home() {
  const s = await session();
  whoami(s);
  if (!s) return authForm('Sign in to Trellis', home);
  const selected = new URLSearchParams(location.search).get('workspace');
  const err = errorLine();
  const name = h('input', { id: 'ws-name', name: 'name', required: true });
  const list = h('ul', {}, s.workspaces.map((w) => h('li', {}, h('a', { href: `/?workspace=${encodeURIComponent(w.handle)}` }, w.name), ` (${w.handle}, ${w.role})`)));
  const create = h('form', { onsubmit: async (e) => {
    e.preventDefault();
    try {
      const w = await api('POST', '/workspaces', { name: name.value });
      location.search = `?workspace=${encodeURIComponent(w.handle)}`;
    } catch (x) { fail(err, x); }
  } }, h('label', { for: 'ws-name' }, 'New workspace'), name, h('button', { type: 'submit' }, 'Create'), err);
  const nodes = [h('h1', {}, 'Workspaces'), s.workspaces.length ? list : h('p', {}, 'No workspace yet.'), create];
  const ws = s.workspaces.find((w) => w.handle === selected);
  if (ws && ws.role === 'admin') nodes.push(await apiKeys(ws));
  show(...nodes);
}

async function apiKeys(ws) {
  const section = h('section', {}, h('h2', {}, `API keys of ${ws.name}`));
  const err = errorLine();
  const secret = h('div');
  const rows = h('tbody');
  const refresh = async () => {
    const { items } = await api('GET', `/workspaces/${ws.handle}/api-keys`, undefined, ws.handle);
    rows.replaceChildren(...items.map((k) => h('tr', {}, h('td', {}, k.name), h('td', {}, k.role), h('td', {}, k.prefix + '…'),
      h('td', {}, k.revokedAt ? 'revoked' : k.lastUsedAt ? `used ${new Date(k.lastUsedAt).toLocaleString()}` : 'never used'),
      h('td', {}, k.revokedAt ? '' : h('button', { type: 'button', class: 'danger', onclick: async () => {
        await api('DELETE', `/workspaces/${ws.handle}/api-keys/${k.id}`, undefined, ws.handle).catch((x) => fail(err, x));
        await refresh();
      } }, 'Revoke')))));
  };
  const keyName = h('input', { id: 'key-name', name: 'name', required: true });
  const role = h('select', { id: 'key-role', name: 'role' }, ['admin', 'editor', 'viewer'].map((r) => h('option', { value: r }, r)));
  section.append(
    h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Role', 'Key', 'Use', ''].map((c) => h('th', {}, c)))), rows),
    h('form', { onsubmit: async (e) => {
      e.preventDefault();
      err.textContent = '';
      try {
        const { apiKey } = await api('POST', `/workspaces/${ws.handle}/api-keys`, { name: keyName.value, role: role.value }, ws.handle);
        secret.replaceChildren(h('p', {}, 'Copy this key now; it will not be shown again:'), h('p', { class: 'secret', 'data-testid': 'new-key' }, apiKey.key));
        await refresh();
      } catch (x) { fail(err, x); }
    } }, h('label', { for: 'key-name' }, 'New key name'), keyName, h('label', { for: 'key-role' }, 'Role'), role, h('button', { type: 'submit' }, 'Create key'), err),
    secret,
  );
  await refresh();
  return section;
}

(location.pathname.startsWith('/agent-login') ? agentLogin : home)().catch((err) => show(h('p', { class: 'error' }, err.message)));
