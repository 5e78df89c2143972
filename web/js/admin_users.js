// Admin console, users: create, role, disable, budget override, password reset, delete.

import { h, clear, field, fmtDate, fmtNumber, toast } from './dom.js';
import * as api from './api.js';
import { unavailable, loading } from './admin_common.js';
import { confirmAction, resetPassword } from './admin_dialogs.js';

// ---------------- users ----------------

// Where an account comes from (`source` in the admin users API).
const SOURCE_LABELS = { password: 'password', sso: 'SSO', scim: 'SCIM' };
const SOURCE_TITLES = {
  password: 'Local account with a password',
  sso: 'Created at its first single sign-on; no local password',
  scim: 'Provisioned by the identity provider (SCIM); signs in with single sign-on',
};

export async function renderUsers(body, me) {
  clear(body);
  const l = loading(body);
  let users;
  let roles = null;
  try {
    [users, roles] = await Promise.all([
      api.get('/api/admin/users'),
      api.get('/api/admin/roles').catch(() => null),
    ]);
  } catch (err) {
    l.remove();
    unavailable(body, err, 'User management');
    return;
  }
  l.remove();
  const roleNames = roles?.items?.map((r) => r.name) || ['admin', 'member'];
  const roleOptions = (selected) => roleNames.map((r) => h('option', { value: r, selected: r === selected }, r));

  // Create form
  const uname = field('Username', { name: 'new-username', autocomplete: 'off', required: true });
  const pw = field('Password', { name: 'new-password', type: 'password', autocomplete: 'new-password', required: true, minlength: '8', maxlength: '128', 'aria-describedby': 'new-password-rules' });
  pw.wrap.append(h('p', { class: 'field-hint', id: 'new-password-rules' }, '8 to 128 characters.'));
  const roleSel = h('select', { id: 'new-user-role' }, roleOptions('member'));
  const roleField = h('div', { class: 'field' }, h('label', { for: 'new-user-role' }, 'Role'), roleSel);
  const err = h('p', { class: 'form-error', role: 'alert' });
  const create = h('form', { class: 'card inline-form', 'aria-label': 'Create user' },
    h('h2', null, 'Create user'), h('div', { class: 'form-row' }, uname.wrap, pw.wrap, roleField,
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create user')), err);
  create.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    try {
      await api.post('/api/admin/users', { username: uname.input.value.trim(), password: pw.input.value, role: roleSel.value });
      toast(`User ${uname.input.value.trim()} created.`);
      renderUsers(body, me);
    } catch (e) {
      err.textContent = e.message;
    }
  });

  const rows = (users.items || []).map((u) => {
    const role = h('select', { 'aria-label': `Role for ${u.username}` }, roleOptions(u.role));
    if (!roleNames.includes(u.role)) role.prepend(h('option', { value: u.role, selected: true }, u.role));
    role.addEventListener('change', () => patchUser(u, { role: role.value }, `${u.username} is now ${role.value}.`));
    const self = me && u.id === me.id;
    const disabled = h('input', { type: 'checkbox', checked: u.disabled, id: `dis-${u.id}`, 'aria-label': `Disable ${u.username}`, disabled: self, title: self ? 'You cannot disable your own account' : null });
    disabled.addEventListener('change', async () => {
      if (!disabled.checked) { patchUser(u, { disabled: false }, `${u.username} enabled.`); return; }
      // Disabling ends every session, API key use and running reply of the account: ask first.
      const ok = await confirmAction({
        title: `Disable ${u.username}?`,
        text: `${u.username} is signed out everywhere, their API keys stop working and their running replies stop. You can enable the account again later.`,
        confirmLabel: 'Disable account',
      });
      if (ok) patchUser(u, { disabled: true }, `${u.username} disabled.`);
      else disabled.checked = false;
    });
    const budget = h('input', { type: 'number', min: '0', step: '1000', class: 'num-input', value: u.token_budget ?? '', placeholder: 'role default', 'aria-label': `Token budget for ${u.username}` });
    const saveBudget = h('button', { type: 'button', class: 'btn btn-small' }, 'Save');
    saveBudget.setAttribute('aria-label', `Save budget for ${u.username}`);
    saveBudget.addEventListener('click', () => {
      const v = budget.value.trim();
      patchUser(u, { token_budget: v === '' ? null : Number(v) }, v === '' ? `${u.username} uses the role budget.` : `Budget for ${u.username} set to ${fmtNumber(v)}.`);
    });
    disabled.addEventListener('change', () => disabled.closest('tr')?.classList.toggle('row-disabled', disabled.checked));
    const reset = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Reset password of ${u.username}` }, 'Reset password');
    const local = (u.source || 'password') === 'password';
    if (self || !local) {
      reset.disabled = true;
      reset.title = self ? 'Change your own password from your account' : 'This account signs in through single sign-on; its password is managed by the identity provider';
    }
    reset.addEventListener('click', async () => {
      if (await resetPassword(u)) toast(`Password of ${u.username} reset; they were signed out everywhere.`);
    });
    const del = h('button', { type: 'button', class: 'btn btn-small btn-danger', 'aria-label': `Delete ${u.username}`, disabled: self, title: self ? 'You cannot delete your own account' : null }, 'Delete');
    del.addEventListener('click', async () => {
      const ok = await confirmAction({
        title: `Delete ${u.username}?`,
        text: `This deletes ${u.username}'s account, conversations, files and API keys for good, and signs them out. The audit logs and usage keep their name. This cannot be undone.`,
        confirmLabel: 'Delete account',
        run: () => api.del(`/api/admin/users/${encodeURIComponent(u.id)}`),
      });
      if (ok) { toast(`${u.username} deleted.`); renderUsers(body, me); }
    });
    return h('tr', { class: u.disabled ? 'row-disabled' : null, dataset: { userId: u.id } },
      h('th', { scope: 'row' }, u.username, self ? h('span', { class: 'pill' }, 'you') : null),
      h('td', { 'data-label': 'Sign-in' }, h('span', { class: 'pill', title: SOURCE_TITLES[u.source] || '' }, SOURCE_LABELS[u.source] || u.source || 'password')),
      h('td', { 'data-label': 'Role' }, role),
      h('td', { 'data-label': 'Status' }, h('label', { class: 'check', for: `dis-${u.id}` }, disabled, ' Disabled')),
      h('td', { 'data-label': 'Budget override (tokens)' }, h('div', { class: 'inline' }, budget, saveBudget)),
      h('td', { class: 'muted', 'data-label': 'Created' }, fmtDate(u.created_at)),
      h('td', { 'data-label': 'Actions' }, h('div', { class: 'inline row-actions' }, reset, del)));
  });
  async function patchUser(u, change, okText) {
    try {
      const updated = await api.patch(`/api/admin/users/${encodeURIComponent(u.id)}`, change);
      Object.assign(u, updated || change);
      toast(okText);
    } catch (e) {
      toast(`Update failed: ${e.message}`, 'error');
      renderUsers(body, me);
    }
  }
  body.append(create, h('div', { class: 'card' }, h('h2', null, 'Users'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'data-table stack' },
      h('thead', null, h('tr', null, ['User', 'Sign-in', 'Role', 'Status', 'Budget override (tokens)', 'Created', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, rows)))));
}
