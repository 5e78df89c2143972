// Helpers shared by the admin console's sections.

import { h, clear, toast } from './dom.js';
import * as api from './api.js';

/** Shows a standard "unavailable" note for 404/403 errors; returns true when handled. */
export function unavailable(container, err, what) {
  if (err.status === 401) return true;
  const text = err.status === 404
    ? `${what} is not available on this server yet.`
    : err.status === 403 ? 'This section is for admins only.' : `Could not load ${what.toLowerCase()}: ${err.message}`;
  container.append(h('div', { class: 'banner banner-warn', role: 'status' }, text));
  return true;
}

export function loading(container) {
  const l = h('p', { class: 'muted loading' }, 'Loading…');
  container.append(l);
  return l;
}

/** Downloads `path` (an admin export) as CSV, with the session's token, as `filename`. */
export async function downloadCsv(path, filename) {
  const resp = await api.get(path, { response: true, accept: 'text/csv' });
  const url = URL.createObjectURL(await resp.blob());
  const a = h('a', { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** An "Export CSV" button that downloads what `path()` returns (the current filters). */
export function csvButton(path, filename, label = 'Export CSV') {
  const btn = h('button', { type: 'button', class: 'btn' }, label);
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    try { await downloadCsv(path(), filename); } catch (e) { if (e.status !== 401) toast(`Export failed: ${e.message}`, 'error'); } finally { btn.disabled = false; }
  });
  return btn;
}

/**
 * Fills `tbody` from a cursor-paged admin list (`/api/admin/audit`, `/api/admin/changes`):
 * `load(true)` starts over with `params()`, `load(false)` appends the next page; `info` counts
 * what is shown, `more` appears while there is a next page.
 */
export function cursorPager({ body, results, tbody, info, more, path, params, row, what, noun, none }) {
  let cursor = null;
  let count = 0;
  return async function load(reset) {
    const q = params();
    if (!reset && cursor) q.set('cursor', cursor);
    if (reset) { clear(tbody); count = 0; cursor = null; }
    info.textContent = 'Loading…';
    let page;
    try { page = await api.get(`${path}?${q}`); } catch (err) {
      info.textContent = '';
      results.hidden = true;
      body.querySelectorAll('.banner').forEach((b) => b.remove());
      unavailable(body, err, what);
      return;
    }
    results.hidden = false;
    for (const r of page.items || []) {
      count += 1;
      tbody.append(row(r));
    }
    cursor = page.next_cursor || null;
    more.hidden = !cursor;
    info.textContent = count ? `${count} ${noun}${count === 1 ? '' : 's'} shown` : none;
  };
}
