// Admin console, tool-call audit: filters, pages, CSV export, links to the conversations.

import { h, clear, field, fmtDate, fmtDuration, fmtBytes } from './dom.js';
import { csvButton, cursorPager } from './admin_common.js';

// ---------------- audit ----------------

export async function renderAudit(body) {
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
  // `stack`: one compact card per call on a phone (app.css).
  const table = h('table', { class: 'data-table audit-table stack' },
    h('thead', null, h('tr', null, ['Time', 'User', 'Tool', 'Outcome', 'Duration', 'Details'].map((t) => h('th', { scope: 'col' }, t)))), tbody);
  const more = h('button', { type: 'button', class: 'btn' }, 'Load more');
  const info = h('p', { class: 'muted', role: 'status' });
  // The export takes the filters as they are applied, without the paging.
  const exportBtn = csvButton(() => {
    const q = params();
    q.delete('limit');
    q.set('format', 'csv');
    return `/api/admin/audit?${q}`;
  }, 'tool-call-audit.csv');
  const results = h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Tool calls'), exportBtn),
    h('div', { class: 'table-wrap' }, table), h('div', { class: 'form-actions' }, more, info));
  body.append(form, results);

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
  const load = cursorPager({
    body, results, tbody, info, more, path: '/api/admin/audit', params, row: auditRow,
    what: 'The audit log', noun: 'row', none: 'No tool calls match these filters.',
  });
  form.addEventListener('submit', (ev) => { ev.preventDefault(); load(true); });
  more.addEventListener('click', () => load(false));
  load(true);
}

/** A link to the read-only view of the call's conversation (opening it is audited). */
function conversationLink(id) {
  if (!id) return null;
  return h('p', { class: 'small' }, h('a', {
    href: `/admin/conversations/${encodeURIComponent(id)}`, 'data-nav': '', class: 'conv-link',
    title: 'Read this conversation (read-only; the reading is recorded in the admin changes)',
  }, `Open conversation ${id.slice(0, 8)}…`));
}

function auditRow(r) {
  return h('tr', null,
    h('td', { class: 'nowrap audit-time', 'data-label': 'Time' }, fmtDate(r.created_at)),
    h('td', { class: 'audit-user', 'data-label': 'User', title: r.username || r.user_id || '' }, r.username || r.user_id || ''),
    h('td', { class: 'audit-tool', 'data-label': 'Tool', title: r.tool }, h('code', null, r.tool)),
    h('td', { class: 'audit-outcome', 'data-label': 'Outcome' }, h('span', { class: `pill outcome-${r.outcome}` }, r.outcome),
      r.approval_decision ? h('span', { class: 'pill', title: `${r.approval_policy} approval${r.approval_decided_at ? ` at ${fmtDate(r.approval_decided_at)}` : ''}${r.approval_note ? `: ${r.approval_note}` : ''}` },
        `${r.approval_decision}${r.approval_decided_by ? ` by ${r.approval_decided_by}` : ''}`) : null),
    h('td', { class: 'nowrap audit-duration', 'data-label': 'Duration' }, fmtDuration(r.duration_ms)),
    h('td', { class: 'audit-details' }, h('details', null, h('summary', null, r.error ? `Error: ${String(r.error).slice(0, 60)}` : 'Arguments'),
      h('pre', { class: 'tool-pre' }, JSON.stringify(r.arguments ?? null, null, 2)),
      r.error ? h('p', { class: 'tool-error' }, r.error) : null,
      h('p', { class: 'muted small' }, [
        r.result_bytes !== undefined && r.result_bytes !== null ? `Result ${fmtBytes(r.result_bytes)}` : null,
        r.trace_id ? `trace ${r.trace_id}` : null,
      ].filter(Boolean).join(' · '))),
      conversationLink(r.conversation_id)));
}
