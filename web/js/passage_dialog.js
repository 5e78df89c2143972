// The passage viewer: a cited passage of a collection's file (GET
// /api/collections/{id}/files/{file}/passage?start=&end=) with some text before and after,
// the cited text highlighted and scrolled into view. A modal dialog, full width on a phone.

import { h, clear, uid } from './dom.js';
import * as api from './api.js';
import { collectionPath, collectionPage } from './knowledge_common.js';

/** Opens the passage of citation `c`; focus goes back to `opener` when it closes. */
export function openPassage(c, opener = null) {
  const titleId = uid('passage');
  const body = h('div', { class: 'passage-body', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading the passage…'));
  const close = h('button', { type: 'button', class: 'btn btn-primary' }, 'Close');
  const open = h('a', { href: collectionPage(c.collection_id), 'data-nav': '', class: 'btn btn-ghost' }, 'Open collection');
  const dialog = h('dialog', { class: 'account-dialog passage-dialog', 'aria-labelledby': titleId },
    h('h2', { class: 'auth-title passage-title', id: titleId },
      h('span', { class: 'cite-n' }, `Source ${c.n}`), ' · ', h('span', { class: 'passage-file' }, c.file)),
    body,
    h('div', { class: 'dialog-actions' }, open, close));
  close.addEventListener('click', () => dialog.close());
  open.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (opener?.isConnected) opener.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
  load(c, body);
  return dialog;
}

async function load(c, body) {
  const q = new URLSearchParams({ start: String(c.byte_start ?? 0), end: String(c.byte_end ?? 0) });
  let p;
  try {
    p = await api.get(`${collectionPath(c.collection_id)}/files/${encodeURIComponent(c.file_id)}/passage?${q}`);
  } catch (err) {
    body.removeAttribute('aria-busy');
    if (err.status === 401) return;
    clear(body).append(h('p', { class: 'form-error', role: 'alert' }, err.status === 404
      ? 'This passage is no longer available: its file or collection was deleted or changed, or it is not shared with you any more.'
      : `Could not load the passage: ${err.message}`));
    // What was cited is stored with the answer: shown even when the file is gone.
    if (c.quote) {
      body.append(h('p', { class: 'muted small' }, 'What the answer cited:'),
        h('div', { class: 'passage-text', tabindex: '0' }, h('mark', { class: 'passage-hit' }, c.quote)));
    }
    return;
  }
  const mark = h('mark', { class: 'passage-hit' }, p.text || '');
  // "…" when the context before does not reach back to the file's start.
  const cut = p.before && new TextEncoder().encode(p.before).length < Number(p.byte_start || 0);
  const text = h('div', { class: 'passage-text', tabindex: '0', role: 'document', 'aria-label': `Passage from ${p.file?.name || c.file}` },
    p.before ? h('span', { class: 'passage-context' }, `${cut ? '…' : ''}${p.before}`) : null,
    mark,
    p.after ? h('span', { class: 'passage-context' }, p.after) : null);
  body.removeAttribute('aria-busy');
  clear(body).append(text);
  // The cited text in view inside its scrolling box (the page itself does not move).
  text.scrollTop = Math.max(0, mark.offsetTop - text.clientHeight / 3);
}
