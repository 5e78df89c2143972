// The chat header's "Knowledge" button: which collections are pinned to the open chat (the
// ones `search_knowledge` searches there by default), with their number on the button and
// their names in its label; it opens a dialog to pin and unpin them (PUT
// /api/conversations/{id}/collections). In a new chat the choice waits and is pinned when the
// chat is created, before its first message. Hidden when the server offers no knowledge.

import { h, clear, uid, icon, toast } from './dom.js';
import * as api from './api.js';
import { knowledgeInfo, countsText } from './knowledge_common.js';
import { sharingText } from './knowledge_dialogs.js';

const pinsPath = (convId) => `/api/conversations/${encodeURIComponent(convId)}/collections`;

export class KnowledgePins {
  /** `current()`: the open chat (or null for a new one). */
  constructor({ current }) {
    this.current = current;
    this.pinned = []; // [{id, name}] of the open chat
    this.pending = []; // chosen in a new chat, pinned once it exists
    this.loadedFor = undefined;
    this.count = h('span', { class: 'kpins-count' });
    this.btn = h('button', { type: 'button', class: 'btn btn-ghost btn-small kpins-btn', 'aria-haspopup': 'dialog' },
      icon('book'), h('span', { class: 'kpins-label' }, 'Knowledge'), this.count);
    this.btn.hidden = true;
    this.btn.addEventListener('click', () => this.open());
    this.el = this.btn;
    knowledgeInfo().then((k) => { this.available = Boolean(k.available); this.update(); }, () => {});
  }

  /** The open chat changed (or was created): shows its pins. */
  async update() {
    if (!this.available) { this.btn.hidden = true; return; }
    this.btn.hidden = false;
    const conv = this.current();
    const id = conv?.id || null;
    if (!id) { this.show(this.pending); return; }
    if (this.loadedFor === id) { this.show(this.pinned); return; }
    this.loadedFor = id;
    this.show([]);
    try {
      const res = await api.get(pinsPath(id));
      if (this.current()?.id !== id) return;
      this.pinned = res.items || [];
    } catch {
      this.pinned = [];
    }
    this.show(this.pinned);
  }

  show(list) {
    this.count.textContent = list.length ? String(list.length) : '';
    this.count.hidden = !list.length;
    const names = list.map((c) => c.name).join(', ');
    this.btn.setAttribute('aria-label', list.length ? `Knowledge pinned to this chat: ${names}` : 'Knowledge: no collection pinned to this chat');
    this.btn.title = list.length ? `Searched in this chat: ${names}` : 'Pin knowledge collections to this chat';
    this.btn.classList.toggle('has-pins', list.length > 0);
  }

  /** Called right after a new chat was created: pins what was chosen before it existed. */
  async applyPending(convId) {
    if (!this.pending.length) return;
    const ids = this.pending.map((c) => c.id);
    this.pending = [];
    try {
      const res = await api.put(pinsPath(convId), { collections: ids });
      this.pinned = res.items || [];
      this.loadedFor = convId;
      this.show(this.pinned);
    } catch (err) {
      if (err.status !== 401) toast(`The collections could not be pinned to this chat: ${err.message}`, 'error');
    }
  }

  async open() {
    const conv = this.current();
    const chosen = new Set((conv ? this.pinned : this.pending).map((c) => c.id));
    const titleId = uid('kpins');
    const list = h('div', { class: 'kpins-list' }, h('p', { class: 'muted' }, 'Loading collections…'));
    const err = h('p', { class: 'form-error', role: 'alert' });
    const save = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save');
    const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Cancel');
    const manage = h('a', { href: '/knowledge', 'data-nav': '', class: 'btn btn-ghost' }, 'Manage collections');
    const form = h('form', { novalidate: true },
      h('p', { class: 'muted small' }, 'The assistant searches the pinned collections when it looks something up, and cites what it uses. Changes apply from your next message.'),
      list, err, h('div', { class: 'dialog-actions kpins-actions' }, manage, h('span', { class: 'spacer' }), cancel, save));
    const dialog = h('dialog', { class: 'account-dialog kpins-dialog', 'aria-labelledby': titleId },
      h('h2', { class: 'auth-title', id: titleId }, 'Knowledge for this chat'), form);
    cancel.addEventListener('click', () => dialog.close());
    manage.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => { dialog.remove(); if (this.btn.isConnected) this.btn.focus(); });
    document.body.append(dialog);
    dialog.showModal();

    let items;
    try {
      items = (await api.get('/api/collections')).items || [];
    } catch (e) {
      clear(list).append(h('p', { class: 'form-error' }, `Could not load the collections: ${e.message}`));
      save.disabled = true;
      return;
    }
    clear(list);
    const boxes = [];
    if (!items.length) {
      list.append(h('p', { class: 'muted' }, 'No collections yet: create one on the Knowledge page and add documents to it.'));
      save.disabled = true;
    }
    const fieldset = h('fieldset', { class: 'kpins-choices' }, h('legend', { class: 'visually-hidden' }, 'Collections'));
    for (const c of items) {
      const id = uid('kpin');
      const cb = h('input', { type: 'checkbox', id, value: c.id, checked: chosen.has(c.id) });
      boxes.push({ cb, c });
      fieldset.append(h('div', { class: 'field-inline kpins-choice' }, cb,
        h('label', { for: id }, h('span', { class: 'kpins-name' }, c.name),
          h('span', { class: 'muted small kpins-meta' }, `${countsText(c)} · ${sharingText(c)}`))));
    }
    if (items.length) list.append(fieldset);
    (boxes[0]?.cb || cancel).focus();

    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      const picked = boxes.filter((b) => b.cb.checked).map((b) => ({ id: b.c.id, name: b.c.name }));
      const now = this.current();
      if (!now) {
        this.pending = picked;
        this.show(picked);
        dialog.close();
        return;
      }
      save.disabled = true;
      try {
        const res = await api.put(pinsPath(now.id), { collections: picked.map((c) => c.id) });
        this.pinned = res.items || picked;
        this.loadedFor = now.id;
        this.show(this.pinned);
        dialog.close();
        toast(this.pinned.length ? `Pinned: ${this.pinned.map((c) => c.name).join(', ')}.` : 'No collection pinned to this chat.');
      } catch (e) {
        err.textContent = e.message || 'The pins could not be saved.';
      } finally {
        save.disabled = false;
      }
    });
  }
}
