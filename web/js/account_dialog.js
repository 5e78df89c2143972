// The account dialog (the avatar button in the top bar): who is signed in, theme and default
// model (preferences_form.js), memory notes (memory_section.js), change password (ends every other session and, unless
// unticked, revokes the API keys), sign out. On a
// phone it is where "Sign out" lives, so the top bar keeps its width.

import { h, field, uid, toast } from './dom.js';
import * as api from './api.js';
import { preferencesSection } from './preferences_form.js';
import { memorySection } from './memory_section.js';

export function openAccountDialog({ me, models, onSignOut }) {
  const errorId = uid('pw-err');
  const status = h('div', { class: 'form-error', id: errorId, role: 'alert' });
  const current = field('Current password', { name: 'current_password', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': errorId });
  const next = field('New password (8 to 128 characters)', { name: 'new_password', type: 'password', autocomplete: 'new-password', required: true, 'aria-describedby': errorId });
  const revoke = h('input', { type: 'checkbox', id: `${errorId}-revoke`, checked: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Change password');
  const close = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Close');
  const signOut = h('button', { type: 'button', class: 'btn btn-ghost account-signout' }, 'Sign out');
  const form = h('form', { class: 'auth-form', novalidate: true, 'aria-labelledby': `${errorId}-h` },
    h('h3', { class: 'account-section', id: `${errorId}-h` }, 'Change password'),
    h('p', null, 'Your other signed-in browsers and devices will be signed out.'),
    current.wrap, next.wrap,
    h('div', { class: 'field-inline' }, revoke,
      h('label', { for: `${errorId}-revoke` }, 'Also revoke my API keys (clients using them stop working)')),
    status, h('div', { class: 'dialog-actions' }, submit));
  const keys = h('a', { href: '/keys', 'data-nav': '', class: 'dialog-keys-link' }, 'Manage API keys');
  const dialog = h('dialog', { class: 'account-dialog', 'aria-label': 'Account' },
    h('div', { class: 'account-head' },
      h('span', { class: 'avatar', 'aria-hidden': 'true' }, me.username.slice(0, 1).toUpperCase()),
      h('div', null, h('h2', { class: 'auth-title' }, me.username), h('span', { class: 'role-badge' }, me.role))),
    preferencesSection(me, models),
    memorySection(),
    form,
    // On a phone the top bar has no room for the API keys link: it is reachable from here.
    h('p', null, keys),
    h('div', { class: 'dialog-actions account-foot' }, signOut, close));
  keys.addEventListener('click', () => dialog.close());
  close.addEventListener('click', () => dialog.close());
  signOut.addEventListener('click', () => { dialog.close(); onSignOut(); });
  dialog.addEventListener('close', () => dialog.remove());
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.textContent = '';
    submit.disabled = true;
    try {
      await api.changePassword(current.input.value, next.input.value, { revokeApiKeys: revoke.checked });
      dialog.close();
      toast(revoke.checked
        ? 'Password changed; your other sessions were signed out and your API keys revoked.'
        : 'Password changed; your other sessions were signed out.');
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
