// The page of a shared conversation (/s/{id}, web/share.html): fetches GET /api/shares/{id}
// — with the signed-in user's token when this browser has a session, else as nobody (a
// public link needs no sign-in) — and draws it read-only, as the chat does (markdown, tool
// cards, attached files, which download through the link; attached images as thumbnails
// fetched the same way). A banner says who shared it,
// when the snapshot was taken and that it is read-only; signed-in readers may continue it
// as a copy of their own. A gone link (410), one that needs signing in (401, with the
// sign-in form in place: the page comes back by itself) and an unknown one have pages
// of their own. A long conversation arrives as a window of its latest messages; "Show
// earlier messages" fetches the page before it (`?before=` the answer's cursor), as the
// chat does. Too many readings at once answer 429: the page says when to try again.

import { h, clear, fmtBytes, fmtDate, icon, toast } from './dom.js';
import * as api from './api.js';
import { AssistantTurn, ToolCard, userBubble, parseToolContent, FINISH_NOTES } from './turn.js';
import { renderAuth } from './auth_view.js';
import { isWebCitation } from './web_sources.js';
import { shareWebSources } from './share_web_sources.js';
import { splitImages } from './image_thumbs.js';

const root = document.getElementById('share-root');
const shareId = decodeURIComponent(location.pathname.split('/')[2] || '');
const sharePath = `/api/shares/${encodeURIComponent(shareId)}`;
let signedIn = false;

/** A request as nobody (no token): the answer's JSON, or an ApiError. */
async function anonymous(path, accept = 'application/json') {
  const resp = await fetch(path, { headers: { Accept: accept }, credentials: 'omit' });
  if (resp.ok) return resp;
  let body = null;
  try { body = await resp.json(); } catch { /* not JSON */ }
  throw new api.ApiError(resp.status, body?.error?.code, body?.error?.message || `Request failed (${resp.status})`);
}

/** GET `path` as this page's reader: signed in when possible; a dead session reads as nobody. */
async function request(path, accept) {
  if (signedIn) {
    try {
      return await api.api('GET', path, undefined, { response: true, accept });
    } catch (err) {
      if (err.status !== 401 || err.code === 'sign_in_required') throw err;
      signedIn = false; // the session ended: a public link still reads
    }
  }
  return anonymous(path, accept);
}

/** A file of the snapshot through the link (its attachments and what its tool results saved). */
const shareFile = (path) => request(`${sharePath}/files/${path.split('/').map(encodeURIComponent).join('/')}`, '*/*');

/** The code card's charts and download chips come through the link, like attached files
 * (only files the snapshot's tool results saved; none while the link hides tool outputs). */
ToolCard.codeFiles = { fetchFile: shareFile };

async function load() {
  clear(root).append(h('p', { class: 'boot', role: 'status' }, 'Loading the shared conversation…'));
  try {
    const resp = await request(sharePath, 'application/json');
    render(await resp.json());
  } catch (err) {
    problem(err);
  }
}

function page(title, text, ...actions) {
  document.title = `${title} · AgentChat`;
  return h('section', { class: 'share-problem', 'aria-labelledby': 'share-problem-title' },
    h('h1', { id: 'share-problem-title', tabindex: '-1' }, title),
    h('p', { class: 'muted' }, text),
    actions.length ? h('div', { class: 'share-problem-actions' }, ...actions) : null);
}

/** Shows the sign-in form in place; once signed in, the page reads the link again. */
function signIn(message) {
  clear(root);
  const host = h('div', { class: 'share-signin' });
  root.append(host);
  renderAuth(host, {
    message,
    onSignedIn: async () => {
      signedIn = true;
      await load();
    },
  });
}

