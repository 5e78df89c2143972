// Adding documents to a collection: "Upload files" (a picker, several at once, or files
// dropped anywhere on the collection page) sends each file's bytes with PUT
// /api/collections/{id}/files/{name}, one after the other, with its progress on a row of the
// file list; "Add from workspace" picks files of the user's workspace (GET /api/files) and
// adds them with POST /api/collections/{id}/files. A refused file (too large, a type the
// server does not read, empty) keeps its reason on its own row.

import { h, clear, fmtBytes, icon, uid } from './dom.js';
import * as api from './api.js';
import { collectionPath, extensionOf, refusalText } from './knowledge_common.js';

let localCounter = 0;

export class AddDocuments {
  /** `files`: the page's FileList; `onAdded()` after the server took a file (reload, poll). */
  constructor(collectionId, { settings, files, onAdded }) {
    this.collectionId = collectionId;
    this.settings = settings;
    this.files = files;
    this.onAdded = onAdded;
    this.queue = [];
    this.running = false;
    const accept = (settings.accepted || []).map((e) => `.${e}`).join(',');
    this.input = h('input', { type: 'file', multiple: true, class: 'visually-hidden', tabindex: '-1', 'aria-hidden': 'true', 'aria-label': 'Files to upload', accept: accept || null });
    this.input.addEventListener('change', () => { this.add([...this.input.files]); this.input.value = ''; });
    const upload = h('button', { type: 'button', class: 'btn btn-primary' }, icon('upload'), 'Upload files');
    upload.addEventListener('click', () => this.input.click());
    const fromWorkspace = h('button', { type: 'button', class: 'btn' }, icon('file'), 'Add from workspace');
    fromWorkspace.addEventListener('click', () => this.pickFromWorkspace(fromWorkspace));
    const kinds = (settings.accepted || []).join(', ');
    this.el = h('div', { class: 'kadd' },
      h('div', { class: 'kadd-actions' }, this.input, upload, fromWorkspace),
      h('p', { class: 'muted small kadd-hint' },
        `Or drop files on this page. ${kinds ? `Accepted: ${kinds}` : ''}${settings.max_file_bytes ? `, up to ${fmtBytes(settings.max_file_bytes)} each` : ''}. `,
        'A file with the name of one already here replaces it once the new one is ready.'));
  }

