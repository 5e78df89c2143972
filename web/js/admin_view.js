// The admin console: users, roles x tools matrix, custom HTTP tools, audit log, usage.

import { h, clear, field, fmtDate, fmtDuration, fmtBytes, fmtNumber, toast } from './dom.js';
import * as api from './api.js';
import { renderUsage } from './usage_view.js';
import { renderMcpServers } from './mcp_view.js';
import { renderApprovals } from './approvals_view.js';

const SECTIONS = [
  ['users', 'Users'],
  ['roles', 'Roles & tools'],
  ['tools', 'Custom tools'],
  ['mcp', 'MCP servers'],
  ['approvals', 'Approvals'],
  ['audit', 'Audit log'],
  ['usage', 'Usage'],
];

export function renderAdmin(main, section) {
  if (!SECTIONS.some(([k]) => k === section)) section = 'users';
  const tabs = h('nav', { class: 'admin-tabs', 'aria-label': 'Admin sections' },
    SECTIONS.map(([key, label]) => h('a', { href: `/admin/${key}`, 'data-nav': '', class: 'admin-tab', 'aria-current': key === section ? 'page' : null }, label)));
  const body = h('div', { class: 'admin-body' });
  main.append(h('div', { class: 'admin' },
    h('div', { class: 'admin-head' }, h('h1', null, 'Admin console'), tabs), body));
  const renderers = { users: renderUsers, roles: renderRoles, tools: renderCustomTools, mcp: renderMcpServers, audit: renderAudit, usage: renderUsage, approvals: (b) => renderApprovals(b, unavailable) };
  renderers[section](body);
}

/** Shows a standard "unavailable" note for 404/403 errors; returns true when handled. */
export function unavailable(container, err, what) {
  if (err.status === 401) return true;
  const text = err.status === 404
    ? `${what} is not available on this server yet.`
    : err.status === 403 ? 'This section is for admins only.' : `Could not load ${what.toLowerCase()}: ${err.message}`;
  container.append(h('div', { class: 'banner banner-warn', role: 'status' }, text));
  return true;
}

function loading(container) {
  const l = h('p', { class: 'muted loading' }, 'Loading…');
  container.append(l);
  return l;
}

// ---------------- users ----------------

// Where an account comes from (`source` in the admin users API).
const SOURCE_LABELS = { password: 'password', sso: 'SSO', scim: 'SCIM' };
const SOURCE_TITLES = {
  password: 'Local account with a password',
  sso: 'Created at its first single sign-on; no local password',
  scim: 'Provisioned by the identity provider (SCIM); signs in with single sign-on',
};

