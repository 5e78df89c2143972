// The user's workspace files: list, upload, download, delete.

import { h, clear, fmtBytes, fmtRelative, toast, icon } from './dom.js';
import * as api from './api.js';

function encodePath(p) {
  return p.split('/').map(encodeURIComponent).join('/');
}

export class FilesPanel {
  constructor({ button, scrim }) {
    this.button = button;
    this.scrim = scrim;
    this.list = h('ul', { class: 'file-list', 'aria-label': 'Files' });
    this.usage = h('div', { class: 'file-usage' });
    this.note = h('p', { class: 'muted files-note' });
    this.fileInput = h('input', { type: 'file', multiple: true, class: 'visually-hidden', id: 'file-upload' });
    const uploadLabel = h('label', { for: 'file-upload', class: 'btn btn-primary btn-small upload-label' }, 'Upload file');
    this.fileInput.addEventListener('change', () => this.upload([...this.fileInput.files]));
    const closeBtn = h('button', { type: 'button', class: 'icon-btn files-close', 'aria-label': 'Close files' }, icon('close'));
    closeBtn.addEventListener('click', () => this.close());
    const refreshBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-small', 'aria-label': 'Refresh files' }, icon('refresh'));
    refreshBtn.addEventListener('click', () => this.load());
    this.uploadRow = h('div', { class: 'files-actions' }, this.fileInput, uploadLabel, refreshBtn);
    this.el = h('aside', { class: 'files-panel', id: 'files-panel', 'aria-label': 'Workspace files' },
      h('div', { class: 'files-head' }, h('h2', null, 'Workspace files'), closeBtn),
      h('p', { class: 'muted small' }, 'Files the assistant can read with its tools.'),
      this.uploadRow, this.usage, this.note, this.list);
    this.el.addEventListener('dragover', (ev) => { ev.preventDefault(); this.el.classList.add('drop'); });
    this.el.addEventListener('dragleave', () => this.el.classList.remove('drop'));
    this.el.addEventListener('drop', (ev) => {
      ev.preventDefault();
      this.el.classList.remove('drop');
      this.upload([...(ev.dataTransfer?.files || [])]);
    });
    button.addEventListener('click', () => (this.isOpen() ? this.close() : this.open()));
  }

  isOpen() { return this.el.classList.contains('open'); }

  open(reload = true) {
    this.el.classList.add('open');
    this.button.setAttribute('aria-expanded', 'true');
    this.scrim.classList.add('show-narrow');
    if (reload) this.load();
  }

  close() {
    this.el.classList.remove('open');
    this.button.setAttribute('aria-expanded', 'false');
    this.scrim.classList.remove('show-narrow');
  }

  /** Opens the panel only when the server has workspace files (used on wide screens). */
  async openIfAvailable() {
    await this.load();
    if (this.available) this.open(false);
  }

  async load() {
    let res;
    try {
      res = await api.get('/api/files');
    } catch (err) {
      clear(this.list);
      this.usage.textContent = '';
      if (err.status === 404) {
        this.note.textContent = 'Workspace files are not available on this server yet.';
        this.uploadRow.hidden = true;
        this.available = false;
      } else if (err.status === 403) {
        this.note.textContent = 'Your role may not use workspace files.';
        this.uploadRow.hidden = true;
      } else if (err.status !== 401) {
        this.note.textContent = `Could not load files: ${err.message}`;
      }
      return;
    }
    this.uploadRow.hidden = false;
    this.available = true;
    this.render(res);
  }

  render(res) {
    const items = res.items || [];
    clear(this.list);
    const u = res.usage;
    this.usage.textContent = u ? `${fmtBytes(u.bytes)} of ${fmtBytes(u.max_bytes)} · ${u.files} of ${u.max_files} files` : '';
    this.note.textContent = items.length ? '' : 'No files yet. Upload one to let the assistant read it.';
    for (const f of items) {
      const dl = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `Download ${f.path}`, title: 'Download' }, icon('download'));
      const rm = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `Delete ${f.path}`, title: 'Delete' }, icon('trash'));
      dl.addEventListener('click', () => this.download(f.path));
      rm.addEventListener('click', () => this.remove(f.path, rm));
      this.list.append(h('li', { class: 'file-item' },
        h('div', { class: 'file-info' },
          h('span', { class: 'file-name', title: f.path }, f.path),
          h('span', { class: 'file-meta' }, `${fmtBytes(f.size)} · ${fmtRelative(f.modified)}`)),
        h('div', { class: 'file-actions' }, dl, rm)));
    }
  }

  async upload(files) {
    if (!files.length) return;
    for (const file of files) {
      try {
        await api.put(`/api/files/${encodePath(file.name)}`, undefined, { raw: file, contentType: file.type || 'application/octet-stream' });
        toast(`Uploaded ${file.name}.`);
      } catch (err) {
        const why = err.status === 413 ? 'the file is too large or the workspace is full' : err.message;
        toast(`Upload of ${file.name} failed: ${why}`, 'error');
      }
    }
    this.fileInput.value = '';
    this.load();
  }

  async download(path) {
    try {
      const resp = await api.api('GET', `/api/files/${encodePath(path)}`, undefined, { response: true, accept: '*/*' });
      const blob = await resp.blob();
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: path.split('/').pop() });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (err) {
      toast(`Download failed: ${err.message}`, 'error');
    }
  }

  async remove(path, btn) {
    if (btn.dataset.confirm !== '1') {
      btn.dataset.confirm = '1';
      btn.textContent = 'Delete?';
      btn.classList.add('confirming');
      btn.setAttribute('aria-label', `Confirm delete ${path}`);
      setTimeout(() => {
        if (btn.isConnected && btn.dataset.confirm === '1') {
          btn.dataset.confirm = '';
          clear(btn).append(icon('trash'));
          btn.classList.remove('confirming');
          btn.setAttribute('aria-label', `Delete ${path}`);
        }
      }, 4000);
      return;
    }
    try {
      await api.del(`/api/files/${encodePath(path)}`);
      toast(`Deleted ${path}.`);
    } catch (err) {
      toast(`Delete failed: ${err.message}`, 'error');
    }
    this.load();
  }
}
