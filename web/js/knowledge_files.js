// The files of a collection and their ingestion: queued, extracting and embedding (with a
// progress bar), ready with the number of chunks, or failed with the error and a Retry
// button; Delete on each. Rows are kept by id and updated in place while the page polls, so
// focus and reading position survive. Uploads in flight, and files the server refused, are
// local rows (no id yet) with their own progress or error.

import { h, clear, fmtBytes, fmtRelative, toast } from './dom.js';
import * as api from './api.js';
import { BUSY_STATES, STATE_LABEL, collectionPath } from './knowledge_common.js';

const pct = (p) => `${Math.max(0, Math.min(100, Math.round(Number(p || 0) * 100)))}%`;

function stateText(f) {
  switch (f.state) {
    case 'ready': return `Ready · ${f.chunks} chunk${f.chunks === 1 ? '' : 's'}`;
    case 'failed': return f.error ? `Failed: ${f.error}` : 'Failed';
    case 'refused': return f.error;
    case 'uploading': return `${STATE_LABEL[f.state]} · ${pct(f.progress)}`;
    case 'extracting': case 'embedding': return `${STATE_LABEL[f.state]} · ${pct(f.progress)}${stillLive(f)}`;
    default: return `${STATE_LABEL[f.state] || f.state}${stillLive(f)}`;
  }
}

/** A new version on its way: the previous one's chunks stay searchable meanwhile. */
function stillLive(f) {
  return BUSY_STATES.has(f.state) && f.chunks > 0 ? ` · the previous version (${f.chunks} chunk${f.chunks === 1 ? '' : 's'}) is searched until then` : '';
}

export class FileList {
  /** `collectionId`; `onChange()` after a file was retried or deleted (reload the page). */
  constructor(collectionId, { canManage, onChange }) {
    this.collectionId = collectionId;
    this.canManage = canManage;
    this.onChange = onChange;
    this.rows = new Map(); // key (file id, or `local:<n>`) -> {el, parts, file}
    this.locals = []; // keys of local rows, newest first
    this.files = [];
    this.list = h('ul', { class: 'kfile-list', 'aria-label': 'Files' });
    this.summary = h('p', { class: 'kfile-summary muted small', role: 'status' });
    this.empty = h('p', { class: 'muted kfile-empty' }, 'No documents yet.');
    this.el = h('div', { class: 'kfile-area' }, this.summary, this.empty, this.list);
  }

  /** Whether any file is still being worked on (the page polls while so). */
  busy() { return this.files.some((f) => BUSY_STATES.has(f.state)); }

  /** Shows the server's `files`. */
  render(files) {
    this.files = files || [];
    for (const f of this.files) this.upsert(f.id, f);
    const keep = new Set([...this.locals, ...this.files.map((f) => f.id)]);
    for (const key of [...this.rows.keys()]) {
      if (!keep.has(key)) { this.rows.get(key).el.remove(); this.rows.delete(key); }
    }
    this.order();
    const busy = this.files.filter((f) => BUSY_STATES.has(f.state)).length;
    const failed = this.files.filter((f) => f.state === 'failed').length;
    const parts = [];
    if (busy) parts.push(`Processing ${busy} file${busy === 1 ? '' : 's'}…`);
    if (failed) parts.push(`${failed} failed.`);
    if (!busy && !failed && this.files.length) parts.push(`All ${this.files.length} file${this.files.length === 1 ? ' is' : 's are'} ready.`);
    this.summary.textContent = parts.join(' ');
  }

  /** A local row (an upload or a refusal); returns its key for `local(key, …)` updates. */
  local(key, file) {
    if (!this.rows.has(key)) this.locals.unshift(key);
    this.upsert(key, file);
    this.order();
    return key;
  }

  dropLocal(key) {
    this.locals = this.locals.filter((k) => k !== key);
    this.rows.get(key)?.el.remove();
    this.rows.delete(key);
    this.order();
  }

  /** Puts the rows in order (uploads first) without moving those already in place. */
  order() {
    const want = [...this.locals, ...this.files.map((f) => f.id)].map((k) => this.rows.get(k)?.el).filter(Boolean);
    const have = [...this.list.children];
    if (want.length !== have.length || want.some((el, i) => el !== have[i])) this.list.append(...want);
    this.empty.hidden = want.length > 0;
  }