async function renderUsers(body) {
  clear(body);
  const l = loading(body);
  let users;
  let roles = null;
  try {
    [users, roles] = await Promise.all([
      api.get('/api/admin/users'),
      api.get('/api/admin/roles').catch(() => null),
    ]);
  } catch (err) {
    l.remove();
    unavailable(body, err, 'User management');
    return;
  }
  l.remove();
  const roleNames = roles?.items?.map((r) => r.name) || ['admin', 'member'];
  const roleOptions = (selected) => roleNames.map((r) => h('option', { value: r, selected: r === selected }, r));

  // Create form
  const uname = field('Username', { name: 'new-username', autocomplete: 'off', required: true });
  const pw = field('Password', { name: 'new-password', type: 'password', autocomplete: 'new-password', required: true, minlength: '8', maxlength: '128', 'aria-describedby': 'new-password-rules' });
  pw.wrap.append(h('p', { class: 'field-hint', id: 'new-password-rules' }, '8 to 128 characters.'));
  const roleSel = h('select', { id: 'new-user-role' }, roleOptions('member'));
  const roleField = h('div', { class: 'field' }, h('label', { for: 'new-user-role' }, 'Role'), roleSel);
  const err = h('p', { class: 'form-error', role: 'alert' });
  const create = h('form', { class: 'card inline-form', 'aria-label': 'Create user' },
    h('h2', null, 'Create user'), h('div', { class: 'form-row' }, uname.wrap, pw.wrap, roleField,
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create user')), err);
  create.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    try {
      await api.post('/api/admin/users', { username: uname.input.value.trim(), password: pw.input.value, role: roleSel.value });
      toast(`User ${uname.input.value.trim()} created.`);
      renderUsers(body);
    } catch (e) {
      err.textContent = e.message;
    }
  });

  const rows = (users.items || []).map((u) => {
    const role = h('select', { 'aria-label': `Role for ${u.username}` }, roleOptions(u.role));
    if (!roleNames.includes(u.role)) role.prepend(h('option', { value: u.role, selected: true }, u.role));
    role.addEventListener('change', () => patchUser(u, { role: role.value }, `${u.username} is now ${role.value}.`));
    const disabled = h('input', { type: 'checkbox', checked: u.disabled, id: `dis-${u.id}`, 'aria-label': `Disable ${u.username}` });
    disabled.addEventListener('change', () => patchUser(u, { disabled: disabled.checked }, `${u.username} ${disabled.checked ? 'disabled' : 'enabled'}.`));
    const budget = h('input', { type: 'number', min: '0', step: '1000', class: 'num-input', value: u.token_budget ?? '', placeholder: 'role default', 'aria-label': `Token budget for ${u.username}` });
    const saveBudget = h('button', { type: 'button', class: 'btn btn-small' }, 'Save');
    saveBudget.setAttribute('aria-label', `Save budget for ${u.username}`);
    saveBudget.addEventListener('click', () => {
      const v = budget.value.trim();
      patchUser(u, { token_budget: v === '' ? null : Number(v) }, v === '' ? `${u.username} uses the role budget.` : `Budget for ${u.username} set to ${fmtNumber(v)}.`);
    });
    disabled.addEventListener('change', () => disabled.closest('tr')?.classList.toggle('row-disabled', disabled.checked));
    return h('tr', { class: u.disabled ? 'row-disabled' : null },
      h('th', { scope: 'row' }, u.username),
      h('td', { 'data-label': 'Sign-in' }, h('span', { class: 'pill', title: SOURCE_TITLES[u.source] || '' }, SOURCE_LABELS[u.source] || u.source || 'password')),
      h('td', { 'data-label': 'Role' }, role),
      h('td', { 'data-label': 'Status' }, h('label', { class: 'check', for: `dis-${u.id}` }, disabled, ' Disabled')),
      h('td', { 'data-label': 'Budget override (tokens)' }, h('div', { class: 'inline' }, budget, saveBudget)),
      h('td', { class: 'muted', 'data-label': 'Created' }, fmtDate(u.created_at)));
  });
  async function patchUser(u, change, okText) {
    try {
      const updated = await api.patch(`/api/admin/users/${encodeURIComponent(u.id)}`, change);
      Object.assign(u, updated || change);
      toast(okText);
    } catch (e) {
      toast(`Update failed: ${e.message}`, 'error');
      renderUsers(body);
    }
  }
  body.append(create, h('div', { class: 'card' }, h('h2', null, 'Users'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'data-table stack' },
      h('thead', null, h('tr', null, ['User', 'Sign-in', 'Role', 'Status', 'Budget override (tokens)', 'Created'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, rows)))));
}

// ---------------- roles ----------------

const PERIODS = ['day', 'week', 'month', 'total'];

