// The account dialog's "Memory": short notes the user keeps (or asks the model to remember)
// that are added to every chat as context: the on/off switch, the notes with edit and delete,
// a field to add one, and how much of the allowance they use. Hidden when the server has no
// memory (GET /api/me/memory answers 404).

import { h, clear, uid, fmtNumber } from './dom.js';
import * as api from './api.js';

/** A note's first words, to name its buttons. */
const short = (text) => (text.length > 40 ? `${text.slice(0, 39)}…` : text);

export function memorySection() {
  const headingId = uid('memory');
  const err = h('p', { class: 'form-error', role: 'alert' });
  const status = h('p', { class: 'small muted memory-usage', 'aria-live': 'polite' });
  const limitNote = h('p', { class: 'small form-info memory-limit', role: 'status', hidden: true });
  const offNote = h('p', { class: 'small muted memory-off', hidden: true }, 'Memory is off: no notes are added to your chats.');
  const switchBox = h('input', { type: 'checkbox', role: 'switch', id: `${headingId}-on` });
  const list = h('ul', { class: 'memory-list', 'aria-label': 'Memory notes' });
  const addInput = h('textarea', { id: `${headingId}-new`, rows: '2', class: 'memory-input', name: 'memory_note' });
  const addBtn = h('button', { type: 'submit', class: 'btn btn-small' }, 'Add note');
  const addForm = h('form', { class: 'memory-add', novalidate: true },
    h('label', { for: addInput.id }, 'New note'), addInput, h('div', { class: 'memory-add-actions' }, addBtn));
  // Disabled as a whole while memory is off.
  const notes = h('fieldset', { class: 'memory-notes' }, h('legend', { class: 'visually-hidden' }, 'Memory notes'), list, limitNote, addForm);
  const section = h('section', { class: 'account-memory', 'aria-labelledby': headingId, hidden: true },
    h('h3', { class: 'account-section', id: headingId }, 'Memory'),
    h('p', { class: 'small muted' }, 'Notes you keep here are added to every chat as context, so you need not repeat them. They never override the instructions of the server, an assistant or a chat. Ask the assistant to "remember …" and it can add one.'),
    h('div', { class: 'field-inline memory-switch' }, switchBox, h('label', { for: switchBox.id }, 'Use memory in my chats')),
    offNote, status, notes, err);

  let data = null;

  const fail = (e, what) => { if (e.status !== 401) err.textContent = e.message || `The note could not be ${what}.`; };

  function draw(focus) {
    const { enabled, limits = {} } = data;
    const items = data.notes || [];
    switchBox.checked = enabled;
    notes.disabled = !enabled;
    offNote.hidden = enabled;
    const tokens = `~${fmtNumber(data.used_tokens ?? 0)}${limits.max_total_tokens ? ` of ${fmtNumber(limits.max_total_tokens)}` : ''} tokens`;
    status.textContent = `${items.length}${limits.max_notes ? ` of ${limits.max_notes}` : ''} note${(limits.max_notes || items.length) === 1 ? '' : 's'} · ${tokens}`;
    const full = Boolean(limits.max_notes) && items.length >= limits.max_notes;
    limitNote.hidden = !full;
    limitNote.textContent = full ? `Memory is full: ${limits.max_notes} notes at most. Delete one to add another.` : '';
    addBtn.disabled = full;
    if (limits.max_note_chars) addInput.maxLength = limits.max_note_chars;
    addInput.setAttribute('placeholder', limits.max_note_chars ? `Up to ${fmtNumber(limits.max_note_chars)} characters` : '');
    clear(list);
    if (!items.length) list.append(h('li', { class: 'memory-empty muted small' }, 'No notes yet.'));
    for (const n of items) list.append(noteItem(n));
    if (focus) focus();
  }

  async function reload(focus) {
    try {
      data = await api.memory();
      draw(focus);
    } catch (e) { fail(e, 'loaded'); }
  }

  function noteItem(n) {
    const edit = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Edit note: ${short(n.text)}` }, 'Edit');
    const del = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Delete note: ${short(n.text)}` }, 'Delete');
    const item = h('li', { class: 'memory-note', dataset: { noteId: n.id } },
      h('p', { class: 'memory-text' }, n.text),
      h('div', { class: 'memory-note-foot' },
        n.source === 'model' ? h('span', { class: 'pill' }, 'saved by the assistant') : null,
        h('span', { class: 'row-actions' }, edit, del)));
    del.addEventListener('click', async () => {
      // Asks once more on the button itself, as the other small deletes do.
      if (del.dataset.confirm !== '1') {
        del.dataset.confirm = '1';
        del.textContent = 'Confirm';
        del.classList.add('btn-danger');
        del.setAttribute('aria-label', `Confirm: delete note: ${short(n.text)}`);
        return;
      }
      err.textContent = '';
      del.disabled = true;
      try {
        await api.deleteMemoryNote(n.id);
        await reload(() => addInput.focus());
      } catch (e) { fail(e, 'deleted'); del.disabled = false; }
    });
    edit.addEventListener('click', () => {
      const form = editForm(n, item);
      item.replaceWith(form);
      // At once, not after a timeout: the Edit button just left the page, and a key pressed
      // before focus lands would reach the dialog (Escape would close it).
      form.querySelector('textarea').focus();
    });
    return item;
  }

  function editForm(n, item) {
    const id = uid('memory-edit');
    const input = h('textarea', { id, rows: '3', class: 'memory-input' });
    input.value = n.text;
    if (data.limits?.max_note_chars) input.maxLength = data.limits.max_note_chars;
    const save = h('button', { type: 'submit', class: 'btn btn-small btn-primary' }, 'Save note');
    const cancel = h('button', { type: 'button', class: 'btn btn-small btn-ghost' }, 'Cancel');
    const form = h('form', { class: 'memory-edit', novalidate: true },
      h('label', { for: id, class: 'visually-hidden' }, 'Edit note'), input, h('div', { class: 'row-actions' }, cancel, save));
    const li = h('li', { class: 'memory-note editing' }, form);
    const back = () => { li.replaceWith(item); item.querySelector('button').focus(); };
    cancel.addEventListener('click', back);
    input.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); back(); } });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      const text = input.value.trim();
      if (!text) { err.textContent = 'A note cannot be empty: delete it instead.'; input.focus(); return; }
      if (text === n.text) { back(); return; }
      save.disabled = true;
      try {
        await api.editMemoryNote(n.id, text);
        await reload(() => list.querySelector(`[data-note-id="${CSS.escape(n.id)}"] button`)?.focus());
      } catch (e) { fail(e, 'saved'); save.disabled = false; input.focus(); }
    });
    return li;
  }

  addForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const text = addInput.value.trim();
    if (!text) { err.textContent = 'Write the note first.'; addInput.focus(); return; }
    addBtn.disabled = true;
    try {
      await api.addMemoryNote(text);
      addInput.value = '';
      await reload(() => addInput.focus());
    } catch (e) {
      fail(e, 'added');
      addBtn.disabled = false;
      addInput.focus();
    }
  });

  switchBox.addEventListener('change', async () => {
    const enabled = switchBox.checked;
    err.textContent = '';
    switchBox.disabled = true;
    try {
      const res = await api.setMemoryEnabled(enabled);
      data.enabled = res?.enabled ?? enabled;
      draw();
    } catch (e) {
      switchBox.checked = !enabled;
      if (e.status !== 401) err.textContent = e.message || 'Memory could not be turned on or off.';
    } finally {
      switchBox.disabled = false;
    }
  });

  api.memory().then((m) => {
    data = m;
    section.hidden = false;
    draw();
  }, (e) => {
    if (e.status === 404 || e.status === 401) return; // no memory on this server
    section.hidden = false;
    err.textContent = `Could not load your memory: ${e.message}`;
    switchBox.disabled = true;
    notes.disabled = true;
  });
  return section;
}
