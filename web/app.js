// AgentChat browser UI: entry point, session bootstrap, top bar and client-side routing.

import { h, clear, toast, icon } from './js/dom.js';
import { budgetInfo } from './js/budget.js';
import * as api from './js/api.js';
import { renderAuth } from './js/auth_view.js';
import { ChatView } from './js/chat_view.js';
import { renderAdmin } from './js/admin_view.js';
import { openAccountDialog } from './js/account_dialog.js';
import { renderKeys } from './js/keys_view.js';
import { renderKnowledge } from './js/knowledge_view.js';
import { applyTheme } from './js/theme.js';

const app = document.getElementById('app');

export const state = {
  me: null,
  models: null,
  chat: null, // the ChatView instance while the chat screen is shown
};

let expiredMessage = null;

api.onSessionExpired((msg) => {
  if (!state.me) return;
  state.me = null;
  state.chat?.abort();
  state.chat?.detach();
  state.chat = null;
  expiredMessage = msg;
  navigate('/login', { replace: true });
});

export function navigate(path, { replace = false } = {}) {
  if (location.pathname !== path) {
    if (replace) history.replaceState(null, '', path);
    else history.pushState(null, '', path);
  }
  route();
}

window.addEventListener('popstate', () => route());

// Intercept same-origin in-app links (data-nav) to avoid full reloads.
document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a[data-nav]');
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  ev.preventDefault();
  navigate(a.getAttribute('href'));
});

export async function refreshMe() {
  try {
    state.me = await api.get('/api/me');
    // The account's theme wins over this browser's copy (it may have changed elsewhere).
    if (state.me.preferences) applyTheme(state.me.preferences.theme);
    renderBudget();
  } catch { /* handled by the expiry listener or transient */ }
  return state.me;
}

function renderBudget() {
  const el = document.getElementById('budget');
  if (!el || !state.me) return;
  clear(el);
  const info = budgetInfo(state.me.budget);
  if (!info) return;
  el.title = info.title;
  el.setAttribute('aria-label', info.title);
  el.classList.toggle('budget-low', info.ratio !== null && info.ratio < 0.1);
  if (info.ratio !== null) {
    const bar = h('span', { class: 'meter', 'aria-hidden': 'true' }, h('span', { class: 'meter-fill' }));
    bar.firstChild.style.width = `${Math.round(info.ratio * 100)}%`;
    el.append(bar);
  }
  el.append(h('span', { class: 'budget-text' }, info.text));
}

function shell(active) {
  const me = state.me;
  const isAdmin = me.role === 'admin';
  const menuBtn = h('button', { type: 'button', class: 'icon-btn menu-btn', 'aria-label': 'Show conversations', 'aria-expanded': 'false', 'aria-controls': 'sidebar' }, h('span', { class: 'hamburger', 'aria-hidden': 'true' }));
  menuBtn.hidden = active !== 'chat';
  const signOutNow = async () => {
    state.chat?.abort();
    state.chat?.detach();
    await api.logout();
    state.me = null;
    state.chat = null;
    expiredMessage = 'You have signed out.';
    navigate('/login');
  };
  // On a phone the top bar has no room for this button: it is in the account dialog.
  const signOut = h('button', { type: 'button', class: 'btn btn-ghost topbar-signout' }, 'Sign out');
  signOut.addEventListener('click', signOutNow);
  // The account button (avatar and name) opens the account dialog (password, sign out); it
  // costs no width of its own on a phone, where only the avatar shows.
  const account = h('button', {
    type: 'button', class: 'who who-button',
    title: `Signed in as ${me.username} (${me.role}): theme, default model, password, sign out`,
    'aria-label': `Account ${me.username}`,
  },
  h('span', { class: 'avatar', 'aria-hidden': 'true' }, me.username.slice(0, 1).toUpperCase()),
  h('span', { class: 'who-name' }, me.username),
  h('span', { class: 'role-badge' }, me.role));
  account.addEventListener('click', async () => {
    if (!state.models) state.models = await api.get('/api/models').catch(() => null);
    openAccountDialog({ me: state.me || me, models: state.models, onSignOut: signOutNow });
  });
  const nav = h('nav', { class: 'topnav', 'aria-label': 'Main' },
    h('a', { href: '/', 'data-nav': '', class: 'navlink', 'aria-current': active === 'chat' ? 'page' : null }, 'Chat'),
    // On a phone only its book icon shows (the name stays for screen readers and as a tooltip).
    h('a', { href: '/knowledge', 'data-nav': '', class: 'navlink navlink-knowledge', title: 'Knowledge', 'aria-current': active === 'knowledge' ? 'page' : null },
      icon('book'), h('span', { class: 'navlink-text' }, 'Knowledge')),
    h('a', { href: '/keys', 'data-nav': '', class: 'navlink navlink-keys', 'aria-current': active === 'keys' ? 'page' : null }, 'API keys'),
    isAdmin ? h('a', { href: '/admin/users', 'data-nav': '', class: 'navlink', 'aria-current': active === 'admin' ? 'page' : null }, 'Admin') : null);
  const header = h('header', { class: 'topbar' },
    menuBtn,
    h('a', { href: '/', 'data-nav': '', class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), h('span', { class: 'brand-name' }, 'AgentChat')),
    nav,
    h('div', { class: 'topbar-right' },
      h('div', { id: 'budget', class: 'budget', role: 'status' }),
      account,
      signOut));
  const main = h('main', { id: 'main', class: 'main', tabindex: '-1' });
  clear(app).append(header, main);
  renderBudget();
  return { main, menuBtn };
}

