// The chat screen: conversation sidebar, message log with live streaming, composer with
// Send/Stop and model picker, and the workspace files panel.

import { h, clear, fmtRelative, toast, icon } from './dom.js';
import * as api from './api.js';
import { AssistantTurn, userBubble, renderStored } from './turn.js';
import { FilesPanel } from './files_panel.js';

const PAGE = 50;

export class ChatView {
  constructor(main, { menuBtn, state, navigate, refreshMe }) {
    this.main = main;
    this.menuBtn = menuBtn;
    this.appState = state;
    this.navigate = navigate;
    this.refreshMe = refreshMe;
    this.attached = true;
    this.conversations = [];
    this.nextCursor = null;
    this.current = null; // conversation object
    this.streaming = null; // {convId, controller, turn}
    this.build();
  }

  detach() {
    this.attached = false;
    document.removeEventListener('keydown', this.onKey);
  }
  abort() { this.streaming?.controller.abort(); }

  build() {
    // Sidebar
    this.newBtn = h('button', { type: 'button', class: 'btn btn-primary btn-block new-chat' }, icon('plus'), 'New chat');
    this.newBtn.addEventListener('click', () => { this.closeSidebar(); this.navigate('/'); this.input.focus(); });
    this.search = h('input', { type: 'search', class: 'search', placeholder: 'Search chats', 'aria-label': 'Search chats' });
    this.search.addEventListener('input', () => this.renderList());
    this.list = h('ul', { class: 'conv-list', 'aria-label': 'Conversations' });
    this.moreBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-block' }, 'Load more');
    this.moreBtn.hidden = true;
    this.moreBtn.addEventListener('click', () => this.loadConversations(true));
    this.sidebar = h('aside', { class: 'sidebar', id: 'sidebar', 'aria-label': 'Conversations' },
      this.newBtn, this.search, h('div', { class: 'conv-scroll' }, this.list, this.moreBtn));
    this.scrim = h('div', { class: 'scrim', 'aria-hidden': 'true' });
    this.scrim.addEventListener('click', () => { this.closeSidebar(); this.files.close(); });
    this.menuBtn.addEventListener('click', () => (this.sidebar.classList.contains('open') ? this.closeSidebar() : this.openSidebar()));
    this.onKey = (ev) => {
      if (ev.key !== 'Escape' || !this.attached) return;
      if (this.sidebar.classList.contains('open')) { this.closeSidebar(); this.menuBtn.focus(); }
      else if (this.files.isOpen() && window.matchMedia('(max-width: 1100px)').matches) { this.files.close(); this.filesBtn.focus(); }
    };
    document.addEventListener('keydown', this.onKey);

    // Header of the conversation
    this.title = h('h1', { class: 'chat-title' }, 'New chat');
    this.modelLabel = h('span', { class: 'model-tag' });
    this.filesBtn = h('button', { type: 'button', class: 'btn btn-ghost files-toggle', 'aria-expanded': 'false', 'aria-controls': 'files-panel' }, 'Files');
    const header = h('div', { class: 'chat-header' }, this.title, this.modelLabel, h('span', { class: 'spacer' }), this.filesBtn);

    // Log
    this.log = h('div', { class: 'messages', role: 'log', 'aria-label': 'Messages', 'aria-live': 'polite', tabindex: '0' });
    this.banner = h('div', { class: 'banner-area' });

    // Composer
    this.input = h('textarea', { class: 'composer-input', rows: '1', 'aria-label': 'Message', placeholder: 'Message the assistant…' });
    this.sendBtn = h('button', { type: 'submit', class: 'btn btn-primary send-btn' }, 'Send');
    this.stopBtn = h('button', { type: 'button', class: 'btn btn-danger stop-btn' }, 'Stop');
    this.stopBtn.hidden = true;
    this.modelSelect = h('select', { class: 'model-select', 'aria-label': 'Model' });
    this.modelWrap = h('div', { class: 'model-wrap' }, this.modelSelect);
    this.modelWrap.hidden = true;
    this.form = h('form', { class: 'composer', 'aria-label': 'Send a message' },
      this.modelWrap,
      h('div', { class: 'composer-row' }, this.input, this.sendBtn, this.stopBtn),
      h('p', { class: 'composer-hint' }, 'Enter to send · Shift+Enter for a new line · tool calls run on the server and are audited'));
    this.form.addEventListener('submit', (ev) => { ev.preventDefault(); this.send(); });
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); this.send(); }
    });
    this.input.addEventListener('input', () => this.autosize());
    this.stopBtn.addEventListener('click', () => this.stop());

    this.files = new FilesPanel({ button: this.filesBtn, scrim: this.scrim });
    this.chatMain = h('section', { class: 'chat-main', 'aria-label': 'Chat' }, header, this.log, this.banner, this.form);
    this.layout = h('div', { class: 'chat-layout' }, this.sidebar, this.chatMain, this.files.el, this.scrim);
    this.main.append(this.layout);
  }

  openSidebar() {
    this.sidebar.classList.add('open');
    this.scrim.classList.add('show');
    this.menuBtn.setAttribute('aria-expanded', 'true');
    this.search.focus();
  }

  closeSidebar() {
    if (!this.sidebar.classList.contains('open')) return;
    this.sidebar.classList.remove('open');
    if (!this.files.isOpen()) this.scrim.classList.remove('show');
    this.menuBtn.setAttribute('aria-expanded', 'false');
  }

  autosize() {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 220)}px`;
  }

  async init() {
    // The composer stays disabled until the first view is ready, so nothing typed is lost.
    this.input.disabled = true;
    this.sendBtn.disabled = true;
    const [models] = await Promise.all([
      this.appState.models ? Promise.resolve(this.appState.models) : api.get('/api/models').catch(() => null),
      this.loadConversations(false),
    ]);
    this.appState.models = models;
    if (models && Array.isArray(models.models) && models.models.length > 1) {
      for (const m of models.models) this.modelSelect.append(h('option', { value: m, selected: m === models.default }, m));
      this.modelWrap.hidden = false;
    }
    if (window.matchMedia('(min-width: 1280px)').matches) this.files.openIfAvailable();
  }

  enableComposer() {
    if (!this.input.disabled) return;
    this.input.disabled = false;
    this.sendBtn.disabled = false;
    if (window.matchMedia('(min-width: 761px)').matches) this.input.focus();
  }

  async loadConversations(more) {
    try {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (more && this.nextCursor) q.set('cursor', this.nextCursor);
      const page = await api.get(`/api/conversations?${q}`);
      this.conversations = more ? this.conversations.concat(page.items) : page.items;
      this.nextCursor = page.next_cursor || null;
    } catch (err) {
      if (err.status !== 401) toast(`Could not load conversations: ${err.message}`, 'error');
    }
    this.renderList();
  }

  renderList() {
    clear(this.list);
    const q = this.search.value.trim().toLowerCase();
    const items = this.conversations.filter((c) => !q || (c.title || 'Untitled').toLowerCase().includes(q));
    if (!items.length) {
      this.list.append(h('li', { class: 'conv-empty' }, q ? 'No chats match your search.' : 'No chats yet. Say hello!'));
    }
    for (const c of items) this.list.append(this.renderItem(c));
    this.moreBtn.hidden = !this.nextCursor || Boolean(q);
  }

  renderItem(c) {
    const title = c.title || 'Untitled';
    const active = this.current && this.current.id === c.id;
    const link = h('a', { href: `/c/${encodeURIComponent(c.id)}`, 'data-nav': '', class: 'conv-link', 'aria-current': active ? 'page' : null },
      h('span', { class: 'conv-title' }, title),
      h('span', { class: 'conv-time' }, fmtRelative(c.updated_at || c.created_at)));
    link.addEventListener('click', () => this.closeSidebar());
    const renameBtn = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `Rename ${title}`, title: 'Rename' }, icon('edit'));
    const deleteBtn = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `Delete ${title}`, title: 'Delete' }, icon('trash'));
    const li = h('li', { class: `conv-item${active ? ' active' : ''}` }, link, h('div', { class: 'conv-actions' }, renameBtn, deleteBtn));
    renameBtn.addEventListener('click', () => this.startRename(li, c));
    deleteBtn.addEventListener('click', () => this.confirmDelete(li, c));
    return li;
  }

  startRename(li, c) {
    const input = h('input', { type: 'text', class: 'rename-input', value: c.title || '', 'aria-label': 'New title', maxlength: '200' });
    const save = h('button', { type: 'submit', class: 'btn btn-small btn-primary' }, 'Save');
    const cancel = h('button', { type: 'button', class: 'btn btn-small' }, 'Cancel');
    const form = h('form', { class: 'rename-form' }, input, save, cancel);
    clear(li).append(form);
    input.focus();
    input.select();
    const done = () => this.renderList();
    cancel.addEventListener('click', done);
    input.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') done(); });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const t = input.value.trim();
      if (!t) { input.focus(); return; }
      try {
        const updated = await api.patch(`/api/conversations/${encodeURIComponent(c.id)}`, { title: t });
        c.title = updated?.title ?? t;
        if (this.current && this.current.id === c.id) { this.current.title = c.title; this.showTitle(); }
        toast('Chat renamed.');
      } catch (err) {
        toast(`Rename failed: ${err.message}`, 'error');
      }
      done();
    });
  }

  confirmDelete(li, c) {
    const yes = h('button', { type: 'button', class: 'btn btn-small btn-danger' }, 'Delete');
    const no = h('button', { type: 'button', class: 'btn btn-small' }, 'Cancel');
    clear(li).append(h('div', { class: 'confirm-row', role: 'group', 'aria-label': 'Confirm delete' },
      h('span', null, `Delete “${c.title || 'Untitled'}”?`), yes, no));
    yes.focus();
    no.addEventListener('click', () => this.renderList());
    yes.addEventListener('click', async () => {
      try {
        await api.del(`/api/conversations/${encodeURIComponent(c.id)}`);
        this.conversations = this.conversations.filter((x) => x.id !== c.id);
        toast('Chat deleted.');
        if (this.current && this.current.id === c.id) this.navigate('/');
      } catch (err) {
        toast(`Delete failed: ${err.message}`, 'error');
      }
      this.renderList();
    });
  }

  showTitle() {
    const t = this.current ? (this.current.title || 'Untitled') : 'New chat';
    this.title.textContent = t;
    document.title = `${t} · AgentChat`;
    const model = this.current?.model;
    this.modelLabel.textContent = model ? model : '';
    this.modelLabel.hidden = !model;
    // The model is chosen when a chat starts.
    this.modelWrap.hidden = this.current !== null || this.modelSelect.options.length < 2;
  }

  clearBanner() { clear(this.banner); }

  showBanner(text, kind = 'error', actions = []) {
    clear(this.banner);
    const close = h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Dismiss' }, '×');
    close.addEventListener('click', () => this.clearBanner());
    this.banner.append(h('div', { class: `banner banner-${kind}`, role: kind === 'error' ? 'alert' : 'status' },
      h('span', { class: 'banner-text' }, text), ...actions, close));
  }

  emptyState() {
    const suggestions = ['What time is it?', 'What is 2+3*4?', 'List my files'];
    return h('div', { class: 'empty-state' },
      h('div', { class: 'logo big', 'aria-hidden': 'true' }),
      h('h2', null, 'How can I help?'),
      h('p', { class: 'muted' }, 'Ask anything. The assistant can call the tools your role allows.'),
      h('div', { class: 'suggestions' }, suggestions.map((s) => {
        const b = h('button', { type: 'button', class: 'chip' }, s);
        b.addEventListener('click', () => { this.input.value = s; this.send(); });
        return b;
      })));
  }

  scrollToEnd(force = false) {
    const nearBottom = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 120;
    if (force || nearBottom) this.log.scrollTop = this.log.scrollHeight;
  }

  setBusy(busy) {
    this.stopBtn.hidden = !busy;
    this.sendBtn.hidden = busy;
    this.log.setAttribute('aria-busy', busy ? 'true' : 'false');
  }

  /** Opens a conversation (or the empty "new chat" state when id is null). */
  async open(id) {
    this.clearBanner();
    const liveHere = this.streaming && this.streaming.convId === id;
    if (!id) {
      this.current = null;
      this.showTitle();
      clear(this.log).append(this.emptyState());
      this.setBusy(false);
      this.renderList();
      this.enableComposer();
      return;
    }
    if (liveHere && this.current && this.current.id === id) return; // already showing the live turn
    let conv;
    try {
      conv = await api.get(`/api/conversations/${encodeURIComponent(id)}`);
    } catch (err) {
      if (err.status === 401) return;
      this.current = null;
      this.showTitle();
      clear(this.log);
      this.showBanner(err.status === 404 ? 'This chat does not exist or is not yours.' : `Could not load this chat: ${err.message}`);
      this.enableComposer();
      return;
    }
    this.current = conv;
    this.showTitle();
    this.renderList();
    this.renderConversation(conv);
    this.scrollToEnd(true);
    this.enableComposer();
  }

  renderConversation(conv) {
    const msgs = conv.messages || [];
    const running = this.streaming && this.streaming.convId === conv.id;
    // A turn still running on the server (after a reload, say) is re-attached from its start:
    // the steps it has stored come with it, so they are not drawn twice.
    const active = !running && conv.active_turn ? conv.active_turn : null;
    let shown = msgs;
    if (active) {
      const at = msgs.findIndex((m) => m.id === active.id);
      if (at >= 0) shown = msgs.slice(0, at + 1);
    }
    clear(this.log);
    if (!shown.length) this.log.append(this.emptyState());
    else this.log.append(...renderStored(shown));
    if (running) {
      this.log.append(this.streaming.turn.el);
      this.setBusy(true);
    } else if (active) {
      this.reattach(conv.id, active.id);
    } else {
      this.setBusy(false);
    }
  }

  /** Follows a turn running on the server (whichever process runs it). */
  async reattach(convId, turnId) {
    const turn = new AssistantTurn({ live: true });
    this.log.append(turn.el);
    this.scrollToEnd(true);
    try {
      await this.runTurn(convId, turn, turnId,
        (onEvent, signal) => api.followTurn(convId, turnId, null, onEvent, signal));
    } catch (err) {
      if (err.status === 401) return;
      turn.finish(null);
      turn.note(`Could not follow the answer: ${err.message}`, 'warn');
    }
    this.refreshMe();
  }

  async stop() {
    const id = this.streaming ? this.streaming.convId : this.current?.id;
    if (!id) return;
    this.stopBtn.disabled = true;
    try {
      await api.post(`/api/conversations/${encodeURIComponent(id)}/cancel`, {});
    } catch (err) {
      toast(`Could not stop: ${err.message}`, 'error');
    } finally {
      this.stopBtn.disabled = false;
    }
    // Safety net: if the stream does not end shortly, stop reading it.
    const s = this.streaming;
    if (s) setTimeout(() => { if (this.streaming === s) s.controller.abort(); }, 8000);
  }

  async send() {
    const content = this.input.value.trim();
    if (!content) return;
    if (this.streaming) {
      if (this.streaming.convId !== this.current?.id) toast('Another chat is still answering. Wait for it or stop it first.', 'error');
      return;
    }
    this.clearBanner();
    let conv = this.current;
    if (!conv) {
      try {
        const body = { title: content.length > 60 ? `${content.slice(0, 57).trimEnd()}…` : content };
        if (!this.modelWrap.hidden && this.modelSelect.value) body.model = this.modelSelect.value;
        conv = await api.post('/api/conversations', body);
        conv.messages = [];
        this.current = conv;
        this.conversations.unshift(conv);
        history.pushState(null, '', `/c/${encodeURIComponent(conv.id)}`);
        this.showTitle();
        this.renderList();
      } catch (err) {
        if (err.status !== 401) this.showBanner(`Could not start a chat: ${err.message}`);
        return;
      }
    }
    if (this.log.querySelector('.empty-state')) clear(this.log);
    this.input.value = '';
    this.autosize();
    const bubble = userBubble(content);
    this.log.append(bubble);
    const turn = new AssistantTurn({ live: true });
    this.log.append(turn.el);
    this.scrollToEnd(true);
    try {
      await this.runTurn(conv.id, turn, null,
        (onEvent, signal) => api.streamTurn(conv.id, content, onEvent, signal));
    } catch (err) {
      if (err.status === 401) return;
      // Refused before streaming: nothing was stored. Put the text back.
      turn.el.remove();
      bubble.remove();
      if (!this.input.value) { this.input.value = content; this.autosize(); }
      if (this.log.childNodes.length === 0) this.log.append(this.emptyState());
      this.showBanner(refusalText(err, this));
    } finally {
      const c = this.conversations.find((x) => x.id === conv.id);
      if (c) {
        c.updated_at = new Date().toISOString();
        this.conversations = [c, ...this.conversations.filter((x) => x !== c)];
        this.renderList();
      }
      this.refreshMe();
      if (this.attached && this.current && this.current.id === conv.id) this.input.focus();
    }
  }

  /**
   * Shows a live turn: `first` opens its stream; if that drops before the turn's `done` or
   * `error`, it is re-attached with the last event id seen (nothing repeated, nothing lost).
   * Rejects (ApiError) only when the first request is refused before anything streamed.
   */
  async runTurn(convId, turn, turnId, first) {
    const controller = new AbortController();
    this.streaming = { convId, controller, turn };
    this.setBusy(true);
    let lastId = null;
    let finished = false;
    const started = performance.now();
    const onEvent = (ev, id) => {
      if (id) lastId = id;
      switch (ev.type) {
        case 'turn_start': turnId = ev.message_id; break;
        case 'text_delta': turn.addText(ev.text); break;
        case 'tool_call': turn.addToolCall(ev); break;
        case 'tool_result': turn.addToolResult(ev); break;
        case 'usage': turn.addUsage(ev); break;
        case 'done': {
          finished = true;
          let extra = '';
          if (ev.finish_reason === 'budget_exhausted') extra = this.resetsText();
          turn.finish(ev.finish_reason, extra);
          break;
        }
        case 'error': {
          finished = true;
          turn.note(errorText(ev.code, ev.message), 'error');
          turn.finish(null);
          break;
        }
        default: break;
      }
      this.scrollToEnd();
    };
    try {
      let failures = 0;
      for (let attempt = 0; ; attempt += 1) {
        const before = lastId;
        try {
          if (attempt === 0) await first(onEvent, controller.signal);
          else await api.followTurn(convId, turnId, lastId, onEvent, controller.signal);
        } catch (err) {
          if (err.name === 'AbortError') throw err;
          if (attempt === 0 && lastId === null && err instanceof api.ApiError) throw err;
          if (err instanceof api.ApiError && err.status < 500) break;
        }
        if (finished || !turnId) break;
        failures = lastId === before ? failures + 1 : 0;
        if (failures > 6) break;
        await pause(Math.min(250 * 2 ** failures, 4000), controller.signal);
      }
      if (!finished) {
        turn.finish(null);
        turn.note('The connection closed before the answer finished. Reload the chat to see what was stored.', 'warn');
      }
      turn.renderMeta(Math.round(performance.now() - started));
    } catch (err) {
      if (err.name !== 'AbortError') throw err;
      turn.finish('cancelled');
    } finally {
      if (this.streaming && this.streaming.controller === controller) this.streaming = null;
      this.setBusy(false);
    }
  }

  resetsText() {
    const b = this.appState.me?.budget;
    if (b && b.resets_at) return `It resets on ${new Date(b.resets_at).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })}.`;
    return '';
  }
}

/** Waits `ms`, or rejects with an AbortError when `signal` aborts. */
function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new DOMException('aborted', 'AbortError'));
    }, { once: true });
  });
}

function errorText(code, message) {
  const friendly = {
    upstream_error: 'The model provider returned an error',
    upstream_rate_limited: 'The model provider is rate limiting requests; try again in a moment',
    upstream_timeout: 'The model provider took too long to answer',
    upstream_unreachable: 'The model provider could not be reached',
    upstream_malformed: 'The model provider sent a reply that could not be understood',
    upstream_incomplete: 'The model provider stopped in the middle of its reply',
    upstream_misconfigured: 'The model provider is not configured correctly; tell an admin',
    unavailable: 'The service is temporarily unavailable',
    budget_exhausted: 'Your token budget is used up',
  };
  const head = friendly[code] || 'Something went wrong';
  return message ? `${head}. (${message})` : `${head}.`;
}

function refusalText(err, view) {
  switch (err.code) {
    case 'budget_exhausted': {
      const when = view.resetsText();
      return `Your token budget is used up. ${when || err.message || ''}`.trim();
    }
    case 'turn_in_progress':
      return 'A reply is still being generated in this chat. Wait for it to finish or press Stop.';
    case 'not_found':
      return 'This chat no longer exists.';
    default:
      if (err.status === 429) return `Too many requests: ${err.message}`;
      if (err.status >= 500) return `The server could not answer: ${err.message}`;
      return err.message || 'The message could not be sent.';
  }
}
