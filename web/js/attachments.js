// Attachments in the composer: the paperclip, a file dropped onto the chat or pasted into the
// message upload to the user's workspace (PUT /api/files/{path}) one after the other, each
// shown in place as a chip with its progress and a remove button (errors such as "too large"
// stay on the chip). Images show a thumbnail on their chip (composer_images.js). The uploaded
// files go with the next message as `attachments`; a sent message shows its files as chips
// (fileChips) and its images as thumbnails (image_thumbs.js).

import { h, clear, fmtBytes, icon, toast } from './dom.js';
import * as api from './api.js';
import { chipPreview, imageErrorText, imageFacts, namedPaste, isImageItem } from './composer_images.js';

/** Most files one message may attach (the server's limit too). */
export const MAX_FILES = 10;

/** A name the workspace accepts: no slashes, backslashes or control characters, not `.`/`..`. */
function safeName(name) {
  let n = String(name || '').replace(/[\u0000-\u001f\u007f/\\]/g, '_').trim();
  if (!n || n === '.' || n === '..') n = 'file';
  // At most 255 bytes in a path component: shorten the stem, keep the extension.
  const bytes = (s) => new TextEncoder().encode(s).length;
  if (bytes(n) > 200) {
    const dot = n.lastIndexOf('.');
    const ext = dot > 0 && n.length - dot <= 16 ? n.slice(dot) : '';
    let stem = n.slice(0, n.length - ext.length);
    while (bytes(stem + ext) > 200) stem = stem.slice(0, -1);
    n = stem.trimEnd() + ext;
  }
  return n;
}

/** `name`, or `name (2).ext`, `name (3).ext`… : the first not in `taken`. */
function uniqueName(name, taken) {
  if (!taken.has(name)) return name;
  const dot = name.lastIndexOf('.');
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : '';
  for (let i = 2; ; i += 1) {
    const candidate = `${stem} (${i})${ext}`;
    if (!taken.has(candidate)) return candidate;
  }
}

function errorText(err, file, limits) {
  // An image the server refused (not an image, corrupt, too many pixels): its own words.
  const image = imageErrorText(err);
  if (image) return image;
  if (err.code === 'file_too_large' || (err.status === 413 && err.code !== 'quota_exceeded')) {
    return limits?.max_file_bytes ? `Too large: the limit is ${fmtBytes(limits.max_file_bytes)} per file` : 'Too large for the workspace';
  }
  if (err.code === 'quota_exceeded') return `No room: ${err.message}`;
  if (err.status === 403) return 'Your role may not upload files';
  if (err.status === 404) return 'Workspace files are not available on this server';
  if (err.status === 429) return 'Too many uploads at once; remove it and try again';
  return err.message || `Could not upload ${file.name}`;
}

export class Attachments {
  /**
   * `onUploaded()`: a file reached the workspace (e.g. to refresh the files panel);
   * `onChange()`: the files on the composer changed (what the model notice looks at).
   */
  constructor({ onUploaded, onChange } = {}) {
    this.onUploaded = onUploaded || (() => {});
    this.onChange = onChange || (() => {});
    this.items = []; // {file, name, path, state: queued|uploading|done|error, el, controller}
    this.limits = null; // usage of GET /api/files: max_file_bytes…
    this.taken = null; // workspace paths, so an upload never replaces a file
    this.running = false;
    this.input = h('input', { type: 'file', multiple: true, class: 'visually-hidden', tabindex: '-1', 'aria-hidden': 'true' });
    this.input.addEventListener('change', () => { this.add([...this.input.files]); this.input.value = ''; });
    this.button = h('button', { type: 'button', class: 'icon-btn attach-btn', 'aria-label': 'Attach files', title: 'Attach files (or drop them on the chat; paste a copied image into the message)' }, icon('paperclip'));
    this.button.addEventListener('click', () => this.input.click());
    this.list = h('ul', { class: 'attach-list', 'aria-label': 'Attached files', 'aria-live': 'polite' });
    this.note = h('p', { class: 'attach-note', role: 'status' });
    this.el = h('div', { class: 'attach-area' }, this.input, this.list, this.note);
    this.render();
  }