async function route() {
  const path = location.pathname;
  if (!state.me) {
    const ok = await api.resume();
    if (ok) {
      await refreshMe();
    }
    if (!state.me) {
      const msg = expiredMessage || (api.hadSession() ? 'Your session has expired. Please sign in again.' : null);
      expiredMessage = null;
      clear(app);
      document.title = 'Sign in · AgentChat';
      renderAuth(app, {
        message: msg,
        onSignedIn: async () => {
          await refreshMe();
          if (!state.me) throw new Error('Signed in, but the profile could not be loaded.');
          navigate(path === '/login' ? '/' : path, { replace: true });
        },
      });
      return;
    }
  }
  if (path === '/login') { navigate('/', { replace: true }); return; }

  if (path.startsWith('/admin')) {
    if (state.me.role !== 'admin') {
      toast('The admin console is for admins only.', 'error');
      navigate('/', { replace: true });
      return;
    }
    state.chat?.detach();
    state.chat = null;
    const { main } = shell('admin');
    const [, , section = 'users', id = null] = path.split('/');
    document.title = 'Admin · AgentChat';
    renderAdmin(main, section, { id: id && decodeURIComponent(id), me: state.me });
    return;
  }

  if (path === '/keys') {
    state.chat?.detach();
    state.chat = null;
    const { main } = shell('keys');
    document.title = 'API keys · AgentChat';
    renderKeys(main);
    return;
  }

  const k = /^\/knowledge(?:\/([^/]+))?\/?$/.exec(path);
  if (k) {
    state.chat?.detach();
    state.chat = null;
    const { main } = shell('knowledge');
    document.title = 'Knowledge · AgentChat';
    await renderKnowledge(main, k[1] ? decodeURIComponent(k[1]) : null, { me: state.me, navigate });
    return;
  }

  const m = /^\/c\/([^/]+)$/.exec(path);
  const convId = m ? decodeURIComponent(m[1]) : null;
  if (path !== '/' && !m) { navigate('/', { replace: true }); return; }
  if (!state.chat || !state.chat.attached) {
    const { main, menuBtn } = shell('chat');
    state.chat = new ChatView(main, { menuBtn, state, navigate, refreshMe });
    await state.chat.init();
  }
  // Navigated elsewhere while the chat view started: that route owns the screen now.
  if (!state.chat) return;
  await state.chat.open(convId);
}

route().catch((err) => {
  clear(app).append(h('div', { class: 'boot-error', role: 'alert' }, `AgentChat could not start: ${err.message}`));
});
