// "Export" in the chat header: the open conversation as a Markdown or JSON download.

import { h, toast, icon } from './dom.js';
import * as api from './api.js';

/** Saves a fetched response as a file, named as the server suggests. */
async function save(resp, fallback) {
  const disposition = resp.headers.get('Content-Disposition') || '';
  const name = /filename="?([^";]+)"?/.exec(disposition)?.[1] || fallback;
  const url = URL.createObjectURL(await resp.blob());
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** The header control; `currentId()` names the open conversation (null on a new chat). */
export function exportMenu(currentId) {
  const menu = h('details', { class: 'export-menu' });
  const choice = (label, format) => {
    const b = h('button', { type: 'button', class: 'btn btn-ghost btn-small' }, label);
    b.addEventListener('click', async () => {
      menu.open = false;
      const id = currentId();
      if (!id) return;
      try {
        const resp = await api.api('GET', `/api/conversations/${encodeURIComponent(id)}/export?format=${format}`, undefined, { response: true, accept: '*/*' });
        await save(resp, `conversation.${format === 'json' ? 'json' : 'md'}`);
      } catch (err) {
        toast(`Export failed: ${err.message}`, 'error');
      }
    });
    return b;
  };
  menu.append(
    h('summary', { class: 'btn btn-ghost', 'aria-label': 'Export this chat' }, icon('download'), h('span', { class: 'export-label' }, 'Export')),
    h('div', { class: 'export-choices', role: 'group', 'aria-label': 'Export as' }, choice('Markdown', 'markdown'), choice('JSON', 'json')));
  return menu;
}
