// The actions on a collection and their dialogs: rename and describe it (PATCH), share it
// with roles (admins: PUT /grants with the roles of GET /api/admin/roles), delete it. Each
// dialog resolves to the saved collection, or null when cancelled.

import { h, field, uid, toast } from './dom.js';
import * as api from './api.js';
import { collectionPath, countsText } from './knowledge_common.js';
import { confirmAction } from './admin_dialogs.js';

/** Longest name and description the forms offer (the server has the last word). */
const MAX_NAME = 100;
const MAX_DESCRIPTION = 2000;

/** A modal form: `fields` above an error line and Cancel / `submitLabel`. */
function formDialog({ title, fields, submitLabel, run }) {
  return new Promise((resolve) => {
    const titleId = uid('kdlg');
    const err = h('p', { class: 'form-error', role: 'alert' });
    const ok = h('button', { type: 'submit', class: 'btn btn-primary' }, submitLabel);
    const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Cancel');
    const form = h('form', { novalidate: true }, ...fields, err, h('div', { class: 'dialog-actions' }, cancel, ok));
    const dialog = h('dialog', { class: 'account-dialog knowledge-dialog', 'aria-labelledby': titleId },
      h('h2', { class: 'auth-title', id: titleId }, title), form);
    let saved = null;
    cancel.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => { dialog.remove(); resolve(saved); });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      ok.disabled = true;
      try {
        saved = await run();
        if (saved !== undefined) dialog.close();
      } catch (e) {
        err.textContent = e.message || 'That did not work.';
      } finally {
        ok.disabled = false;
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    form.querySelector('input, textarea')?.focus();
  });
}

/** Rename and describe `c`. */
export function editCollection(c) {
  const name = field('Name', { value: c.name, maxlength: String(MAX_NAME), required: true, autocomplete: 'off' });
  const description = field('Description (optional)', { rows: '3', maxlength: String(MAX_DESCRIPTION) }, 'textarea');
  description.input.value = c.description || '';
  return formDialog({
    title: `Edit ${c.name}`,
    fields: [name.wrap, description.wrap],
    submitLabel: 'Save',
    run: async () => {
      const change = {};
      const n = name.input.value.trim();
      const d = description.input.value.trim();
      if (!n) { name.input.focus(); throw new Error('Give the collection a name.'); }
      if (n !== c.name) change.name = n;
      if (d !== (c.description || '')) change.description = d;
      if (!Object.keys(change).length) return c;
      return api.patch(collectionPath(c.id), change);
    },
  });
}

/** Share `c` with roles (admins only): everyone with one of them may search it. */
export async function shareCollection(c) {
  let roles;
  try {
    roles = (await api.get('/api/admin/roles')).items.map((r) => r.name);
  } catch {
    roles = ['admin', 'member']; // the grants endpoint still checks them
  }
  for (const r of c.roles || []) if (!roles.includes(r)) roles.push(r);
  const boxes = roles.map((r) => {
    const id = uid('share');
    const cb = h('input', { type: 'checkbox', id, value: r, checked: (c.roles || []).includes(r) });
    return { cb, el: h('div', { class: 'field-inline' }, cb, h('label', { for: id }, r)) };
  });
  const group = h('fieldset', { class: 'share-roles' },
    h('legend', null, 'Roles that may search it'),
    boxes.map((b) => b.el));
  return formDialog({
    title: `Share ${c.name}`,
    fields: [
      h('p', { class: 'muted small' }, 'Everyone with a ticked role can pin and search this collection; only its owner and admins change it. None ticked: personal again.'),
      group,
    ],
    submitLabel: 'Save sharing',
    run: () => api.put(`${collectionPath(c.id)}/grants`, { roles: boxes.filter((b) => b.cb.checked).map((b) => b.cb.value) }),
  });
}

/** The actions on a collection one manages: Edit, Share (admins), Delete. */
export function collectionActions(c, { me, onChanged, onDeleted }) {
  if (!c.can_manage) return null;
  const edit = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Edit ${c.name}` }, 'Edit');
  edit.addEventListener('click', async () => {
    const saved = await editCollection(c);
    if (saved && saved !== c) { toast('Collection saved.'); onChanged(saved); }
    edit.focus();
  });
  const buttons = [edit];
  if (me?.role === 'admin') {
    const share = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Share ${c.name} with roles` }, 'Share with roles');
    share.addEventListener('click', async () => {
      const saved = await shareCollection(c);
      if (saved) {
        toast(saved.roles?.length ? `Shared with ${saved.roles.join(', ')}.` : 'Personal again: shared with no role.');
        onChanged(saved);
      }
      share.focus();
    });
    buttons.push(share);
  }
  const del = h('button', { type: 'button', class: 'btn btn-small btn-danger', 'aria-label': `Delete ${c.name}` }, 'Delete');
  del.addEventListener('click', async () => {
    const gone = await confirmAction({
      title: `Delete ${c.name}?`,
      text: `Its ${countsText(c)} go, and chats stop finding them. Citations of it stop opening.`,
      confirmLabel: 'Delete collection',
      run: () => api.del(collectionPath(c.id)),
    });
    if (gone) { toast(`Deleted ${c.name}.`); onDeleted(c); } else del.focus();
  });
  buttons.push(del);
  return h('div', { class: 'row-actions collection-actions' }, buttons);
}

/** Who else sees it: "Shared with member, staff", or personal. */
export function sharingText(c) {
  const owner = c.mine ? '' : `${c.owner?.username || 'someone'}'s · `;
  return c.roles?.length ? `${owner}shared with ${c.roles.join(', ')}` : `${owner}personal`;
}
