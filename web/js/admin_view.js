// The admin console: users, roles x tools (and models) matrix, the model catalogue, assistants
// (assistants_admin.js), custom HTTP tools, MCP servers, approvals, the tool-call audit and the admin audit trail, usage. Each section has its own module
// where it grew large.

import { sectionMenu } from './admin_menu.js';
import { h, clear, field, toast } from './dom.js';
import * as api from './api.js';
import { renderUsage } from './usage_view.js';
import { renderMcpServers } from './mcp_view.js';
import { renderApprovals } from './approvals_view.js';
import { unavailable, loading } from './admin_common.js';
import { renderUsers } from './admin_users.js';
import { renderAudit } from './admin_audit.js';
import { renderChanges } from './admin_changes.js';
import { renderConversation } from './admin_conversation.js';
import { renderModels, loadCatalogue, modelChecks, modelsToSave } from './admin_models.js';
import { renderAssistants } from './assistants_admin.js';

export { unavailable };

const SECTIONS = [
  ['users', 'Users'],
  ['roles', 'Roles & tools'],
  ['models', 'Models'],
  ['assistants', 'Assistants'],
  ['tools', 'Custom tools'],
  ['mcp', 'MCP servers'],
  ['approvals', 'Approvals'],
  ['audit', 'Audit log'],
  ['changes', 'Admin changes'],
  ['usage', 'Usage'],
];

/** `section` is the path's second part; `id` the third (a conversation's, for `conversations`). */
export function renderAdmin(main, section, { id = null, me = null } = {}) {
  const reading = section === 'conversations' && id;
  if (!reading && !SECTIONS.some(([k]) => k === section)) section = 'users';
  // A conversation opened from the audit log keeps the audit log's tab current.
  const current = reading ? 'audit' : section;
  const tabs = h('nav', { class: 'admin-tabs', 'aria-label': 'Admin sections' },
    SECTIONS.map(([key, label]) => h('a', { href: `/admin/${key}`, 'data-nav': '', class: 'admin-tab', 'aria-current': key === current ? 'page' : null }, label)));
  const body = h('div', { class: 'admin-body' });
  main.append(h('div', { class: 'admin' },
    h('div', { class: 'admin-head' }, h('h1', null, 'Admin console'), tabs, sectionMenu(SECTIONS, current)), body));
  if (reading) { renderConversation(body, id); return; }
  const renderers = {
    users: (b) => renderUsers(b, me), roles: renderRoles, models: renderModels, assistants: renderAssistants, tools: renderCustomTools, mcp: renderMcpServers,
    audit: renderAudit, changes: renderChanges, usage: renderUsage, approvals: (b) => renderApprovals(b, unavailable),
  };
  renderers[section](body);
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
  let catalogue;
  [tools, catalogue] = await Promise.all([api.get('/api/admin/tools').catch(() => ({ items: [] })), loadCatalogue()]);
  l.remove();
  const roleList = (roles.items || []).map((r) => ({ ...r, tools: [...(r.tools || [])], approvals: { ...(r.approvals || {}) }, models: [...(r.models || [])], dirty: false }));
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
    table.append(h('caption', { class: 'visually-hidden' }, 'Tools and models allowed per role'),
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
    // A money budget in one of the currencies the catalogue prices in (exact decimal text).
    const currencies = catalogueCurrencies(catalogue);
    const moneyRow = currencies.length ? h('tr', { class: 'matrix-settings' }, h('th', { scope: 'row' }, 'Money budget', h('span', { class: 'tool-desc' }, 'empty = none; same period')),
      roleList.map((r) => {
        const amount = h('input', { type: 'text', inputmode: 'decimal', pattern: '[0-9]+(\\.[0-9]+)?', class: 'num-input', value: r.budget_amount ?? '', placeholder: 'none', 'aria-label': `Money budget for ${r.name}` });
        const currency = h('select', { 'aria-label': `Budget currency for ${r.name}` }, currencies.map((c) => h('option', { value: c, selected: c === (r.budget_currency || currencies[0]) }, c)));
        const changed = () => {
          r.budget_amount = amount.value.trim() === '' ? null : amount.value.trim();
          r.budget_currency = r.budget_amount === null ? null : currency.value;
          markDirty(r);
        };
        amount.addEventListener('input', changed);
        currency.addEventListener('change', changed);
        return h('td', null, h('div', { class: 'inline' }, amount, currency));
      })) : null;
    // Which catalogue models the role may use (deny by default; `*` allows all).
    const modelsRow = catalogue ? h('tr', { class: 'matrix-settings' }, h('th', { scope: 'row' }, 'Models', h('span', { class: 'tool-desc' }, 'none ticked = no chat')),
      roleList.map((r) => h('td', null, modelChecks(r, catalogue, () => markDirty(r))))) : null;
    // Whether the role's users may make public chat links (share_dialog.js); org links need nothing.
    const shareRow = h('tr', { class: 'matrix-settings' }, h('th', { scope: 'row' }, 'Public share links', h('span', { class: 'tool-desc' }, 'readable without signing in')),
      roleList.map((r) => {
        const cb = h('input', { type: 'checkbox', checked: Boolean(r.can_share_public), 'aria-label': `${r.name} may make public share links` });
        cb.addEventListener('change', () => { r.can_share_public = cb.checked; markDirty(r); });
        return h('td', { class: 'center' }, cb);
      }));
    // Rows a server lacks are null: `append` would write them as the text "null".
    tbody.append(...[modelsRow, budgetRow, moneyRow, periodRow, shareRow].filter(Boolean));
    table.append(tbody);
  }
  draw();

  saveBtn.addEventListener('click', async () => {
    saveBtn.disabled = true;
    status.textContent = 'Saving…';
    let failed = 0;
    for (const r of roleList.filter((x) => x.dirty)) {
      try {
        const b = { tools: r.tools, token_budget: r.token_budget ?? null, budget_period: r.budget_period || 'month', approvals: r.approvals || {}, can_share_public: Boolean(r.can_share_public) };
        // Without the catalogue the role keeps its models (the field is absent).
        if (catalogue) b.models = modelsToSave(r, catalogue);
        // Sent only when the page could offer currencies (the field absent keeps it).
        if (catalogueCurrencies(catalogue).length) {
          b.budget_amount = r.budget_amount ?? null;
          if (b.budget_amount !== null) b.budget_currency = r.budget_currency;
        }
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
    roleList.push({ name, tools: [], approvals: {}, models: [], token_budget: null, budget_amount: null, budget_currency: null, budget_period: 'month', dirty: true });
    newRole.input.value = '';
    markDirty(roleList[roleList.length - 1]);
    draw();
  });

  body.append(h('div', { class: 'card' },
    h('h2', null, 'Tool allowlist, models and budgets'),
    h('p', { class: 'muted' }, 'Tick the tools each role may use, and choose who must approve each call: nobody, the person chatting (user) or an admin; then the models it may chat with. Changes apply to the next turn of every user with that role.'),
    wrap,
    h('div', { class: 'form-actions' }, saveBtn, status),
    addForm));
}

/** The currencies some model of the catalogue is priced in (a money budget must use one). */
function catalogueCurrencies(catalogue) {
  const all = (catalogue?.models || []).flatMap((m) => (m.prices || []).map((p) => p.currency));
  return [...new Set(all)].sort();
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
