// Actions on the messages of the open chat: copy any message; edit a question and send it
// again, or regenerate (retry) the last answer. Editing and regenerating take the chat back to
// before that question (POST /api/conversations/{id}/truncate) and send it anew: the later
// answers are replaced.

import { h, toast, clear } from './dom.js';

async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
    toast('Copied.');
  } catch {
    toast('Copying is not allowed here; select the text instead.', 'error');
  }
}

const textOf = (article) => (article.querySelector('.plain, .segments')?.innerText || '').trim();

function bar(...buttons) {
  return h('div', { class: 'msg-actions', role: 'group', 'aria-label': 'Message actions' }, ...buttons);
}

function button(label, onClick) {
  const b = h('button', { type: 'button', class: 'btn btn-ghost btn-small' }, label);
  b.addEventListener('click', onClick);
  return b;
}

/**
 * Puts the action bars on the messages in `log`. `resend(fromMessageId, text)` takes the chat
 * back to before that question and sends `text`; it is not offered while `busy()`.
 * `fork(messageId)`, when given, makes the control that continues a copy from a message.
 */
export function decorate(log, { busy, resend, fork }) {
  for (const old of log.querySelectorAll('.msg-actions')) old.remove();
  if (busy()) return;
  const questions = [...log.querySelectorAll('.msg-user[data-message-id]')];
  for (const q of log.querySelectorAll('.msg-user')) {
    const id = q.dataset.messageId;
    const actions = [button('Copy', () => copy(textOf(q)))];
    if (id) actions.push(button('Edit', () => edit(q, id, resend)));
    if (id && fork) actions.push(fork(id));
    q.append(bar(...actions));
  }
  const answers = [...log.querySelectorAll('.msg-assistant')];
  answers.forEach((a, i) => {
    const actions = [button('Copy', () => copy(textOf(a)))];
    const last = i === answers.length - 1;
    const question = questions[questions.length - 1];
    // A turn waiting for an approval goes on when it is decided: nothing to regenerate yet.
    const waiting = log.querySelector('.approval-card:not(.is-decided)') !== null;
    if (last && question && !waiting) {
      const failed = a.querySelector('.turn-note.note-error, .turn-note.note-warn') !== null;
      actions.push(button(failed ? 'Retry' : 'Regenerate', () => resend(question.dataset.messageId, textOf(question))));
    }
    if (a.dataset.messageId && fork) actions.push(fork(a.dataset.messageId));
    a.querySelector('.assistant-body')?.append(bar(...actions));
  });
}

/** Turns a question into an editor; saving sends the edited text in its place. */
function edit(article, id, resend) {
  const bubble = article.querySelector('.bubble');
  const original = textOf(article);
  const area = h('textarea', { class: 'edit-input', rows: '3', 'aria-label': 'Edit your message' });
  area.value = original;
  const save = h('button', { type: 'submit', class: 'btn btn-primary btn-small' }, 'Save and send');
  const cancel = h('button', { type: 'button', class: 'btn btn-small' }, 'Cancel');
  const note = h('p', { class: 'muted small' }, 'The answers after this message will be replaced.');
  const form = h('form', { class: 'edit-form' }, area, note, h('div', { class: 'form-actions' }, cancel, save));
  const kept = [...bubble.childNodes];
  const restore = () => { clear(bubble).append(...kept); };
  clear(bubble).append(form);
  article.querySelector('.msg-actions')?.remove();
  area.focus();
  cancel.addEventListener('click', restore);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = area.value.trim();
    if (!text) { area.focus(); return; }
    if (text === original) { restore(); return; }
    resend(id, text);
  });
}
