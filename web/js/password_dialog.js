// "Change password" dialog: checks the current password, ends every other session.

import { h, field, uid, toast } from './dom.js';
import * as api from './api.js';

export function openPasswordDialog() {
  const errorId = uid('pw-err');
  const status = h('div', { class: 'form-error', id: errorId, role: 'alert' });
  const current = field('Current password', { name: 'current_password', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': errorId });
  const next = field('New password (8 to 128 characters)', { name: 'new_password', type: 'password', autocomplete: 'new-password', required: true, 'aria-describedby': errorId });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Change password');
  const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Cancel');
  const form = h('form', { class: 'auth-form', novalidate: true },
    h('h2', { class: 'auth-title' }, 'Change password'),
    h('p', null, 'Your other signed-in browsers and devices will be signed out.'),
    current.wrap, next.wrap, status, h('div', { class: 'dialog-actions' }, cancel, ' ', submit));
  // On a phone the top bar has no room for the API keys link: it is reachable from here.
  const keys = h('a', { href: '/keys', 'data-nav': '', class: 'dialog-keys-link' }, 'Manage API keys');
  const dialog = h('dialog', { class: 'password-dialog', 'aria-label': 'Change password' }, form, h('p', null, keys));
  keys.addEventListener('click', () => dialog.close());
  cancel.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => dialog.remove());
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.textContent = '';
    submit.disabled = true;
    try {
      await api.changePassword(current.input.value, next.input.value);
      dialog.close();
      toast('Password changed; your other sessions were signed out.');
    } catch (err) {
      status.textContent = err.message || 'The password could not be changed.';
      current.input.focus();
    } finally {
      submit.disabled = false;
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  current.input.focus();
}
