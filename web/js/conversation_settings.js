// The chat header's settings button: which model this chat uses, its own instructions
// (a system prompt added after the server's, never replacing it) and whether the user's memory
// notes go into it (memory_chat.js). Saved with PATCH /api/conversations/{id}; a change
// applies from the next message. Beside it, the badge of the chat's assistant (assistants_badge.js).

import { h, uid, icon } from './dom.js';
import * as api from './api.js';
import { modelLabel } from './model_label.js';
import { assistantBadge } from './assistants_badge.js';
import { memoryChoice } from './memory_chat.js';

/** Longest per-chat instructions the server accepts, in characters. */
export const MAX_SYSTEM_PROMPT = 4000;

/** The header button; `current()` is the open chat (or null), `onSaved(conv)` after a change. */
export function settingsButton({ current, models, onSaved }) {
  const label = h('span', { class: 'conv-settings-model' });
  const btn = h('button', { type: 'button', class: 'btn btn-ghost btn-small conv-settings-btn', 'aria-haspopup': 'dialog' },
    icon('sliders'), label);
  const badge = assistantBadge();
  const update = () => {
    const conv = current();
    badge.update(conv, btn);
    btn.hidden = !conv;
    if (!conv) return;
    const model = conv.model || models()?.default || '';
    label.textContent = model;
    const own = conv.system_prompt ? ', with its own instructions' : '';
    btn.setAttribute('aria-label', `Chat settings: model ${model || 'default'}${own}`);
    btn.title = `Model and instructions for this chat (${model || 'default model'}${own})`;
    btn.classList.toggle('has-prompt', Boolean(conv.system_prompt));
  };
  btn.addEventListener('click', () => {
    const conv = current();
    if (conv) openSettings(conv, models(), (saved) => { onSaved(saved); update(); btn.focus(); });
  });
  return { el: btn, update };
}

function openSettings(conv, models, onSaved) {
  const err = h('div', { class: 'form-error', role: 'alert' });
  const modelId = uid('conv-model');
  const promptId = uid('conv-prompt');
  const counterId = uid('conv-count');
  const offered = models?.models || [];
  const choices = offered.length ? offered : [conv.model || models?.default].filter(Boolean);
  const current = conv.model || models?.default || '';
  const select = h('select', { id: modelId, name: 'model' },
    choices.map((m) => h('option', { value: m, selected: m === current }, modelLabel(m, models))));
  if (current && !choices.includes(current)) {
    select.prepend(h('option', { value: '', selected: true, disabled: true }, `${current} (no longer offered)`));
  }
  const prompt = h('textarea', {
    id: promptId, name: 'system_prompt', rows: '6', maxlength: String(MAX_SYSTEM_PROMPT),
    'aria-describedby': `${counterId} ${promptId}-help`,
    placeholder: 'For example: Answer briefly, in French.',
  });
  prompt.value = conv.system_prompt || '';
  const counter = h('span', { id: counterId, class: 'small muted' });
  const count = () => { counter.textContent = `${prompt.value.length} / ${MAX_SYSTEM_PROMPT}`; };
  prompt.addEventListener('input', count);
  count();
  const memory = memoryChoice(conv);
  const save = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save');
  const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Cancel');
  const form = h('form', { class: 'conv-settings-form', novalidate: true },
    h('h2', { class: 'auth-title' }, 'Chat settings'),
    h('div', { class: 'field' }, h('label', { for: modelId }, 'Model'), select),
    h('div', { class: 'field' },
      h('label', { for: promptId }, 'Instructions for this chat (optional)'),
      prompt,
      h('p', { class: 'small muted', id: `${promptId}-help` },
        'Added after the server\'s own instructions, which still apply. Changes apply from your next message. ', counter)),
    memory?.el,
    err,
    h('div', { class: 'dialog-actions' }, cancel, save));
  const dialog = h('dialog', { class: 'account-dialog conv-settings-dialog', 'aria-label': 'Chat settings' }, form);
  cancel.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => dialog.remove());
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const change = {};
    if (select.value && select.value !== (conv.model || '')) change.model = select.value;
    const text = prompt.value.trim();
    if (text !== (conv.system_prompt || '')) change.system_prompt = text || null;
    if (memory?.changed()) change.memory_enabled = memory.value();
    if (!Object.keys(change).length) { dialog.close(); return; }
    if (text.length > MAX_SYSTEM_PROMPT) {
      err.textContent = `The instructions are too long: at most ${MAX_SYSTEM_PROMPT} characters.`;
      return;
    }
    save.disabled = true;
    try {
      const saved = await api.patch(`/api/conversations/${encodeURIComponent(conv.id)}`, change);
      dialog.close();
      onSaved(saved);
    } catch (e) {
      err.textContent = e.message || 'The settings could not be saved.';
    } finally {
      save.disabled = false;
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  select.focus();
}
