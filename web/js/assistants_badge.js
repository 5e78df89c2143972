// The chat header's assistant badge: the name of the assistant the open chat was started with
// (none for an ordinary chat). It also remembers which chat the header shows, so the empty
// chat (chat_empty.js) knows whether to offer the assistant picker or introduce the assistant.

import { h } from './dom.js';

let shown = null; // the conversation in the chat header, null for a new chat

/** The conversation the chat header shows (null: a new chat, not created yet). */
export function shownConversation() { return shown; }

/** The badge; `update(conv, anchor)` shows `conv`'s assistant just before `anchor` in the header. */
export function assistantBadge() {
  const name = h('span', { class: 'assistant-badge-name' });
  const el = h('span', { class: 'assistant-badge', hidden: true }, h('span', { class: 'visually-hidden' }, 'Assistant: '), name);
  const update = (conv, anchor) => {
    shown = conv || null;
    if (anchor?.parentNode && el.nextSibling !== anchor) anchor.before(el);
    const a = conv?.assistant;
    el.hidden = !a;
    if (!a) return;
    name.textContent = a.retired ? `${a.name} (retired)` : a.name;
    el.title = a.retired ? `This chat was with the assistant ${a.name}, since retired: it takes no new messages`
      : `This chat is with the assistant ${a.name}`;
  };
  return { el, update };
}
