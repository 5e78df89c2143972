// "API keys" page: create a personal key (its secret shown once, with a copy button), list
// and revoke one's keys. Keys work with OpenAI clients pointed at this server's /v1. Every
// key expires (the server's default and maximum lifetime shape the choices), may carry the
// `files`, `knowledge` and `memory` scopes (its turns may use the workspace file tools, search
// your documents, keep notes for your chats), and on a sign-in older than
// the server's re-auth window the page asks for the password before making one.

import { h, clear, field, fmtDate, toast } from './dom.js';
import * as api from './api.js';

const EXPIRY_DAYS = [7, 30, 90, 180, 365];

function daysLabel(d) {
  return d === 365 ? 'In a year' : `In ${d} days`;
}

/** The expiry choices: the usual ones within the maximum, the default and the maximum itself. */
function expiryChoices(policy) {
  const days = new Set(EXPIRY_DAYS.filter((d) => d <= policy.max_days));
  days.add(policy.default_days);
  days.add(policy.max_days);
  return [...days].sort((a, b) => a - b);
}

export function renderKeys(main) {
  const base = `${location.origin}/v1`;
  const name = field('Name', { name: 'key_name', maxlength: '100', required: true, placeholder: 'e.g. laptop editor' });
  const expiry = field('Expires', { name: 'key_expiry' }, 'select');
  const SCOPES = [
    ['files', 'Workspace files: the key\'s chats may read and change your files'],
    ['knowledge', 'Knowledge: the key\'s chats may search the documents you may read'],
    ['memory', 'Memory: the key\'s chats may keep notes that your later chats are given'],
  ];
  const boxes = SCOPES.map(([sc, label]) => [sc, label, h('input', { type: 'checkbox', id: `key-scope-${sc}`, name: `key_scope_${sc}` })]);
  const password = field('Confirm your password', { name: 'key_password', type: 'password', autocomplete: 'current-password' });
  password.wrap.hidden = true;
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create key');
  const error = h('div', { class: 'form-error', role: 'alert' });
  const form = h('form', { class: 'inline-form', novalidate: true },
    h('div', { class: 'form-row' }, name.wrap, expiry.wrap, h('div', { class: 'field field-auto' }, submit)),
    ...boxes.map(([sc, label, box]) => h('div', { class: 'field-inline' }, box, h('label', { for: `key-scope-${sc}` }, label))),
    password.wrap, error);
  let policy = { default_days: 90, max_days: 365, reauth_secs: 300 };
  function drawExpiry() {
    clear(expiry.input);
    for (const d of expiryChoices(policy)) {
      expiry.input.append(h('option', { value: String(d), selected: d === policy.default_days || null }, daysLabel(d)));
    }
  }
  drawExpiry();
  const fresh = h('div', { class: 'key-fresh', 'aria-live': 'polite' });
  const list = h('div', { class: 'table-wrap' });
  main.append(h('div', { class: 'admin' },
    h('div', { class: 'admin-head' }, h('h1', null, 'API keys')),
    h('div', { class: 'admin-body' },
      h('div', { class: 'card' },
        h('p', null, 'Use a key with any OpenAI-compatible client: base URL ', h('code', null, base),
          ', the key as its API key. It acts as you, with your tools and budget, and only on that API.'),
        form, fresh),
      h('div', { class: 'card' }, h('h2', null, 'Your keys'), list))));

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.textContent = '';
    const body = { name: name.input.value.trim(), scopes: ['chat', ...boxes.filter(([, , box]) => box.checked).map(([sc]) => sc)] };
    if (!body.name) { error.textContent = 'Give the key a name.'; name.input.focus(); return; }
    // A minute short of the chosen day count: the maximum itself stays within the limit.
    body.expires_at = new Date(Date.now() + Number(expiry.input.value) * 86400000 - 60000).toISOString();
    if (!password.wrap.hidden && password.input.value) body.password = password.input.value;
    submit.disabled = true;
    try {
      const created = await api.post('/api/keys', body);
      name.input.value = '';
      for (const [, , box] of boxes) box.checked = false;
      password.input.value = '';
      password.wrap.hidden = true;
      showSecret(created);
      await load();
    } catch (err) {
      if (err.code === 'reauth_required') {
        password.wrap.hidden = false;
        error.textContent = 'You signed in a while ago: confirm your password to create a key. (Single sign-on accounts: sign out and in again.)';
        password.input.focus();
      } else {
        error.textContent = err.message || 'The key could not be created.';
        if (err.code === 'wrong_password') password.input.focus();
      }
    } finally {
      submit.disabled = false;
    }
  });

  function showSecret(created) {
    const secret = h('input', { class: 'key-secret', readonly: true, value: created.key, 'aria-label': `Secret of key ${created.name}` });
    const copy = h('button', { type: 'button', class: 'btn' }, 'Copy');
    copy.addEventListener('click', async () => {
      secret.select();
      try {
        await navigator.clipboard.writeText(created.key);
        toast('Key copied.');
      } catch {
        toast('Select the key and copy it by hand.', 'error');
      }
    });
    clear(fresh).append(h('div', { class: 'banner banner-warn', role: 'status' },
      h('div', { class: 'banner-text' }, h('strong', null, `Key "${created.name}" created. `),
        'Copy it now: it is shown only this once.'),
    ), h('div', { class: 'form-row' }, h('div', { class: 'field' }, secret), h('div', { class: 'field field-auto' }, copy)));
    secret.focus();
    secret.select();
  }

  async function load() {
    let keys;
    try {
      const listed = await api.get('/api/keys');
      keys = listed.items;
      if (listed.policy) { policy = listed.policy; drawExpiry(); }
    } catch (err) {
      if (err.status === 401) return;
      clear(list).append(h('p', { class: 'form-error' }, `Could not load your keys: ${err.message}`));
      return;
    }
    if (!keys.length) { clear(list).append(h('p', { class: 'muted' }, 'No keys yet.')); return; }
    const rows = keys.map((k) => {
      const revoke = h('button', { type: 'button', class: 'btn btn-danger btn-small', 'aria-label': `Revoke key ${k.name}` }, 'Revoke');
      // Two clicks: the first asks, the second revokes (clients using it stop at once).
      revoke.addEventListener('click', async () => {
        if (!revoke.dataset.armed) {
          revoke.dataset.armed = '1';
          revoke.textContent = 'Confirm revoke';
          revoke.setAttribute('aria-label', `Confirm: revoke key ${k.name}; clients using it stop working`);
          return;
        }
        revoke.disabled = true;
        try {
          await api.del(`/api/keys/${encodeURIComponent(k.id)}`);
          toast(`Key "${k.name}" revoked.`);
          clear(fresh);
          await load();
        } catch (err) {
          revoke.disabled = false;
          toast(`Could not revoke: ${err.message}`, 'error');
        }
      });
      return h('tr', null,
        h('td', null, k.name), h('td', null, h('code', null, `${k.prefix}…`)),
        h('td', { class: 'key-scopes' }, (k.scopes || ['chat']).map((sc) => h('span', { class: 'pill', dataset: { scope: sc } }, sc))),
        h('td', null, fmtDate(k.created_at)), h('td', null, k.expires_at ? fmtDate(k.expires_at) : 'Never'),
        h('td', null, k.last_used_at ? fmtDate(k.last_used_at) : 'Never'), h('td', null, revoke));
    });
    clear(list).append(h('table', { class: 'data-table keys-table' },
      h('thead', null, h('tr', null, ['Name', 'Key', 'Scopes', 'Created', 'Expires', 'Last used', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rows)));
  }
  load();
}
