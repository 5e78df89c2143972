// The conversation sidebar: the list grouped by date (pinned on top), full-text search over
// what was written, pin / archive / rename / delete on each chat, and the archived chats.

import { h, clear, fmtRelative, toast, icon } from './dom.js';
import * as api from './api.js';

const PAGE = 50;
const SEARCH_DELAY_MS = 250;

/** "Pinned", "Today", "Yesterday", "Previous 7 days", "Previous 30 days" or "Older". */
export function dateGroup(c, now = new Date()) {
  if (c.pinned) return 'Pinned';
  const startOfDay = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const at = new Date(c.updated_at || c.created_at).getTime();
  const day = 86400000;
  if (at >= startOfDay) return 'Today';
  if (at >= startOfDay - day) return 'Yesterday';
  if (at >= startOfDay - 7 * day) return 'Previous 7 days';
  if (at >= startOfDay - 30 * day) return 'Previous 30 days';
  return 'Older';
}

export class ConversationList {
  /**
   * isCurrent(id): whether that chat is open; closeSidebar(); onRenamed(conv); onDeleted(conv);
   * onChanged(conv): pinned or archived.
   */
  constructor({ isCurrent, closeSidebar, onRenamed, onDeleted }) {
    this.isCurrent = isCurrent;
    this.closeSidebar = closeSidebar;
    this.onRenamed = onRenamed;
    this.onDeleted = onDeleted;
    this.items = [];
    this.nextCursor = null;
    this.archived = false; // showing the archived chats
    this.results = null; // search results, or null when not searching
    this.searchTimer = null;

    this.search = h('input', { type: 'search', class: 'search', placeholder: 'Search chats', 'aria-label': 'Search chats' });
    this.search.addEventListener('input', () => this.scheduleSearch());
    this.list = h('ul', { class: 'conv-list', 'aria-label': 'Conversations' });
    this.moreBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-block' }, 'Load more');
    this.moreBtn.hidden = true;
    this.moreBtn.addEventListener('click', () => this.load(true));
    this.shelfBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-block shelf-toggle', 'aria-pressed': 'false' }, 'Archived chats');
    this.shelfBtn.addEventListener('click', () => this.toggleShelf());
    this.el = h('div', { class: 'conv-panel' }, this.search, h('div', { class: 'conv-scroll' }, this.list, this.moreBtn, this.shelfBtn));
  }

  focusSearch() { this.search.focus(); }

  async load(more) {
    try {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (this.archived) q.set('archived', 'true');
      if (more && this.nextCursor) q.set('cursor', this.nextCursor);
      const page = await api.get(`/api/conversations?${q}`);
      this.items = more ? this.items.concat(page.items) : page.items;
      this.nextCursor = page.next_cursor || null;
    } catch (err) {
      if (err.status !== 401) toast(`Could not load conversations: ${err.message}`, 'error');
    }
    this.render();
  }

  /** A chat just created: first in the list. */
  add(conv) {
    if (this.archived) return;
    this.items.unshift(conv);
    this.render();
  }

  /** A chat that just had a turn: most recent (below the pinned ones), and out of the archive. */
  touch(id) {
    const c = this.items.find((x) => x.id === id);
    if (!c) return;
    c.updated_at = new Date().toISOString();
    c.archived_at = null;
    if (this.archived) this.items = this.items.filter((x) => x !== c);
    else this.items = [c, ...this.items.filter((x) => x !== c)];
    this.render();
  }

  toggleShelf() {
    this.archived = !this.archived;
    this.shelfBtn.textContent = this.archived ? 'Back to chats' : 'Archived chats';
    this.shelfBtn.setAttribute('aria-pressed', String(this.archived));
    this.list.setAttribute('aria-label', this.archived ? 'Archived conversations' : 'Conversations');
    this.load(false);
  }

  scheduleSearch() {
    clearTimeout(this.searchTimer);
    const q = this.search.value.trim();
    if (!q) {
      this.results = null;
      this.render();
      return;
    }
    this.searchTimer = setTimeout(async () => {
      try {
        const page = await api.get(`/api/conversations?${new URLSearchParams({ q: q.slice(0, 200), limit: String(PAGE) })}`);
        if (this.search.value.trim() === q) {
          this.results = page.items;
          this.render();
        }
      } catch (err) {
        if (err.status !== 401) toast(`Search failed: ${err.message}`, 'error');
      }
    }, SEARCH_DELAY_MS);
  }

  render() {
    clear(this.list);
    const searching = this.results !== null;
    const items = searching ? this.results : (this.archived ? this.items : this.items.filter((c) => !c.archived_at));
    if (!items.length) {
      let text = this.archived ? 'No archived chats.' : 'No chats yet. Say hello!';
      if (searching) text = 'No chats match your search.';
      this.list.append(h('li', { class: 'conv-empty' }, text));
    }
    let group = null;
    for (const c of items) {
      const g = searching ? null : (this.archived ? 'Archived' : dateGroup(c));
      if (g && g !== group) {
        group = g;
        this.list.append(h('li', { class: 'conv-group', role: 'presentation' }, g));
      }
      this.list.append(this.renderItem(c, searching));
    }
    this.moreBtn.hidden = !this.nextCursor || searching;
    this.shelfBtn.hidden = searching;
  }