function problem(err) {
  clear(root);
  const home = h('a', { class: 'btn', href: '/' }, 'Open AgentChat');
  if (err.status === 410) {
    root.append(page('This link no longer works', `${err.message} Ask the person who shared it for a new link.`, home));
  } else if (err.status === 401) {
    const go = h('button', { type: 'button', class: 'btn btn-primary' }, 'Sign in to read it');
    go.addEventListener('click', () => signIn('Sign in to read the shared conversation; you come back to it right after.'));
    root.append(page('Sign in to read this conversation',
      'It is shared with the members of this AgentChat server only.', go));
  } else if (err.status === 429) {
    const retry = h('button', { type: 'button', class: 'btn btn-primary' }, 'Try again');
    retry.addEventListener('click', load);
    root.append(page('Too many readings right now', err.message || 'This link was read too often in the last minute.', retry));
  } else if (err.status === 404) {
    root.append(page('Shared conversation not found', 'This link does not lead to a shared conversation. Check that it was copied whole.', home));
  } else {
    const retry = h('button', { type: 'button', class: 'btn btn-primary' }, 'Try again');
    retry.addEventListener('click', load);
    root.append(page('Could not load the conversation', err.message || 'The server could not be reached.', retry));
  }
  root.querySelector('h1')?.focus?.();
}

async function download(path, button) {
  const url = `${sharePath}/files/${path.split('/').map(encodeURIComponent).join('/')}`;
  button.disabled = true;
  try {
    const resp = await request(url, '*/*');
    const href = URL.createObjectURL(await resp.blob());
    const a = h('a', { href, download: path.split('/').pop() });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(href), 10000);
  } catch (err) {
    toast(err.status === 410 || err.status === 404 ? `${path} is no longer available: ${err.message}` : `Could not download ${path}: ${err.message}`, 'error');
  } finally {
    button.disabled = false;
  }
}

function fileChips(files) {
  return h('ul', { class: 'msg-files', 'aria-label': 'Attached files' }, files.map((f) => {
    const b = h('button', { type: 'button', class: 'msg-file', title: `Download ${f.path}`, 'aria-label': `Download ${f.path} (${fmtBytes(f.bytes)})` },
      icon('file'), h('span', { class: 'msg-file-name' }, f.path), h('span', { class: 'msg-file-size' }, fmtBytes(f.bytes)));
    b.addEventListener('click', () => download(f.path, b));
    return h('li', null, b);
  }));
}

/** The messages as the chat draws them, without the chat's actions. */
function messagesOf(messages) {
  const out = [];
  let turn = null;
  let sources = [];
  const close = () => {
    if (turn) {
      turn.flush();
      for (const card of turn.cards.values()) card.setNoResult('No result');
      shareWebSources(turn, sources);
      const files = [...new Set(sources.filter((c) => !isWebCitation(c)).map((c) => c.file).filter(Boolean))];
      if (files.length) turn.notes.append(h('p', { class: 'share-sources small muted' }, `Sources: ${files.join(', ')}`));
    }
    turn = null;
    sources = [];
  };
  for (const m of messages) {
    if (m.role === 'user') {
      close();
      // Attached images as thumbnails (through the link), other files as download chips.
      const { images, others } = splitImages(m.attachments);
      const bubble = userBubble(m.content, { files: images, fetchFile: shareFile });
      if (others.length) bubble.querySelector('.bubble').append(fileChips(others));
      bubble.dataset.messageId = m.id;
      out.push(bubble);
      continue;
    }
    if (!turn) {
      turn = new AssistantTurn();
      out.push(turn.el);
    }
    if (m.role === 'assistant') {
      if (m.content) { turn.textEl = null; turn.addText(m.content); turn.flush(); turn.textEl = null; }
      for (const c of m.tool_calls || []) turn.addToolCall(c);
      if (Array.isArray(m.citations)) sources.push(...m.citations);
      turn.el.dataset.messageId = m.id;
      if (m.status === 'incomplete') {
        const reason = m.status_reason || 'incomplete';
        turn.note(FINISH_NOTES[reason] || `This answer is incomplete (${reason.replace(/_/g, ' ')}).`, 'warn');
      }
    } else if (m.role === 'tool') {
      const card = turn.cards.get(m.tool_call_id) || turn.addToolCall({ id: m.tool_call_id, name: 'tool', arguments: {} });
      card.setResult(parseToolContent(m.content));
    }
  }
  close();
  return out;
}