async function renderRoles(body) {
  clear(body);
  const l = loading(body);
  let roles;
  let tools;
  try {
    roles = await api.get('/api/admin/roles');
  } catch (err) {
    l.remove();
    unavailable(body, err, 'Role management');
    return;
  }
  try { tools = await api.get('/api/admin/tools'); } catch { tools = { items: [] }; }
  l.remove();
  const roleList = (roles.items || []).map((r) => ({ ...r, tools: [...(r.tools || [])], approvals: { ...(r.approvals || {}) }, dirty: false }));
  const toolItems = Array.isArray(tools) ? tools : (tools.items || []);
  // Each MCP server also gets a `{server}__*` row: every tool of that server, present and future.
  const servers = [...new Set(toolItems.filter((t) => t.kind === 'mcp').map((t) => `${t.server}__*`))];
  const toolNames = [...new Set([...toolItems.map((t) => t.name), ...servers, ...roleList.flatMap((r) => r.tools)])].sort();
  const toolInfo = new Map(toolItems.map((t) => [t.name, t]));

  const saveBtn = h('button', { type: 'button', class: 'btn btn-primary', disabled: true }, 'Save changes');
  const status = h('span', { class: 'muted', role: 'status' });
  const table = h('table', { class: 'data-table matrix' });
  const wrap = h('div', { class: 'table-wrap' }, table);
  const markDirty = (r) => { r.dirty = true; saveBtn.disabled = false; status.textContent = 'Unsaved changes'; };

  function draw() {
    clear(table);
    table.append(h('caption', { class: 'visually-hidden' }, 'Tools allowed per role'),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Tool'), roleList.map((r) => h('th', { scope: 'col' }, r.name)))));
    const tbody = h('tbody');
    for (const t of toolNames) {
      const info = toolInfo.get(t);
      tbody.append(h('tr', null,
        h('th', { scope: 'row' }, h('span', { class: 'tool-name' }, t),
          info?.kind === 'custom' ? h('span', { class: 'pill' }, 'custom') : null,
          info?.kind === 'mcp' ? h('span', { class: 'pill', title: 'MCP server' }, `MCP: ${info.server}`) : null,
          t.endsWith('__*') ? h('span', { class: 'pill' }, 'all tools of the server') : null,
          info?.description ? h('span', { class: 'tool-desc' }, info.description) : null),
        roleList.map((r) => {
          const cb = h('input', { type: 'checkbox', checked: r.tools.includes(t), 'aria-label': `Allow ${t} for ${r.name}` });
          cb.addEventListener('change', () => {
            r.tools = cb.checked ? [...r.tools, t] : r.tools.filter((x) => x !== t);
            markDirty(r);
          });
          // Who confirms its calls: left on default, an MCP tool not annotated read-only
          // asks the person chatting.
          const fallback = info?.default_approval || 'none';
          const approval = h('select', { class: 'approval-select', 'aria-label': `Approval of ${t} for ${r.name}` },
            h('option', { value: '' }, `approval: default (${fallback})`),
            ['none', 'user', 'admin'].map((v) => h('option', { value: v, selected: r.approvals[t] === v }, `approval: ${v}`)));
          approval.addEventListener('change', () => {
            if (approval.value) r.approvals[t] = approval.value;
            else delete r.approvals[t];
            markDirty(r);
          });
          return h('td', { class: 'center' }, h('div', { class: 'approval-cell' }, cb, approval));
        })));
    }
    const budgetRow = h('tr', { class: 'matrix-settings' }, h('th', { scope: 'row' }, 'Token budget', h('span', { class: 'tool-desc' }, 'empty = unlimited')),
      roleList.map((r) => {
        const inp = h('input', { type: 'number', min: '0', step: '1000', class: 'num-input', value: r.token_budget ?? '', placeholder: 'unlimited', 'aria-label': `Token budget for ${r.name}` });
        inp.addEventListener('input', () => { r.token_budget = inp.value === '' ? null : Number(inp.value); markDirty(r); });
        return h('td', null, inp);
      }));
    const periodRow = h('tr', { class: 'matrix-settings' }, h('th', { scope: 'row' }, 'Budget period'),
      roleList.map((r) => {
        const sel = h('select', { 'aria-label': `Budget period for ${r.name}` }, PERIODS.map((p) => h('option', { value: p, selected: p === (r.budget_period || 'month') }, p)));
        sel.addEventListener('change', () => { r.budget_period = sel.value; markDirty(r); });
        return h('td', null, sel);
      }));
    tbody.append(budgetRow, periodRow);
    table.append(tbody);
  }
  draw();

  saveBtn.addEventListener('click', async () => {
    saveBtn.disabled = true;
    status.textContent = 'Saving…';
    let failed = 0;
    for (const r of roleList.filter((x) => x.dirty)) {
      try {
        const b = { tools: r.tools, token_budget: r.token_budget ?? null, budget_period: r.budget_period || 'month', approvals: r.approvals || {} };
        await api.put(`/api/admin/roles/${encodeURIComponent(r.name)}`, b);
        r.dirty = false;
      } catch (e) {
        failed += 1;
        toast(`Saving role ${r.name} failed: ${e.message}`, 'error');
      }
    }
    status.textContent = failed ? 'Some changes were not saved' : 'Saved';
    saveBtn.disabled = failed === 0;
    if (!failed) toast('Roles saved.');
  });

  const newRole = field('New role name', { name: 'role-name', pattern: '[a-z0-9_\\-]+', autocomplete: 'off' });
  const addForm = h('form', { class: 'inline-form' }, h('div', { class: 'form-row' }, newRole.wrap, h('button', { type: 'submit', class: 'btn' }, 'Add role')));
  addForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = newRole.input.value.trim().toLowerCase();
    if (!name || roleList.some((r) => r.name === name)) { newRole.input.focus(); return; }
    roleList.push({ name, tools: [], approvals: {}, token_budget: null, budget_period: 'month', dirty: true });
    newRole.input.value = '';
    markDirty(roleList[roleList.length - 1]);
    draw();
  });

  body.append(h('div', { class: 'card' },
    h('h2', null, 'Tool allowlist and budgets'),
    h('p', { class: 'muted' }, 'Tick the tools each role may use, and choose who must approve each call: nobody, the person chatting (user) or an admin. Changes apply to the next turn of every user with that role.'),
    wrap,
    h('div', { class: 'form-actions' }, saveBtn, status),
    addForm));
}

