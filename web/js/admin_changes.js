// Admin console, admin changes: the audit trail of administrative changes (who changed
// what, when, before -> after), filtered, paged and exported as CSV.

import { h, clear, field, fmtDate } from './dom.js';
import { csvButton, cursorPager } from './admin_common.js';

/** Every kind the server records, as people read it. */
export const KINDS = {
  'user.create': 'Created a user',
  'user.update': 'Changed a user',
  'user.delete': 'Deleted a user',
  'user.password_reset': 'Reset a password',
  'role.create': 'Created a role',
  'role.update': 'Changed a role',
  'collection.share': 'Shared a collection with roles',
  'assistant.create': 'Created an assistant',
  'assistant.update': 'Saved a new assistant version',
  'assistant.retire': 'Retired an assistant',
  'custom_tool.create': 'Added a custom tool',
  'custom_tool.update': 'Changed a custom tool',
  'custom_tool.delete': 'Deleted a custom tool',
  'mcp_server.create': 'Added an MCP server',
  'mcp_server.update': 'Changed an MCP server',
  'mcp_server.delete': 'Removed an MCP server',
  'provider.create': 'Added a model provider',
  'provider.update': 'Changed a model provider',
  'provider.delete': 'Removed a model provider',
  'model.create': 'Added a model',
  'model.update': 'Changed a model',
  'model.delete': 'Removed a model',
  'api_key.revoke': 'Revoked an API key',
  'approval.decide': 'Decided a tool call',
  'conversation.view': 'Read a conversation',
  'share.revoke': 'Revoked a conversation link',
};

const GROUPS = [
  ['user.', 'Users (all)'], ['role.', 'Roles and budgets (all)'], ['custom_tool.', 'Custom tools (all)'],
  ['mcp_server.', 'MCP servers (all)'], ['provider.', 'Model providers (all)'], ['model.', 'Models (all)'], ['api_key.', 'API keys'], ['approval.', 'Approvals'], ['conversation.', 'Conversations read'],
];

/** Fields that change on every save and say nothing. */
const NOISE = new Set(['created_at', 'updated_at']);

function show(v) {
  if (v === null || v === undefined) return 'none';
  if (Array.isArray(v)) return v.length ? v.map(show).join(', ') : '(empty)';
  if (typeof v === 'object') return JSON.stringify(v);
  const s = String(v);
  return s.length > 120 ? `${s.slice(0, 119)}…` : s;
}

/** Lines of `field: before → after` for what changed (all fields of a create or delete). */
export function changeLines(before, after) {
  const keys = [...new Set([...Object.keys(before || {}), ...Object.keys(after || {})])].filter((k) => !NOISE.has(k));
  if (!before) return keys.map((k) => `${k}: ${show(after[k])}`);
  if (!after) return keys.map((k) => `${k}: ${show(before[k])}`);
  return keys.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
    .map((k) => `${k}: ${show(before[k])} → ${show(after[k])}`);
}

export async function renderChanges(body) {
  clear(body);
  const actor = field('Admin', { name: 'actor', autocomplete: 'off', placeholder: 'username' });
  const target = field('Target', { name: 'target', autocomplete: 'off', placeholder: 'user, role, tool…' });
  const kind = h('select', { id: 'changes-kind' },
    h('option', { value: '' }, 'any'),
    h('optgroup', { label: 'Groups' }, GROUPS.map(([v, label]) => h('option', { value: v }, label))),
    h('optgroup', { label: 'Actions' }, Object.entries(KINDS).map(([v, label]) => h('option', { value: v }, label))));
  const since = field('Since', { type: 'datetime-local', name: 'since' });
  const until = field('Until', { type: 'datetime-local', name: 'until' });
  const form = h('form', { class: 'card inline-form filters', 'aria-label': 'Admin change filters' },
    h('div', { class: 'form-row' }, actor.wrap,
      h('div', { class: 'field' }, h('label', { for: 'changes-kind' }, 'Action'), kind),
      target.wrap, since.wrap, until.wrap,
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply filters')));
  const params = () => {
    const q = new URLSearchParams({ limit: '50' });
    if (actor.input.value.trim()) q.set('actor', actor.input.value.trim());
    if (kind.value) q.set('kind', kind.value);
    if (target.input.value.trim()) q.set('target', target.input.value.trim());
    if (since.input.value) q.set('since', new Date(since.input.value).toISOString());
    if (until.input.value) q.set('until', new Date(until.input.value).toISOString());
    return q;
  };
  const exportBtn = csvButton(() => {
    const q = params();
    q.delete('limit');
    q.set('format', 'csv');
    return `/api/admin/changes?${q}`;
  }, 'admin-changes.csv');
  const tbody = h('tbody');
  const table = h('table', { class: 'data-table stack changes-table' },
    h('thead', null, h('tr', null, ['Time', 'Admin', 'Action', 'Target', 'Change'].map((t) => h('th', { scope: 'col' }, t)))), tbody);
  const more = h('button', { type: 'button', class: 'btn' }, 'Load more');
  const info = h('p', { class: 'muted', role: 'status' });
  const results = h('div', { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', null, 'Admin changes'), exportBtn),
    h('p', { class: 'muted small' }, 'Every change an admin made: users, roles and budgets, tools, MCP servers, API keys, approvals, and conversations read. Times are in your time zone.'),
    h('div', { class: 'table-wrap' }, table), h('div', { class: 'form-actions' }, more, info));
  body.append(form, results);
  const load = cursorPager({
    body, results, tbody, info, more, path: '/api/admin/changes', params, row,
    what: 'The admin audit trail', noun: 'change', none: 'No admin changes match these filters.',
  });

  form.addEventListener('submit', (ev) => { ev.preventDefault(); load(true); });
  more.addEventListener('click', () => load(false));
  load(true);
}

function row(r) {
  const lines = changeLines(r.before, r.after);
  const targetCell = r.kind === 'conversation.view' && r.target_id
    ? h('a', { href: `/admin/conversations/${encodeURIComponent(r.target_id)}`, 'data-nav': '' }, r.target)
    : r.target;
  return h('tr', { dataset: { kind: r.kind } },
    h('td', { class: 'nowrap', 'data-label': 'Time' }, h('time', { datetime: r.created_at }, fmtDate(r.created_at))),
    h('th', { scope: 'row', 'data-label': 'Admin' }, r.actor_name),
    h('td', { 'data-label': 'Action' }, h('span', { class: 'pill', title: r.kind }, KINDS[r.kind] || r.kind)),
    h('td', { 'data-label': 'Target', class: 'wrap-anywhere' }, targetCell),
    h('td', { 'data-label': 'Change' }, lines.length
      ? h('ul', { class: 'change-lines' }, lines.map((l) => h('li', null, l)))
      : h('span', { class: 'muted' }, '—')));
}
