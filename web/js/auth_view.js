// Sign-in / register screen.

import { h, field, uid } from './dom.js';
import * as api from './api.js';

export function renderAuth(root, { message, onSignedIn }) {
  let mode = 'signin';
  const errorId = uid('auth-err');
  const status = h('div', { class: 'form-error', id: errorId, role: 'alert' });
  const info = h('div', { class: 'form-info', role: 'status' }, message || '');
  if (!message) info.hidden = true;

  const user = field('Username', { name: 'username', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false', 'aria-describedby': errorId });
  const pass = field('Password', { name: 'password', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': `${errorId}-rules ${errorId}` });
  // The rules are shown before the first attempt, not learned from an error.
  const rules = h('p', { class: 'field-hint', id: `${errorId}-rules` }, 'At least 8 characters (at most 128); a passphrase of a few words is best.');
  rules.hidden = true;
  pass.wrap.append(rules);
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Sign in');
  const heading = h('h1', { class: 'auth-title' }, 'Sign in to AgentChat');
  const switchText = h('span', null, 'No account yet?');
  const switchBtn = h('button', { type: 'button', class: 'btn-link' }, 'Register');

  const setMode = (m) => {
    mode = m;
    const reg = m === 'register';
    heading.textContent = reg ? 'Create your AgentChat account' : 'Sign in to AgentChat';
    submit.textContent = reg ? 'Register' : 'Sign in';
    switchText.textContent = reg ? 'Already have an account?' : 'No account yet?';
    switchBtn.textContent = reg ? 'Sign in' : 'Register';
    pass.input.setAttribute('autocomplete', reg ? 'new-password' : 'current-password');
    rules.hidden = !reg;
    status.textContent = '';
  };
  switchBtn.addEventListener('click', () => setMode(mode === 'signin' ? 'register' : 'signin'));

  // Single sign-on buttons; the password form only while password sign-in is on.
  const sso = h('div', { class: 'sso-buttons' });
  sso.hidden = true;
  const form = h('form', { class: 'auth-form', novalidate: true }, heading, info, sso, user.wrap, pass.wrap, status, submit,
    h('p', { class: 'auth-switch' }, switchText, ' ', switchBtn));

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const username = user.input.value.trim();
    const password = pass.input.value;
    status.textContent = '';
    info.hidden = true;
    if (!username || !password) {
      status.textContent = 'Enter a username and a password.';
      (username ? pass.input : user.input).focus();
      return;
    }
    submit.disabled = true;
    submit.setAttribute('aria-busy', 'true');
    try {
      if (mode === 'register') {
        await api.register(username, password);
      }
      await api.login(username, password);
      info.hidden = true;
      await onSignedIn();
    } catch (err) {
      let msg = err.message || 'Something went wrong.';
      if (err.status === 429 && err.retryAfter) msg += ` Try again in ${err.retryAfter} s.`;
      if (err.status === 401) msg = 'Wrong username or password.';
      status.textContent = msg;
      pass.input.focus();
    } finally {
      submit.disabled = false;
      submit.removeAttribute('aria-busy');
    }
  });

  root.append(h('main', { id: 'main', class: 'auth-page' },
    h('div', { class: 'auth-card' },
      h('div', { class: 'auth-brand', 'aria-hidden': 'true' }, h('span', { class: 'logo' }), 'AgentChat'),
      form,
      h('p', { class: 'auth-foot' }, 'Your conversations are private to your account.'))));
  user.input.focus();
  api.providers().then((p) => {
    if (!p) return;
    for (const b of p.sso || []) {
      sso.append(h('a', { class: 'btn btn-primary btn-block', href: b.login_url }, `Sign in with ${b.name}`));
    }
    sso.hidden = !(p.sso || []).length;
    if (!p.password) {
      form.replaceChildren(heading, info, sso);
      heading.textContent = 'Sign in to AgentChat';
    } else if (!p.registration) {
      switchText.parentElement?.remove();
    }
  });
}
