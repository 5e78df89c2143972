// Usage (admins): tokens per user and per model, tool calls and failures, as bar charts.

import { h, clear, append, fmtNumber, fmtDate } from './dom.js';
import * as api from './api.js';
import { safeHref } from './markdown.js';
import { costStats, moneyCards } from './usage_money.js';

/**
 * Horizontal stacked bar chart drawn with HTML, so its text keeps the page's size at any
 * width (an SVG scaled to a phone shrank its labels to 5 px). rows: [{label, values:[n...]}],
 * series: [{name, cls}]. The numbers are also in a table under "Show as table".
 */
export function barChart(title, rows, series) {
  const max = Math.max(1, ...rows.map((r) => r.values.reduce((a, b) => a + b, 0)));
  const chart = h('div', { class: 'hbar-chart', role: 'img', 'aria-label': title },
    rows.map((r) => {
      const total = r.values.reduce((a, b) => a + b, 0);
      const track = h('div', { class: 'hbar-track' });
      r.values.forEach((v, j) => {
        if (v <= 0) return;
        const seg = h('span', { class: `hbar-seg ${series[j].cls}`, title: `${r.label} — ${series[j].name}: ${fmtNumber(v)}` });
        seg.style.width = `${Math.max(0.5, (v / max) * 100)}%`;
        track.append(seg);
      });
      return h('div', { class: 'hbar-row' },
        h('span', { class: 'hbar-label', title: r.label }, r.label),
        h('span', { class: 'hbar-value' }, fmtNumber(total)),
        track);
    }));
  const legend = h('div', { class: 'legend' }, series.map((se) => h('span', { class: 'legend-item' }, h('span', { class: `swatch ${se.cls}`, 'aria-hidden': 'true' }), se.name)));
  const table = h('details', { class: 'chart-data' }, h('summary', null, 'Show as table'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'data-table' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, ''), series.map((se) => h('th', { scope: 'col' }, se.name)))),
      h('tbody', null, rows.map((r) => h('tr', null, h('th', { scope: 'row' }, r.label), r.values.map((v) => h('td', { class: 'num' }, fmtNumber(v)))))))));
  return h('figure', { class: 'chart-fig' }, h('figcaption', null, title), rows.length ? chart : h('p', { class: 'muted' }, 'No data for this period.'), rows.length ? legend : null, rows.length ? table : null);
}

const TOKENS = [{ name: 'Input tokens', cls: 's-in' }, { name: 'Output tokens', cls: 's-out' }];

export async function renderUsage(body) {
  clear(body);
  const period = h('select', { id: 'usage-period' }, ['day', 'week', 'month', 'total'].map((p) => h('option', { value: p, selected: p === 'month' }, p === 'total' ? 'All time' : `This ${p}`)));
  const head = h('div', { class: 'card inline-form' }, h('div', { class: 'form-row' },
    h('div', { class: 'field field-auto' }, h('label', { for: 'usage-period' }, 'Period'), period)));
  const out = h('div', { class: 'usage-out' });
  body.append(head, out);
  period.addEventListener('change', () => load());
  async function load() {
    clear(out).append(h('p', { class: 'muted' }, 'Loading…'));
    let u;
    try {
      u = await api.get(`/api/admin/usage?period=${encodeURIComponent(period.value)}`);
    } catch (err) {
      clear(out);
      if (err.status === 401) return;
      out.append(h('div', { class: 'banner banner-warn', role: 'status' },
        err.status === 404 ? 'Usage reports are not available on this server yet.' : `Could not load usage: ${err.message}`));
      return;
    }
    clear(out);
    const byUser = new Map();
    for (const r of u.by_user || []) {
      const k = r.username || r.user_id;
      const e = byUser.get(k) || { label: k, values: [0, 0] };
      e.values[0] += Number(r.input_tokens || 0);
      e.values[1] += Number(r.output_tokens || 0);
      byUser.set(k, e);
    }
    const userRows = [...byUser.values()].sort((a, b) => (b.values[0] + b.values[1]) - (a.values[0] + a.values[1]));
    const modelRows = (u.by_model || []).map((r) => ({ label: r.model, values: [Number(r.input_tokens || 0), Number(r.output_tokens || 0)] }));
    const toolRows = (u.tools || []).map((r) => ({ label: r.tool, values: [Math.max(0, Number(r.calls || 0) - Number(r.failures || 0)), Number(r.failures || 0)] }));
    const totalIn = modelRows.reduce((a, r) => a + r.values[0], 0);
    const totalOut = modelRows.reduce((a, r) => a + r.values[1], 0);
    const grafana = safeHref(u.grafana_url || '');
    append(out, [
      h('div', { class: 'stats' },
        stat('Input tokens', fmtNumber(totalIn)), stat('Output tokens', fmtNumber(totalOut)),
        stat('Tool calls', fmtNumber((u.tools || []).reduce((a, r) => a + Number(r.calls || 0), 0))),
        stat('Tool failures', fmtNumber((u.tools || []).reduce((a, r) => a + Number(r.failures || 0), 0))),
        ...costStats(u, stat)),
      u.from || u.to ? h('p', { class: 'muted small' }, `From ${u.from ? fmtDate(u.from) : 'the beginning'} to ${u.to ? fmtDate(u.to) : 'now'}.`) : null,
      grafana ? h('p', null, h('a', { href: grafana, target: '_blank', rel: 'noopener noreferrer', class: 'btn' }, 'Open the Grafana dashboard ↗')) : null,
      h('div', { class: 'card' }, barChart('Tokens per user', userRows, TOKENS)),
      h('div', { class: 'card' }, barChart('Tokens per model', modelRows, TOKENS)),
      h('div', { class: 'card' }, barChart('Tool calls and failures by tool', toolRows, [{ name: 'Succeeded', cls: 's-ok' }, { name: 'Failed', cls: 's-fail' }])),
      ...moneyCards(u),
      fallbackCard(u.fallbacks)]);
  }
  load();
}

/** The calls a fallback answered: which model, in place of which, why, how often (none: no card). */
function fallbackCard(fallbacks) {
  if (!Array.isArray(fallbacks) || fallbacks.length === 0) return null;
  return h('div', { class: 'card' }, h('h3', null, 'Answered by a fallback'),
    h('ul', { class: 'fallback-lines' }, ...fallbacks.map((f) => h('li', null,
      `${f.model} in place of ${f.from} (${String(f.reason || '').replace(/_/g, ' ')}): ` +
      `${fmtNumber(Number(f.calls || 0))} calls, ${fmtNumber(Number(f.input_tokens || 0) + Number(f.output_tokens || 0))} tokens`))));
}

function stat(label, value) {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-value' }, value), h('div', { class: 'stat-label' }, label));
}
