// The chat settings' "Use memory in this chat" checkbox: whether the user's memory notes go
// into this conversation's prompt (`memory_enabled`, saved with the rest of the settings).
// Says so when memory is off in the account, where the checkbox changes nothing.

import { h, uid } from './dom.js';
import * as api from './api.js';

/** The checkbox for `conv`, or null when the server does not say (no memory there). */
export function memoryChoice(conv) {
  if (typeof conv.memory_enabled !== 'boolean') return null;
  const id = uid('conv-memory');
  const hint = h('p', { class: 'field-hint', id: `${id}-help` },
    'Your memory notes (Account, Memory) are added to this chat as context.');
  const box = h('input', { type: 'checkbox', id, name: 'memory_enabled', checked: conv.memory_enabled, 'aria-describedby': `${id}-help` });
  api.memory().then((m) => {
    if (!m.enabled) hint.textContent = 'Memory is off in your account: no notes are added to any chat until you turn it on there.';
  }, () => {});
  return {
    el: h('div', { class: 'field memory-chat' }, h('div', { class: 'field-inline' }, box, h('label', { for: id }, 'Use memory in this chat')), hint),
    changed: () => box.checked !== conv.memory_enabled,
    value: () => box.checked,
  };
}