// ---------------- custom tools ----------------

async function renderCustomTools(body) {
  clear(body);
  const l = loading(body);
  let custom;
  let all = null;
  try {
    custom = await api.get('/api/admin/tools/custom');
  } catch (err) {
    l.remove();
    if (err.status === 404) {
      unavailable(body, err, 'Custom HTTP tools');
    } else { unavailable(body, err, 'Custom tools'); }
    try { all = await api.get('/api/admin/tools'); } catch { all = null; }
    if (all) body.append(builtinCard(all));
    return;
  }
  try { all = await api.get('/api/admin/tools'); } catch { all = null; }
  l.remove();
  const items = Array.isArray(custom) ? custom : (custom.items || []);

  const formCard = h('div', { class: 'card' });
  const list = h('div', { class: 'card' }, h('h2', null, 'Custom HTTP tools'));
  if (!items.length) list.append(h('p', { class: 'muted' }, 'No custom tools yet.'));
  const table = h('table', { class: 'data-table' },
    h('thead', null, h('tr', null, ['Name', 'Request', 'Description', ''].map((t) => h('th', { scope: 'col' }, t)))));
  const tbody = h('tbody');
  for (const t of items) {
    const edit = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Edit ${t.name}` }, 'Edit');
    const rm = h('button', { type: 'button', class: 'btn btn-small btn-danger', 'aria-label': `Delete ${t.name}` }, 'Delete');
    edit.addEventListener('click', () => drawForm(t));
    rm.addEventListener('click', async () => {
      if (rm.dataset.confirm !== '1') { rm.dataset.confirm = '1'; rm.textContent = 'Confirm'; return; }
      try {
        await api.del(`/api/admin/tools/custom/${encodeURIComponent(t.name)}`);
        toast(`Tool ${t.name} deleted.`);
        renderCustomTools(body);
      } catch (e) { toast(`Delete failed: ${e.message}`, 'error'); }
    });
    tbody.append(h('tr', null, h('th', { scope: 'row' }, t.name),
      h('td', null, h('code', { class: 'wrap-anywhere' }, `${t.method || 'GET'} ${t.url_template || ''}`)),
      h('td', null, t.description || ''),
      h('td', { class: 'nowrap' }, edit, ' ', rm)));
  }
  table.append(tbody);
  if (items.length) list.append(h('div', { class: 'table-wrap' }, table));

  function drawForm(tool) {
    clear(formCard);
    const editing = Boolean(tool);
    const name = field('Name', { value: tool?.name || '', required: true, pattern: '[a-zA-Z0-9_\\-]+', autocomplete: 'off', readonly: editing || null });
    const desc = field('Description', { value: tool?.description || '', required: true });
    const params = field('Parameters (JSON Schema)', { rows: '6', class: 'mono', spellcheck: 'false' }, 'textarea');
    params.input.value = JSON.stringify(tool?.parameters || { type: 'object', properties: {}, required: [] }, null, 2);
    const method = h('select', { id: 'ct-method' }, ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => h('option', { value: m, selected: m === (tool?.method || 'GET') }, m)));
    const url = field('URL template', { value: tool?.url_template || '', required: true, placeholder: 'https://api.example.com/items/{id}' });
    const headers = field('Headers (JSON object)', { rows: '3', class: 'mono', spellcheck: 'false' }, 'textarea');
    headers.input.value = '{}';
    // Header values are write-only secrets: the API only shows their names.
    const storedHeaders = Array.isArray(tool?.headers) ? tool.headers : Object.keys(tool?.headers || {});
    const headersNote = editing && storedHeaders.length
      ? h('p', { class: 'muted small' }, `Stored headers: ${storedHeaders.join(', ')}. Leave {} to keep them; entering headers replaces them all.`)
      : null;
    const err = h('p', { class: 'form-error', role: 'alert' });
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    cancel.addEventListener('click', () => drawForm(null));
    const form = h('form', { class: 'stack-form' },
      h('h2', null, editing ? `Edit ${tool.name}` : 'Add a custom HTTP tool'),
      h('div', { class: 'form-row' }, name.wrap, h('div', { class: 'field' }, h('label', { for: 'ct-method' }, 'Method'), method)),
      desc.wrap, url.wrap,
      h('p', { class: 'muted small' }, 'Use {param} placeholders in the URL; they are filled from the tool arguments.'),
      params.wrap, headers.wrap, headersNote, err,
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, editing ? 'Save tool' : 'Add tool'), editing ? cancel : null));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      let parameters;
      let hdrs;
      try { parameters = JSON.parse(params.input.value || '{}'); } catch { err.textContent = 'Parameters must be valid JSON.'; params.input.focus(); return; }
      try { hdrs = JSON.parse(headers.input.value || '{}'); } catch { err.textContent = 'Headers must be a valid JSON object.'; headers.input.focus(); return; }
      // Every {placeholder} is filled from an argument of that name: it must be a parameter.
      const known = Object.keys(parameters?.properties || {});
      const unknown = [...url.input.value.matchAll(/\{([^{}]*)\}/g)].map((m) => m[1]).filter((p) => !known.includes(p));
      if (unknown.length) {
        err.textContent = `The URL uses {${unknown[0]}}, which is not a parameter: add "${unknown[0]}" to the schema's properties.`;
        url.input.focus();
        return;
      }
      const payload = { name: name.input.value.trim(), description: desc.input.value.trim(), parameters, method: method.value, url_template: url.input.value.trim(), headers: hdrs };
      try {
        if (editing) await api.put(`/api/admin/tools/custom/${encodeURIComponent(tool.name)}`, payload);
        else await api.post('/api/admin/tools/custom', payload);
        toast(editing ? 'Tool saved.' : 'Tool added. Allow it for roles under “Roles & tools”.');
        renderCustomTools(body);
      } catch (e2) { err.textContent = e2.message; }
    });
    formCard.append(form);
  }
  drawForm(null);
  body.append(list, formCard);
  if (all) body.append(builtinCard(all));
}

