// Usage (admins): what the period cost, per currency, per user and per model, and the line of
// each assistant, beside the token charts (usage_view.js). Costs are exact decimal strings
// from the server; they are summed here for display only.

import { h, fmtNumber } from './dom.js';

/** `amount` (a number) in `currency`, with as many decimals as small amounts need. */
export function fmtMoney(amount, currency) {
  const digits = Math.abs(amount) >= 1 || amount === 0 ? 2 : 4;
  return `${amount.toFixed(digits)} ${currency}`;
}

/** Sums of `rows`' `cost` per currency ([[currency, amount]], by currency). */
function totals(rows) {
  const sums = new Map();
  for (const r of rows) {
    if (r.cost === null || r.cost === undefined || !r.currency) continue;
    sums.set(r.currency, (sums.get(r.currency) || 0) + Number(r.cost));
  }
  return [...sums.entries()].sort(([a], [b]) => a.localeCompare(b));
}

const costText = (list) => (list.length ? list.map(([c, v]) => fmtMoney(v, c)).join(' + ') : 'not priced');

function table(caption, head, rows) {
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data-table stack usage-table' },
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', null, h('tr', null, head.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', null, rows.map((cells) => h('tr', null, cells.map((c, i) => (i === 0
      ? h('th', { scope: 'row' }, c)
      : h('td', { class: 'num', 'data-label': head[i] }, c))))))));
}

/** The stat boxes of the period's cost (one per currency; "not priced" when none was). */
export function costStats(u, stat) {
  const list = totals(u.by_user || []);
  if (!list.length) return [stat('Cost', 'not priced')];
  return list.map(([c, v]) => stat(`Cost (${c})`, fmtMoney(v, c)));
}

/** Cards: cost per user, cost per model, and one line per assistant. */
export function moneyCards(u) {
  const rows = u.by_user || [];
  const group = (key) => {
    const m = new Map();
    for (const r of rows) {
      const k = r[key] || r.user_id;
      const e = m.get(k) || { calls: 0, rows: [] };
      e.calls += Number(r.calls || 0);
      e.rows.push(r);
      m.set(k, e);
    }
    return [...m.entries()].sort(([a], [b]) => String(a).localeCompare(String(b)));
  };
  const perUser = group('username').map(([k, e]) => [k, fmtNumber(e.calls), costText(totals(e.rows))]);
  const perModel = group('model').map(([k, e]) => [k, fmtNumber(e.calls), costText(totals(e.rows))]);
  const assistants = (u.by_assistant || []).map((a) => [a.assistant, fmtNumber(Number(a.users || 0)), fmtNumber(Number(a.calls || 0)),
    fmtNumber(Number(a.input_tokens || 0)), fmtNumber(Number(a.output_tokens || 0)),
    a.cost === null || a.cost === undefined ? 'not priced' : fmtMoney(Number(a.cost), a.currency || '')]);
  const none = h('p', { class: 'muted' }, 'No data for this period.');
  return [
    h('div', { class: 'card usage-money' }, h('h2', null, 'Cost per user'),
      perUser.length ? table('Cost per user', ['User', 'Calls', 'Cost'], perUser) : none.cloneNode(true)),
    h('div', { class: 'card usage-money' }, h('h2', null, 'Cost per model'),
      perModel.length ? table('Cost per model', ['Model', 'Calls', 'Cost'], perModel) : none.cloneNode(true)),
    h('div', { class: 'card usage-assistants' }, h('h2', null, 'Assistants'),
      assistants.length ? table('Usage per assistant', ['Assistant', 'Users', 'Calls', 'Input tokens', 'Output tokens', 'Cost'], assistants)
        : h('p', { class: 'muted' }, 'No assistant was used in this period.')),
  ];
}
