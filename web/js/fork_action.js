// "Continue as copy from here" on a message of the open chat: a new chat of one's own
// holding this chat up to that message (POST /api/conversations/{id}/fork), opened at once;
// the original stays as it is. Offered in a small "More" menu so the message's own bar
// keeps its few, short buttons.

import { h, toast } from './dom.js';
import * as api from './api.js';

let openMenu = null;
document.addEventListener('click', (ev) => {
  if (openMenu && !openMenu.contains(ev.target)) closeMenu();
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && openMenu) {
    const trigger = openMenu.querySelector('.msg-more-btn');
    closeMenu();
    trigger?.focus();
  }
});

function closeMenu() {
  if (!openMenu) return;
  openMenu.querySelector('.msg-more-menu').hidden = true;
  openMenu.querySelector('.msg-more-btn').setAttribute('aria-expanded', 'false');
  openMenu = null;
}

/**
 * The "More" control of the message `messageId` of chat `conversationId()`; `opened(conv)`
 * is called with the new chat once it exists.
 */
export function forkMenu(conversationId, messageId, opened) {
  const item = h('button', { type: 'button', class: 'btn btn-ghost btn-small', role: 'menuitem' }, 'Continue as copy from here');
  const menu = h('div', { class: 'msg-more-menu', role: 'menu' }, item);
  menu.hidden = true;
  const trigger = h('button', { type: 'button', class: 'btn btn-ghost btn-small msg-more-btn', 'aria-haspopup': 'menu', 'aria-expanded': 'false', 'aria-label': 'More actions', title: 'More actions' }, '⋯');
  const wrap = h('div', { class: 'msg-more' }, trigger, menu);
  trigger.addEventListener('click', (ev) => {
    ev.stopPropagation();
    const show = menu.hidden;
    closeMenu();
    if (show) {
      menu.hidden = false;
      trigger.setAttribute('aria-expanded', 'true');
      openMenu = wrap;
      item.focus();
    }
  });
  item.addEventListener('click', async () => {
    closeMenu();
    const id = conversationId();
    if (!id) return;
    item.disabled = true;
    try {
      const conv = await api.post(`/api/conversations/${encodeURIComponent(id)}/fork`, { at_message_id: messageId });
      toast('A copy of the chat up to that message is open: the original is unchanged.');
      opened(conv);
    } catch (err) {
      toast(`Could not make a copy: ${err.message}`, 'error');
    } finally {
      item.disabled = false;
    }
  });
  return wrap;
}