  /** Takes files dropped anywhere on `target`, with a drop zone while they are dragged over. */
  watch(target) {
    const zone = h('div', { class: 'drop-zone', 'aria-hidden': 'true' },
      h('div', { class: 'drop-zone-inner' }, icon('upload'), h('span', null, 'Drop files to add them to the collection')));
    zone.hidden = true;
    target.classList.add('drop-target');
    target.append(zone);
    let depth = 0;
    const hasFiles = (ev) => [...(ev.dataTransfer?.types || [])].includes('Files');
    target.addEventListener('dragenter', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      depth += 1;
      zone.hidden = false;
    });
    target.addEventListener('dragover', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = 'copy';
    });
    target.addEventListener('dragleave', (ev) => {
      if (!hasFiles(ev)) return;
      depth -= 1;
      if (depth <= 0) { depth = 0; zone.hidden = true; }
    });
    target.addEventListener('drop', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      depth = 0;
      zone.hidden = true;
      this.add([...(ev.dataTransfer.files || [])]);
    });
  }

  /** Queues `files` for upload, each on its own row. */
  add(files) {
    for (const file of files) {
      localCounter += 1;
      const key = `local:${localCounter}`;
      const item = { key, file, name: file.name.split(/[\\/]/).pop() || 'file' };
      this.queue.push(item);
      this.files.local(key, { name: item.name, bytes: file.size, state: 'queued', progress: 0 });
    }
    this.pump();
  }

  async pump() {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length) await this.upload(this.queue.shift());
    } finally {
      this.running = false;
    }
  }

  async upload({ key, file, name }) {
    const max = this.settings.max_file_bytes;
    const row = (extra) => this.files.local(key, { name, bytes: file.size, ...extra });
    if (max && file.size > max) {
      row({ state: 'refused', error: `Too large (${fmtBytes(file.size)}): the limit is ${fmtBytes(max)} per file.` });
      return;
    }
    row({ state: 'uploading', progress: 0 });
    try {
      const added = await api.uploadTo(`${collectionPath(this.collectionId)}/files/${encodeURIComponent(name)}`, file, {
        onProgress: (sent, total) => row({ state: 'uploading', progress: total ? sent / total : 0 }),
      });
      this.files.dropLocal(key);
      if (added?.id) this.files.render([added, ...this.files.files.filter((f) => f.id !== added.id)]);
      this.onAdded();
    } catch (err) {
      if (err.status === 401) { this.files.dropLocal(key); return; }
      row({ state: 'refused', error: refusalText(err, this.settings) });
    }
  }

  /** A dialog listing the workspace's files; the ticked ones are added. */
  async pickFromWorkspace(opener) {
    const titleId = uid('kws');
    const err = h('p', { class: 'form-error', role: 'alert' });
    const list = h('div', { class: 'ws-pick-list' }, h('p', { class: 'muted' }, 'Loading your files…'));
    const ok = h('button', { type: 'submit', class: 'btn btn-primary', disabled: true }, 'Add files');
    const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Cancel');
    const form = h('form', { novalidate: true }, list, err, h('div', { class: 'dialog-actions' }, cancel, ok));
    const dialog = h('dialog', { class: 'account-dialog knowledge-dialog ws-pick-dialog', 'aria-labelledby': titleId },
      h('h2', { class: 'auth-title', id: titleId }, 'Add from your workspace'), form);
    cancel.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => { dialog.remove(); opener.focus(); });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();

    let items;
    try {
      items = (await api.get('/api/files')).items || [];
    } catch (e) {
      clear(list).append(h('p', { class: 'form-error' }, e.status === 404 ? 'Workspace files are not available on this server.' : `Could not list your files: ${e.message}`));
      return;
    }
    const accepted = new Set(this.settings.accepted || []);
    const boxes = [];
    clear(list);
    if (!items.length) list.append(h('p', { class: 'muted' }, 'Your workspace has no files yet. Upload some in the chat\'s Files panel, or upload them here directly.'));
    const fieldset = h('fieldset', { class: 'ws-pick' }, h('legend', { class: 'visually-hidden' }, 'Workspace files'));
    for (const f of items) {
      const id = uid('wsf');
      const readable = !accepted.size || accepted.has(extensionOf(f.path));
      const cb = h('input', { type: 'checkbox', id, value: f.path, disabled: !readable });
      cb.addEventListener('change', () => {
        const n = boxes.filter((b) => b.checked).length;
        ok.disabled = n === 0;
        ok.textContent = n > 1 ? `Add ${n} files` : 'Add file';
      });
      boxes.push(cb);
      fieldset.append(h('div', { class: 'field-inline ws-pick-item' }, cb,
        h('label', { for: id }, h('span', { class: 'ws-pick-name' }, f.path),
          h('span', { class: 'muted small' }, readable ? ` ${fmtBytes(f.size)}` : ' not a type collections read'))));
    }
    if (items.length) list.append(fieldset);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      ok.disabled = true;
      const failures = [];
      for (const cb of boxes.filter((b) => b.checked)) {
        try {
          await api.post(`${collectionPath(this.collectionId)}/files`, { workspace_path: cb.value });
          cb.checked = false;
          cb.disabled = true;
        } catch (e) {
          if (e.status === 401) return;
          failures.push(`${cb.value}: ${refusalText(e, this.settings)}`);
        }
      }
      this.onAdded();
      if (failures.length) {
        err.textContent = failures.join(' ');
        ok.disabled = false;
      } else {
        dialog.close();
      }
    });
  }
}
