// The admin console's approvals queue: every tool call waiting for a decision (or decided),
// with the arguments as they will run. Admins decide the calls that need an admin; calls the
// person chatting must confirm are shown, not decided, here.

import { h, clear, fmtDate, toast } from './dom.js';
import * as api from './api.js';
import { decide } from './approval_card.js';

const STATES = ['pending', 'approved', 'denied', 'expired', ''];

export async function renderApprovals(body, unavailable) {
  clear(body);
  const state = h('select', { id: 'approvals-state', 'aria-label': 'State' },
    STATES.map((s) => h('option', { value: s }, s || 'any')));
  const tbody = h('tbody');
  const info = h('p', { class: 'muted', role: 'status' });
  const table = h('table', { class: 'data-table approvals-table' },
    h('thead', null, h('tr', null, ['Requested', 'User', 'Tool', 'Arguments', 'Approver', 'State', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody);
  const card = h('div', { class: 'card' },
    h('h2', null, 'Approvals'),
    h('p', { class: 'muted' }, 'Tool calls that wait for a decision before they run. Approving runs exactly the arguments shown; denying tells the assistant who denied it and why.'),
    h('div', { class: 'form-row' }, h('div', { class: 'field' }, h('label', { for: 'approvals-state' }, 'State'), state)),
    h('div', { class: 'table-wrap' }, table), info);
  body.append(card);

  function row(a) {
    const note = h('input', { type: 'text', maxlength: '1000', placeholder: 'Note', 'aria-label': `Note for ${a.tool}` });
    const cell = h('td', null);
    if (a.state === 'pending' && a.approver === 'admin') {
      const approve = h('button', { type: 'button', class: 'btn btn-primary', 'data-decision': 'approve' }, 'Approve');
      const deny = h('button', { type: 'button', class: 'btn btn-danger', 'data-decision': 'deny' }, 'Deny');
      const go = async (decision) => {
        approve.disabled = true;
        deny.disabled = true;
        try {
          await decide(a.id, decision, note.value.trim(), () => {});
          toast(decision === 'approve' ? 'Approved: the answer goes on.' : 'Denied.');
          load();
        } catch (err) {
          approve.disabled = false;
          deny.disabled = false;
          toast(`The decision was not recorded: ${err.message}`, 'error');
          if (err.status === 409) load();
        }
      };
      approve.addEventListener('click', () => go('approve'));
      deny.addEventListener('click', () => go('deny'));
      cell.append(h('div', { class: 'approval-actions' }, note, approve, deny));
    } else if (a.state === 'pending') {
      cell.append(h('span', { class: 'muted small' }, `Waiting for ${a.username}`));
    } else {
      cell.append(h('span', { class: 'muted small' }, [a.decided_by ? `by ${a.decided_by}` : null, a.note].filter(Boolean).join(': ')));
    }
    return h('tr', { dataset: { approvalId: a.id } },
      h('td', { class: 'nowrap' }, fmtDate(a.created_at)),
      h('td', null, a.username),
      h('td', null, h('code', null, a.tool), a.server ? h('span', { class: 'pill' }, `MCP: ${a.server}`) : null),
      h('td', null, h('pre', { class: 'tool-pre' }, JSON.stringify(a.arguments ?? {}, null, 2))),
      h('td', null, a.approver),
      h('td', null, h('span', { class: `pill state-${a.state}` }, a.state)),
      cell);
  }

  async function load() {
    info.textContent = 'Loading…';
    const q = new URLSearchParams({ limit: '100' });
    if (state.value) q.set('state', state.value);
    let page;
    try { page = await api.get(`/api/admin/approvals?${q}`); } catch (err) {
      card.remove();
      unavailable(body, err, 'The approvals queue');
      return;
    }
    clear(tbody);
    const items = page.items || [];
    for (const a of items) tbody.append(row(a));
    info.textContent = items.length ? `${items.length} shown` : 'Nothing here.';
  }
  state.addEventListener('change', load);
  load();
}
