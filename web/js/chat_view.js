// The chat screen: conversation sidebar, message log with live streaming, composer with
// Send/Stop, attachments and model picker, and the workspace files panel.

import { h, clear, toast, icon, fmtDate } from './dom.js';
import * as api from './api.js';
import { AssistantTurn, userBubble, renderStored } from './turn.js';
import { earlierButton } from './earlier_messages.js';
import { FilesPanel } from './files_panel.js';
import { ConversationList } from './conversation_list.js';
import { exportMenu } from './export_menu.js';
import { decorate } from './message_actions.js';
import { showPending } from './approval_card.js';
import { watchDecisions } from './approval_follow.js';
import { runTurn } from './live_turn.js';
import { Attachments } from './attachments.js';
import { settingsButton } from './conversation_settings.js';
import { modelLabel } from './model_label.js';
import { watchTitle, provisionalTitle, applyTitle } from './title_watch.js';
import { emptyState } from './chat_empty.js';
import { sendRefusalText } from './send_refusal.js';
import { KnowledgePins } from './knowledge_pins.js';
import { shareButton } from './share_dialog.js';
import { forkMenu } from './fork_action.js';
import { ImageModelNotice } from './image_model_notice.js';

export class ChatView {
  constructor(main, { menuBtn, state, navigate, refreshMe }) {
    this.main = main;
    this.menuBtn = menuBtn;
    this.appState = state;
    this.navigate = navigate;
    this.refreshMe = refreshMe;
    this.attached = true;
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
    this.convList = new ConversationList({
      isCurrent: (id) => Boolean(this.current && this.current.id === id),
      closeSidebar: () => this.closeSidebar(),
      onRenamed: (c) => { if (this.current && this.current.id === c.id) { this.current.title = c.title; this.showTitle(); } },
      onDeleted: (c) => { if (this.current && this.current.id === c.id) this.navigate('/'); },
    });
    this.sidebar = h('aside', { class: 'sidebar', id: 'sidebar', 'aria-label': 'Conversations' }, this.newBtn, this.convList.el);
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
    // Model and instructions of the open chat (conversation_settings.js).
    this.settings = settingsButton({ current: () => this.current, models: () => this.appState.models, onSaved: (c) => { Object.assign(this.current, c); this.showTitle(); } });
    this.filesBtn = h('button', { type: 'button', class: 'btn btn-ghost files-toggle', 'aria-expanded': 'false', 'aria-controls': 'files-panel' }, 'Files');
    this.exportMenu = exportMenu(() => this.current?.id || null);
    // Knowledge collections pinned to the open chat (knowledge_pins.js).
    this.pins = new KnowledgePins({ current: () => this.current });
    // A read-only link to the open chat (share_dialog.js).
    this.share = shareButton(() => this.current);
    const header = h('div', { class: 'chat-header' }, this.title, this.settings.el, h('span', { class: 'spacer' }), this.pins.el, this.share.el, this.exportMenu, this.filesBtn);

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
    this.attachments = new Attachments({
      onUploaded: () => { if (this.files.isOpen()) this.files.load(); },
      onChange: () => this.imageNotice?.update(),
    });
    // Images attached for a model that cannot see them: said before Send (image_model_notice.js).
    this.imageNotice = new ImageModelNotice({
      model: () => this.nextModel(),
      models: () => this.appState.models,
      count: () => this.attachments.imageCount(),
    });
    this.modelSelect.addEventListener('change', () => this.imageNotice.update());
    this.form = h('form', { class: 'composer', 'aria-label': 'Send a message' },
      this.modelWrap, this.attachments.el, this.imageNotice.el,
      h('div', { class: 'composer-row' }, this.attachments.button, this.input, this.sendBtn, this.stopBtn),
      h('p', { class: 'composer-hint' }, 'Enter to send · Shift+Enter for a new line · tool calls run on the server and are audited'));
    this.form.addEventListener('submit', (ev) => { ev.preventDefault(); this.send(); });
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); this.send(); }
    });
    this.input.addEventListener('input', () => this.autosize());
    this.stopBtn.addEventListener('click', () => this.stop());

    this.files = new FilesPanel({ button: this.filesBtn, scrim: this.scrim });
    this.chatMain = h('section', { class: 'chat-main', 'aria-label': 'Chat' }, header, this.log, this.banner, this.form);
    this.attachments.watch(this.chatMain, this.input);
    this.layout = h('div', { class: 'chat-layout' }, this.sidebar, this.chatMain, this.files.el, this.scrim);
    this.main.append(this.layout);
  }

  openSidebar() {
    this.sidebar.classList.add('open');
    this.scrim.classList.add('show');
    this.menuBtn.setAttribute('aria-expanded', 'true');
    this.convList.focusSearch();
  }

  closeSidebar() {
    if (!this.sidebar.classList.contains('open')) return;
    this.sidebar.classList.remove('open');
    if (!this.files.isOpen()) this.scrim.classList.remove('show');
    this.menuBtn.setAttribute('aria-expanded', 'false');
  }

  /** The model the next message goes to: the chat's, or the one picked for a new chat. */
  nextModel() {
    const models = this.appState.models;
    if (this.current) return this.current.model || models?.default || null;
    return (!this.modelWrap.hidden && this.modelSelect.value) || models?.default || null;
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
      this.convList.load(false),
    ]);
    this.appState.models = models;
    if (models && Array.isArray(models.models) && models.models.length > 1) {
      const mine = this.appState.me?.preferences?.default_model; // the account's, while offered
      const start = models.models.includes(mine) ? mine : models.default;
      for (const m of models.models) this.modelSelect.append(h('option', { value: m, selected: m === start }, modelLabel(m, models)));
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

  showTitle() {
    const t = this.current ? (this.current.title || 'Untitled') : 'New chat';
    this.title.textContent = t;
    document.title = `${t} · AgentChat`;
    this.settings.update();
    this.pins.update();
    this.exportMenu.hidden = !this.current;
    this.share.update();
    // The model is chosen when a chat starts.
    this.modelWrap.hidden = this.current !== null || this.modelSelect.options.length < 2;
    this.imageNotice.update();
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
    return emptyState(this.appState?.me?.tools || [], (text) => { this.input.value = text; this.send(); });
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
    // A later open (the user clicked on while this one loaded) wins: a slow load that
    // finishes after it must not paint over it.
    const seq = (this.openSeq = (this.openSeq || 0) + 1);
    this.clearBanner();
    const liveHere = this.streaming && this.streaming.convId === id;
    if (!id) {
      this.current = null;
      this.showTitle();
      clear(this.log).append(this.emptyState());
      this.setBusy(false);
      this.convList.render();
      this.enableComposer();
      return;
    }
    if (liveHere && this.current && this.current.id === id) return; // already showing the live turn
    let conv;
    try {
      conv = await api.get(`/api/conversations/${encodeURIComponent(id)}`);
    } catch (err) {
      if (err.status === 401 || seq !== this.openSeq) return;
      this.current = null;
      this.showTitle();
      clear(this.log);
      this.showBanner(err.status === 404 ? 'This chat does not exist or is not yours.' : `Could not load this chat: ${err.message}`);
      this.enableComposer();
      return;
    }
    if (seq !== this.openSeq) return;
    this.current = conv;
    this.showTitle();
    this.convList.render();
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
    const earlier = earlierButton({
      log: this.log,
      path: `/api/conversations/${encodeURIComponent(conv.id)}`,
      cursor: conv.messages_before,
      onLoaded: () => this.decorate(),
    });
    if (earlier) this.log.append(earlier);
    if (!shown.length && !earlier) this.log.append(this.emptyState());
    else this.log.append(...renderStored(shown));
    showPending(this.log, conv.id, this.appState.me).then((n) => { if (n) watchDecisions(this); });
    if (running) {
      this.log.append(this.streaming.turn.el);
      this.setBusy(true);
    } else if (active) {
      this.reattach(conv.id, active.id);
    } else {
      this.setBusy(false);
    }
    this.decorate();
  }

  /** Copy / Edit / Regenerate on the messages, when no answer is being generated. */
  decorate() {
    decorate(this.log, {
      busy: () => Boolean(this.streaming),
      resend: (fromId, text) => this.resend(fromId, text),
      // "Continue as copy from here" (fork_action.js): the copy opens in place.
      fork: (id) => forkMenu(() => this.current?.id, id, (c) => { this.convList.add(c); this.navigate(`/c/${encodeURIComponent(c.id)}`); }),
    });
  }

  /** Takes the open chat back to before question `fromId` and sends `text` in its place. */
  async resend(fromId, text) {
    const conv = this.current;
    if (!conv || this.streaming) return;
    const files = [...this.log.querySelectorAll('.msg-user')].find((q) => q.dataset.messageId === fromId)?.attachments;
    try {
      await api.post(`/api/conversations/${encodeURIComponent(conv.id)}/truncate`, { from: fromId });
    } catch (err) {
      toast(`Could not go back to that message: ${err.message}`, 'error');
      return;
    }
    await this.open(conv.id);
    this.input.value = text;
    this.attachments.replace(files);
    await this.send();
  }

  /** Follows a turn running on the server (whichever process runs it). */
  async reattach(convId, turnId) {
    const turn = new AssistantTurn({ live: true });
    this.log.append(turn.el);
    this.scrollToEnd(true);
    try {
      await runTurn(this, convId, turn, turnId,
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
      const res = await api.post(`/api/conversations/${encodeURIComponent(id)}/cancel`, {});
      // Pressed before the server had started the turn (it is stored and registered just
      // before `turn_start`): nothing to stop yet, so stop it the moment it starts.
      if (this.streaming && !this.streaming.started && res && res.running === false) {
        this.streaming.stopOnStart = true;
      }
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
    const files = this.attachments.ready();
    if (!files || (!content && !files.length)) return;
    if (this.streaming) {
      if (this.streaming.convId !== this.current?.id) toast('Another chat is still answering. Wait for it or stop it first.', 'error');
      return;
    }
    this.clearBanner();
    let conv = this.current;
    let createdHere = false; // this send made the conversation
    let refusedFirst = false; // ...and its first message was refused: it goes again
    if (!conv) {
      try {
        // No title: the server titles the chat from its first message, then by a model call.
        const body = {};
        if (!this.modelWrap.hidden && this.modelSelect.value) body.model = this.modelSelect.value;
        conv = await api.post('/api/conversations', body);
        conv.title = provisionalTitle(content || files.map((f) => f.path).join(', '));
        conv.messages = [];
        this.current = conv;
        this.convList.add(conv);
        createdHere = true;
        history.pushState(null, '', `/c/${encodeURIComponent(conv.id)}`);
        await this.pins.applyPending(conv.id); // collections chosen before the chat existed
        this.showTitle();
        this.convList.render();
      } catch (err) {
        if (err.status !== 401) this.showBanner(`Could not start a chat: ${err.message}`);
        return;
      }
    }
    if (this.log.querySelector('.empty-state')) clear(this.log);
    this.input.value = '';
    this.autosize();
    this.attachments.clear();
    const bubble = userBubble(content, { files });
    this.log.append(bubble);
    const turn = new AssistantTurn({ live: true });
    this.log.append(turn.el);
    this.scrollToEnd(true);
    try {
      await runTurn(this, conv.id, turn, null,
        (onEvent, signal) => api.streamTurn(conv.id, content, onEvent, signal, files.map((f) => f.path)), bubble);
    } catch (err) {
      if (err.status === 401) return;
      // Refused before streaming: nothing was stored. Put the text back.
      turn.el.remove();
      bubble.remove();
      if (!this.input.value) { this.input.value = content; this.autosize(); }
      this.attachments.restore(files);
      if (this.log.childNodes.length === 0) this.log.append(this.emptyState());
      this.showBanner(sendRefusalText(err, this.appState.me?.budget));
      // A chat whose first message was refused up front holds nothing: no empty chat is
      // left behind in the list.
      if (createdHere) {
        refusedFirst = true;
        // Gone from the server before it goes from the list: the list never shows what a
        // reload would bring back.
        await api.del(`/api/conversations/${encodeURIComponent(conv.id)}`).catch(() => {});
        this.convList.forget(conv.id);
        if (this.current?.id === conv.id) { // (not if another chat was opened meanwhile)
          this.current = null;
          history.replaceState(null, '', '/');
          this.showTitle();
        }
      }
    } finally {
      if (!refusedFirst) this.convList.touch(conv.id);
      if (!refusedFirst && conv.title_auto) watchTitle(conv.id, (c) => applyTitle(this, c));
      if (this.current && this.current.id === conv.id) this.decorate();
      this.refreshMe();
      if (this.attached && this.current && this.current.id === conv.id) this.input.focus();
    }
  }

  resetsText() {
    const b = this.appState.me?.budget;
    if (b && b.resets_at) return `It resets on ${fmtDate(b.resets_at)}.`;
    return '';
  }
}