/** The button that puts the messages before `cursor` above the log's first ones. */
function earlierButton(log, cursor) {
  if (!cursor) return null;
  const wrap = h('div', { class: 'load-earlier' });
  const btn = h('button', { type: 'button', class: 'btn btn-small' }, 'Show earlier messages');
  const status = h('span', { class: 'muted small', role: 'status' });
  wrap.append(btn, status);
  let next = cursor;
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    status.textContent = '';
    try {
      const resp = await request(`${sharePath}?before=${encodeURIComponent(next)}`, 'application/json');
      const page = await resp.json();
      const fromBottom = log.scrollHeight - log.scrollTop;
      wrap.after(...messagesOf(page.messages || []));
      next = page.messages_before;
      if (next) btn.disabled = false;
      else wrap.remove();
      log.scrollTop = log.scrollHeight - fromBottom;
    } catch (err) {
      btn.disabled = false;
      status.textContent = `Could not load earlier messages: ${err.message}`;
    }
  });
  return wrap;
}

/** Forks the link at its last message and opens the new chat. */
async function continueAsCopy(c, button) {
  const last = [...c.messages].reverse().find((m) => m.role === 'user' || m.role === 'assistant');
  if (!last) return;
  button.disabled = true;
  try {
    const conv = await api.post(`${sharePath}/fork`, { at_message_id: last.id });
    location.assign(`/c/${encodeURIComponent(conv.id)}`);
  } catch (err) {
    button.disabled = false;
    if (err.status === 401) { signIn('Sign in to continue this conversation as your own copy.'); return; }
    toast(`Could not make a copy: ${err.message}`, 'error');
  }
}

function render(c) {
  document.title = `${c.title} · Shared · AgentChat`;
  const facts = [`Shared by ${c.owner.display_name}`, `snapshot of ${fmtDate(c.created_at)}`, 'read-only'];
  const notes = [];
  if (c.redact_tools) notes.push('Tool outputs and arguments are hidden.');
  if (c.expires_at) notes.push(`The link works until ${fmtDate(c.expires_at)}.`);
  let action;
  if (c.can_fork) {
    action = h('button', { type: 'button', class: 'btn btn-primary share-fork' }, 'Continue as copy');
    action.addEventListener('click', () => continueAsCopy(c, action));
  } else {
    action = h('button', { type: 'button', class: 'btn share-fork' }, 'Sign in to continue');
    action.addEventListener('click', () => signIn('Sign in to continue this conversation as your own copy.'));
  }
  if (!c.messages.some((m) => m.role === 'user' || m.role === 'assistant')) action.hidden = true;
  const banner = h('div', { class: 'share-banner', role: 'note', 'aria-label': 'About this shared conversation' },
    h('div', { class: 'share-banner-body' },
      h('p', { class: 'share-banner-text' }, facts.join(' · ')),
      notes.length ? h('p', { class: 'share-banner-note small' }, notes.join(' ')) : null),
    action);
  const log = h('div', { class: 'share-log', role: 'log', 'aria-label': 'Messages' });
  const earlier = earlierButton(log, c.messages_before);
  if (earlier) log.append(earlier);
  log.append(...messagesOf(c.messages));
  if (!c.messages.length && !earlier) log.append(h('p', { class: 'muted' }, 'This snapshot holds no messages.'));
  clear(root).append(h('h1', { class: 'share-title' }, c.title || 'Untitled'), banner, log);
}

(async () => {
  if (!shareId) { problem({ status: 404 }); return; }
  signedIn = api.hadSession() ? await api.resume() : false;
  await load();
})();