  renderItem(c, searching) {
    const title = c.title || 'Untitled';
    const active = this.isCurrent(c.id);
    const link = h('a', { href: `/c/${encodeURIComponent(c.id)}`, 'data-nav': '', class: 'conv-link', 'aria-current': active ? 'page' : null },
      h('span', { class: 'conv-title' }, c.pinned ? h('span', { class: 'pin-mark', title: 'Pinned' }, icon('pin')) : null, forkBadge(c), title),
      searching && c.snippet ? h('span', { class: 'conv-snippet' }, highlight(c.snippet, this.search.value)) : null,
      h('span', { class: 'conv-time' }, `${c.archived_at && searching ? 'Archived · ' : ''}${fmtRelative(c.updated_at || c.created_at)}`));
    link.addEventListener('click', () => this.closeSidebar());
    const pinBtn = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `${c.pinned ? 'Unpin' : 'Pin'} ${title}`, title: c.pinned ? 'Unpin' : 'Pin' }, icon('pin'));
    const archiveBtn = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `${c.archived_at ? 'Unarchive' : 'Archive'} ${title}`, title: c.archived_at ? 'Unarchive' : 'Archive' }, icon('archive'));
    const renameBtn = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `Rename ${title}`, title: 'Rename' }, icon('edit'));
    const deleteBtn = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `Delete ${title}`, title: 'Delete' }, icon('trash'));
    const li = h('li', { class: `conv-item${active ? ' active' : ''}` }, link, h('div', { class: 'conv-actions' }, pinBtn, archiveBtn, renameBtn, deleteBtn));
    pinBtn.addEventListener('click', () => this.change(c, { pinned: !c.pinned }, c.pinned ? 'Unpinned.' : 'Pinned to the top.'));
    archiveBtn.addEventListener('click', () => this.change(c, { archived: !c.archived_at }, c.archived_at ? 'Back among your chats.' : 'Archived. Find it under “Archived chats” or by searching.'));
    renameBtn.addEventListener('click', () => this.startRename(li, c));
    deleteBtn.addEventListener('click', () => this.confirmDelete(li, c));
    return li;
  }

  async change(c, patch, okText) {
    try {
      const updated = await api.patch(`/api/conversations/${encodeURIComponent(c.id)}`, patch);
      Object.assign(c, updated);
      // Moved to the other shelf: it leaves this list.
      if ('archived' in patch && Boolean(c.archived_at) !== this.archived) this.items = this.items.filter((x) => x.id !== c.id);
      if ('pinned' in patch) await this.load(false);
      toast(okText);
    } catch (err) {
      toast(`That did not work: ${err.message}`, 'error');
    }
    this.render();
  }

  startRename(li, c) {
    const input = h('input', { type: 'text', class: 'rename-input', value: c.title || '', 'aria-label': 'New title', maxlength: '200' });
    const save = h('button', { type: 'submit', class: 'btn btn-small btn-primary' }, 'Save');
    const cancel = h('button', { type: 'button', class: 'btn btn-small' }, 'Cancel');
    const form = h('form', { class: 'rename-form' }, input, save, cancel);
    clear(li).append(form);
    input.focus();
    input.select();
    const done = () => this.render();
    cancel.addEventListener('click', done);
    input.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') done(); });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const t = input.value.trim();
      if (!t) { input.focus(); return; }
      try {
        const updated = await api.patch(`/api/conversations/${encodeURIComponent(c.id)}`, { title: t });
        c.title = updated?.title ?? t;
        this.onRenamed(c);
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
    no.addEventListener('click', () => this.render());
    yes.addEventListener('click', async () => {
      try {
        await api.del(`/api/conversations/${encodeURIComponent(c.id)}`);
        this.forget(c.id);
        toast('Chat deleted.');
        this.onDeleted(c);
      } catch (err) {
        toast(`Delete failed: ${err.message}`, 'error');
      }
      this.render();
    });
  }

  /** Drops a chat from the list (deleted, here or because its first message was refused). */
  forget(id) {
    this.items = this.items.filter((x) => x.id !== id);
    if (this.results) this.results = this.results.filter((x) => x.id !== id);
    this.render();
  }
}

/** A copy ("Continue as copy") says so: cut to its first words it looked like its original. */
function forkBadge(c) {
  if (!c.forked_from) return null;
  return h('span', { class: 'pill fork-badge', title: 'Continued as a copy of another chat' }, 'copy');
}

/** The snippet with the searched words marked (text nodes only: nothing is parsed as HTML). */
function highlight(text, query) {
  const words = query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 1);
  if (!words.length) return text;
  const out = [];
  const lower = text.toLowerCase();
  let at = 0;
  while (at < text.length) {
    let next = -1;
    let len = 0;
    for (const w of words) {
      const i = lower.indexOf(w, at);
      if (i !== -1 && (next === -1 || i < next)) { next = i; len = w.length; }
    }
    if (next === -1) break;
    if (next > at) out.push(text.slice(at, next));
    out.push(h('mark', null, text.slice(next, next + len)));
    at = next + len;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}