  upsert(key, file) {
    let row = this.rows.get(key);
    if (!row) {
      row = this.row(key);
      this.rows.set(key, row);
    }
    const before = row.file;
    row.file = file;
    const { el, name, meta, state, bar, actions } = row;
    el.dataset.state = file.state;
    name.textContent = file.name;
    name.title = file.name;
    const where = file.source === 'workspace' ? 'from your workspace' : null;
    meta.textContent = [file.bytes != null ? fmtBytes(file.bytes) : null, where, file.updated_at ? fmtRelative(file.updated_at) : null].filter(Boolean).join(' · ');
    state.textContent = stateText(file);
    state.classList.toggle('kfile-error', file.state === 'failed' || file.state === 'refused');
    const moving = BUSY_STATES.has(file.state) || file.state === 'uploading';
    bar.hidden = !moving || file.state === 'queued';
    bar.value = Number(file.progress || 0);
    bar.setAttribute('aria-label', `${STATE_LABEL[file.state] || file.state} ${file.name}`);
    if (!before || before.state !== file.state) this.drawActions(key, file, actions);
  }

  row(key) {
    const name = h('span', { class: 'kfile-name' });
    const meta = h('span', { class: 'kfile-meta' });
    const state = h('span', { class: 'kfile-state' });
    const bar = h('progress', { class: 'kfile-progress', max: '1', value: '0' });
    const actions = h('div', { class: 'kfile-actions' });
    const el = h('li', { class: 'kfile', dataset: { key } },
      h('div', { class: 'kfile-info' }, name, meta, state, bar), actions);
    return { el, name, meta, state, bar, actions };
  }

  drawActions(key, file, actions) {
    clear(actions);
    if (file.state === 'refused') {
      const dismiss = h('button', { type: 'button', class: 'btn btn-ghost btn-small', 'aria-label': `Dismiss ${file.name}` }, 'Dismiss');
      dismiss.addEventListener('click', () => this.dropLocal(key));
      actions.append(dismiss);
      return;
    }
    if (!file.id || !this.canManage) return;
    if (file.state === 'failed') {
      const retry = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Retry ${file.name}` }, 'Retry');
      retry.addEventListener('click', () => this.retry(file, retry));
      actions.append(retry);
    }
    const del = h('button', { type: 'button', class: 'btn btn-ghost btn-small', 'aria-label': `Delete ${file.name}` }, 'Delete');
    del.addEventListener('click', () => this.remove(file, del));
    actions.append(del);
  }

  async retry(file, btn) {
    btn.disabled = true;
    try {
      const again = await api.post(`${collectionPath(this.collectionId)}/files/${encodeURIComponent(file.id)}/retry`, {});
      if (again?.id) this.upsert(again.id, again);
      toast(`Retrying ${file.name}.`);
    } catch (err) {
      btn.disabled = false;
      if (err.status !== 401) toast(`Could not retry ${file.name}: ${err.message}`, 'error');
    }
    this.onChange();
  }

  /** Two clicks: the first asks, the second deletes. */
  async remove(file, btn) {
    if (btn.dataset.armed !== '1') {
      btn.dataset.armed = '1';
      btn.textContent = 'Confirm delete';
      btn.classList.add('btn-danger');
      btn.setAttribute('aria-label', `Confirm: delete ${file.name} from the collection`);
      setTimeout(() => {
        if (!btn.isConnected || btn.dataset.armed !== '1') return;
        btn.dataset.armed = '';
        btn.textContent = 'Delete';
        btn.classList.remove('btn-danger');
        btn.setAttribute('aria-label', `Delete ${file.name}`);
      }, 5000);
      return;
    }
    btn.disabled = true;
    try {
      await api.del(`${collectionPath(this.collectionId)}/files/${encodeURIComponent(file.id)}`);
      toast(`Deleted ${file.name}.`);
    } catch (err) {
      btn.disabled = false;
      if (err.status !== 401) toast(`Could not delete ${file.name}: ${err.message}`, 'error');
    }
    this.onChange();
  }
}