  /**
   * Shows a drop zone over `target` while files are dragged onto it, and takes them; files
   * pasted into `input` are attached too.
   */
  watch(target, input) {
    input.addEventListener('paste', (ev) => {
      // A copied screenshot is a file item of the clipboard (some browsers list it only there).
      let files = [...(ev.clipboardData?.files || [])];
      if (!files.length) {
        files = [...(ev.clipboardData?.items || [])].filter((i) => i.kind === 'file').map((i) => i.getAsFile()).filter(Boolean);
      }
      if (!files.length) return;
      ev.preventDefault();
      this.add(files.map(namedPaste));
    });
    this.zone = h('div', { class: 'drop-zone', 'aria-hidden': 'true' },
      h('div', { class: 'drop-zone-inner' }, icon('paperclip'), h('span', null, 'Drop files to attach them')));
    this.zone.hidden = true;
    target.classList.add('drop-target');
    target.append(this.zone);
    let depth = 0;
    const hasFiles = (ev) => [...(ev.dataTransfer?.types || [])].includes('Files');
    const hide = () => { depth = 0; this.zone.hidden = true; };
    target.addEventListener('dragenter', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      depth += 1;
      this.zone.hidden = false;
    });
    target.addEventListener('dragover', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = 'copy';
    });
    target.addEventListener('dragleave', (ev) => {
      if (!hasFiles(ev)) return;
      depth -= 1;
      if (depth <= 0) hide();
    });
    target.addEventListener('drop', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      hide();
      this.add([...(ev.dataTransfer.files || [])]);
    });
  }

  /** Queues `files` for upload (beyond the per-message limit, says so and leaves them out). */
  add(files) {
    this.say('');
    const room = MAX_FILES - this.items.length;
    if (files.length > room) {
      this.say(`A message can carry at most ${MAX_FILES} files; ${files.length - Math.max(room, 0)} left out.`);
      files = files.slice(0, Math.max(room, 0));
    }
    for (const file of files) {
      const item = { file, name: safeName(file.name), path: null, state: 'queued', sent: 0 };
      item.el = this.chip(item);
      this.items.push(item);
      this.list.append(item.el);
      this.update(item);
    }
    this.render();
    this.pump();
  }

  /** Uploads the queued files one at a time (parallel uploads per user are limited). */
  async pump() {
    if (this.running) return;
    this.running = true;
    try {
      if (!this.taken) await this.loadWorkspace();
      for (;;) {
        const item = this.items.find((i) => i.state === 'queued');
        if (!item) break;
        await this.upload(item);
      }
    } finally {
      this.running = false;
    }
  }

  async loadWorkspace() {
    try {
      const res = await api.get('/api/files');
      this.limits = res.usage || null;
      this.taken = new Set((res.items || []).map((f) => f.path));
    } catch {
      this.taken = new Set(); // the upload itself will say what is wrong
    }
  }

  async upload(item) {
    const mine = new Set(this.items.filter((i) => i.path).map((i) => i.path));
    if (this.limits?.max_file_bytes && item.file.size > this.limits.max_file_bytes) {
      this.fail(item, `Too large: ${fmtBytes(item.file.size)}, the limit is ${fmtBytes(this.limits.max_file_bytes)} per file`);
      return;
    }
    item.path = uniqueName(item.name, new Set([...this.taken, ...mine]));
    item.state = 'uploading';
    item.controller = new AbortController();
    this.update(item);
    try {
      const written = await api.upload(item.path, item.file, {
        signal: item.controller.signal,
        onProgress: (sent) => { item.sent = sent; this.update(item); },
      });
      item.path = written?.path || item.path;
      item.size = written?.size ?? item.file.size;
      item.image = written?.image || null; // an image as the server stored it (resized?)
      item.state = 'done';
      this.taken.add(item.path);
      this.update(item);
      this.onUploaded();
    } catch (err) {
      if (err.name === 'AbortError') return; // removed by the user
      this.fail(item, errorText(err, item.file, this.limits));
    }
  }

  fail(item, message) {
    item.state = 'error';
    item.error = message;
    item.path = null;
    this.update(item);
  }

  chip(item) {
    const name = h('span', { class: 'attach-name' });
    const status = h('span', { class: 'attach-status' });
    const bar = h('progress', { class: 'attach-progress', max: '100', value: '0' });
    const remove = h('button', { type: 'button', class: 'icon-btn attach-remove' }, icon('close'));
    remove.addEventListener('click', () => this.remove(item));
    item.parts = { name, status, bar, remove };
    return h('li', { class: `attach-chip${isImageItem(item) ? ' attach-image' : ''}` }, chipPreview(item), h('span', { class: 'attach-body' }, name, status, bar), remove);
  }

  update(item) {
    const { name, status, bar, remove } = item.parts;
    // The name it has (or will have) in the workspace: what the model is told.
    const label = item.path || item.name;
    name.textContent = label;
    name.title = label;
    bar.setAttribute('aria-label', `Upload of ${label}`);
    item.el.dataset.state = item.state;
    const total = item.file.size || 1;
    const pct = Math.min(100, Math.round((item.sent / total) * 100));
    bar.hidden = item.state !== 'uploading';
    bar.value = pct;
    status.classList.toggle('attach-error', item.state === 'error');
    if (item.state === 'queued') status.textContent = `Waiting · ${fmtBytes(item.file.size)}`;
    else if (item.state === 'uploading') status.textContent = `${pct}% of ${fmtBytes(item.file.size)}`;
    else if (item.state === 'done') status.textContent = [fmtBytes(item.size ?? item.file.size), imageFacts(item.image)].filter(Boolean).join(' · ');
    else status.textContent = item.error;
    const verb = item.state === 'uploading' || item.state === 'queued' ? 'Cancel upload of' : 'Remove';
    remove.setAttribute('aria-label', `${verb} ${label}`);
    remove.title = verb === 'Remove' ? 'Remove' : 'Cancel upload';
    this.render();
  }

  /** Cancels or removes a file; an uploaded one is deleted from the workspace again. */
  remove(item) {
    const at = this.items.indexOf(item);
    if (at < 0) return;
    this.items.splice(at, 1);
    item.controller?.abort();
    if (item.state === 'uploading' && item.path) {
      // The whole body may have reached the server before the abort: delete what it wrote (a
      // name no other file had, chosen above; 404 when nothing was written).
      api.del(`/api/files/${item.path.split('/').map(encodeURIComponent).join('/')}`).then(() => this.onUploaded(), () => {});
    }
    // Only a copy this composer uploaded is deleted: a restored file may belong to a sent message.
    if (item.state === 'done' && item.path && !item.restored) {
      this.taken?.delete(item.path);
      api.del(`/api/files/${item.path.split('/').map(encodeURIComponent).join('/')}`).then(() => this.onUploaded(), () => {});
    }
    const next = this.items[at]?.parts.remove || this.items[at - 1]?.parts.remove || this.button;
    item.el.remove();
    this.say('');
    this.render();
    next.focus();
  }

  say(text) { this.note.textContent = text; this.note.hidden = !text; }

  render() {
    this.list.hidden = this.items.length === 0;
    this.el.hidden = this.items.length === 0 && !this.note.textContent;
    this.onChange();
  }

  /** How many images the composer holds (queued, uploading or uploaded; not failed ones). */
  imageCount() {
    return this.items.filter((i) => i.state !== 'error' && isImageItem(i)).length;
  }

  /** The uploaded files, or null (with a note on why) while some are still uploading. */
  ready() {
    if (this.items.some((i) => i.state === 'queued' || i.state === 'uploading')) {
      this.say('Wait until the files are uploaded, or remove them.');
      return null;
    }
    return this.items.filter((i) => i.state === 'done').map((i) => ({ path: i.path, bytes: i.size ?? i.file.size }));
  }

  /** Empties the composer's files (they went with a message); failed ones go too. */
  clear() {
    this.items = [];
    clear(this.list);
    this.say('');
    this.render();
  }

  /** The composer's files become `files` (an edited message's, sent again). */
  replace(files) {
    this.clear();
    this.restore(files);
  }

  /** Puts files already in the workspace back on the composer (a refused or edited message). */
  restore(files) {
    for (const f of files || []) {
      if (this.items.length >= MAX_FILES || this.items.some((i) => i.path === f.path)) continue;
      const name = f.path.split('/').pop();
      const item = { file: { name, size: f.bytes }, name, path: f.path, size: f.bytes, state: 'done', sent: f.bytes, restored: true };
      item.el = this.chip(item);
      this.items.push(item);
      this.list.append(item.el);
      this.update(item);
    }
    this.render();
  }
}

/** A sent message's files: chips that download the file. */
export function fileChips(files) {
  if (!files || !files.length) return null;
  return h('ul', { class: 'msg-files', 'aria-label': 'Attached files' }, files.map((f) => {
    const b = h('button', { type: 'button', class: 'msg-file', title: `Download ${f.path}`, 'aria-label': `Download ${f.path} (${fmtBytes(f.bytes)})` },
      icon('file'), h('span', { class: 'msg-file-name' }, f.path), h('span', { class: 'msg-file-size' }, fmtBytes(f.bytes)));
    b.addEventListener('click', () => download(f.path, b));
    return h('li', null, b);
  }));
}

async function download(path, button) {
  try {
    const resp = await api.api('GET', `/api/files/${path.split('/').map(encodeURIComponent).join('/')}`, undefined, { response: true, accept: '*/*' });
    const url = URL.createObjectURL(await resp.blob());
    const a = h('a', { href: url, download: path.split('/').pop() });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    if (err.status === 401) return;
    toast(err.status === 404 ? `${path} is no longer in your workspace.` : `Could not download ${path}: ${err.message}`, 'error');
  }
}