function builtinCard(all) {
  const items = (Array.isArray(all) ? all : (all.items || []));
  return h('div', { class: 'card' }, h('h2', null, 'All tools'),
    h('ul', { class: 'tool-catalog' }, items.map((t) => h('li', null,
      h('details', null, h('summary', null, h('span', { class: 'tool-name' }, t.name), ' ', h('span', { class: 'pill' }, t.kind || 'builtin'), ' ', h('span', { class: 'muted' }, t.description || '')),
        h('pre', { class: 'tool-pre' }, JSON.stringify(t.parameters ?? {}, null, 2)))))));
}

// ---------------- audit ----------------

async function renderAudit(body) {
  clear(body);
  const user = field('User', { name: 'user', autocomplete: 'off', placeholder: 'username' });
  const tool = field('Tool', { name: 'tool', autocomplete: 'off', placeholder: 'tool name' });
  const outcome = h('select', { id: 'audit-outcome' }, ['', 'ok', 'error', 'timeout', 'refused'].map((o) => h('option', { value: o }, o || 'any')));
  const decision = h('select', { id: 'audit-decision' }, ['', 'approved', 'denied', 'expired', 'none'].map((o) => h('option', { value: o }, o || 'any')));
  const since = field('Since', { type: 'datetime-local', name: 'since' });
  const until = field('Until', { type: 'datetime-local', name: 'until' });
  const form = h('form', { class: 'card inline-form filters', 'aria-label': 'Audit filters' },
    h('div', { class: 'form-row' }, user.wrap, tool.wrap,
      h('div', { class: 'field' }, h('label', { for: 'audit-outcome' }, 'Outcome'), outcome),
      h('div', { class: 'field' }, h('label', { for: 'audit-decision' }, 'Approval'), decision),
      since.wrap, until.wrap,
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply filters')));
  const tbody = h('tbody');
  const table = h('table', { class: 'data-table audit-table' },
    h('thead', null, h('tr', null, ['Time', 'User', 'Tool', 'Outcome', 'Duration', 'Details'].map((t) => h('th', { scope: 'col' }, t)))), tbody);
  const more = h('button', { type: 'button', class: 'btn' }, 'Load more');
  const info = h('p', { class: 'muted', role: 'status' });
  const results = h('div', { class: 'card' }, h('h2', null, 'Tool calls'), h('div', { class: 'table-wrap' }, table), h('div', { class: 'form-actions' }, more, info));
  body.append(form, results);
  let cursor = null;
  let count = 0;

  const params = () => {
    const q = new URLSearchParams({ limit: '50' });
    if (user.input.value.trim()) q.set('user', user.input.value.trim());
    if (tool.input.value.trim()) q.set('tool', tool.input.value.trim());
    if (outcome.value) q.set('outcome', outcome.value);
    if (decision.value) q.set('decision', decision.value);
    if (since.input.value) q.set('since', new Date(since.input.value).toISOString());
    if (until.input.value) q.set('until', new Date(until.input.value).toISOString());
    return q;
  };
  async function load(reset) {
    const q = params();
    if (!reset && cursor) q.set('cursor', cursor);
    if (reset) { clear(tbody); count = 0; cursor = null; }
    info.textContent = 'Loading…';
    let page;
    try { page = await api.get(`/api/admin/audit?${q}`); } catch (err) {
      info.textContent = '';
      results.hidden = true;
      body.querySelectorAll('.banner').forEach((b) => b.remove());
      unavailable(body, err, 'The audit log');
      return;
    }
    results.hidden = false;
    for (const r of page.items || []) {
      count += 1;
      tbody.append(h('tr', null,
        h('td', { class: 'nowrap' }, fmtDate(r.created_at)),
        h('td', null, r.username || r.user_id || ''),
        h('td', null, h('code', null, r.tool)),
        h('td', null, h('span', { class: `pill outcome-${r.outcome}` }, r.outcome),
          r.approval_decision ? h('span', { class: 'pill', title: `${r.approval_policy} approval${r.approval_decided_at ? ` at ${fmtDate(r.approval_decided_at)}` : ''}${r.approval_note ? `: ${r.approval_note}` : ''}` },
            `${r.approval_decision}${r.approval_decided_by ? ` by ${r.approval_decided_by}` : ''}`) : null),
        h('td', { class: 'nowrap' }, fmtDuration(r.duration_ms)),
        h('td', null, h('details', null, h('summary', null, r.error ? `Error: ${String(r.error).slice(0, 60)}` : 'Arguments'),
          h('pre', { class: 'tool-pre' }, JSON.stringify(r.arguments ?? null, null, 2)),
          r.error ? h('p', { class: 'tool-error' }, r.error) : null,
          h('p', { class: 'muted small' }, [
            r.result_bytes !== undefined && r.result_bytes !== null ? `Result ${fmtBytes(r.result_bytes)}` : null,
            r.conversation_id ? `conversation ${r.conversation_id}` : null,
            r.trace_id ? `trace ${r.trace_id}` : null,
          ].filter(Boolean).join(' · '))))));
    }
    cursor = page.next_cursor || null;
    more.hidden = !cursor;
    info.textContent = count ? `${count} row${count === 1 ? '' : 's'} shown` : 'No tool calls match these filters.';
  }
  form.addEventListener('submit', (ev) => { ev.preventDefault(); load(true); });
  more.addEventListener('click', () => load(false));
  load(true);
}
