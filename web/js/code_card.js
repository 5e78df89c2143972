// The code interpreter's tool card (run_python): the code, highlighted with text nodes only
// (nothing the model wrote is ever parsed as markup), stdout and stderr, the saved files as
// download chips, and PNG/JPEG/WebP/GIF charts inline under the card (a click opens them full
// size). Files come from the server's file route (fetched with the session, bytes checked to
// be an image, shown from a blob URL revoked when the card leaves); SVG, HTML and anything
// else is only ever a download.

import { h, clear, fmtBytes, fmtDuration, icon, toast } from './dom.js';
import * as api from './api.js';
import { IMAGE_TYPES, isImagePath } from './image_bytes.js';
import { thumbnail } from './image_thumbs.js';

export const TOOL = 'run_python';
const KEYWORDS = new Set(('False None True and as assert async await break class continue def del elif else except '
  + 'finally for from global if import in is lambda nonlocal not or pass raise return try while with yield').split(' '));
const TOKEN = /(#[^\n]*)|("""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)/g;

/** `code` as spans of text: comments, strings, numbers and keywords get a class. */
export function highlight(code) {
  const out = [];
  let last = 0;
  for (const m of code.matchAll(TOKEN)) {
    if (m.index > last) out.push(code.slice(last, m.index));
    const [text, comment, string, number, word] = m;
    let cls = null;
    if (comment) cls = 'py-comment';
    else if (string) cls = 'py-string';
    else if (number) cls = 'py-number';
    else if (word && KEYWORDS.has(word)) cls = 'py-keyword';
    out.push(cls ? h('span', { class: cls }, text) : text);
    last = m.index + text.length;
  }
  if (last < code.length) out.push(code.slice(last));
  return out;
}

function parsed(args) {
  if (typeof args === 'string') { try { return JSON.parse(args); } catch { return {}; } }
  return args && typeof args === 'object' ? args : {};
}

/** How the file route is reached: the signed-in user's workspace by default. */
const workspaceFiles = (path) => api.api('GET', `/api/files/${path.split('/').map(encodeURIComponent).join('/')}`,
  undefined, { response: true, accept: '*/*' });

/** Shows the code in place of the raw arguments of a run_python card. */
export function showCode(card, args) {
  const { code, inputs } = parsed(args);
  if (typeof code !== 'string') return;
  const pre = card.el.querySelector('.tool-body > .tool-pre');
  const title = card.el.querySelector('.tool-body > .tool-section-title');
  if (title) title.textContent = 'Code';
  if (pre) {
    clear(pre).append(h('code', { class: 'py' }, highlight(code)));
    pre.classList.add('code-run-code');
  }
  if (Array.isArray(inputs) && inputs.length && pre) {
    pre.after(h('p', { class: 'code-run-inputs muted' }, `Inputs: ${inputs.join(', ')}`));
  }
  const summary = card.el.querySelector('.tool-args-summary');
  // The first line that says something about this run (not a comment, not an import).
  const telling = (l) => l.trim() && !/^\s*(#|import\s|from\s\S+\s+import\s)/.test(l);
  if (summary) summary.textContent = (code.split('\n').find(telling) || code.split('\n').find((l) => l.trim()) || 'Python').trim().slice(0, 60);
}

async function blobOf(fetchFile, f) {
  const resp = await fetchFile(f.path);
  return resp.blob();
}

async function download(fetchFile, f) {
  try {
    const url = URL.createObjectURL(await blobOf(fetchFile, f));
    const a = h('a', { href: url, download: f.path.split('/').pop() });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    if (err.status === 401) return;
    toast(err.status === 404 ? `${f.path} is no longer there.` : `Could not download ${f.path}: ${err.message}`, 'error');
  }
}

function chip(fetchFile, f) {
  const b = h('button', { type: 'button', class: 'msg-file code-run-file', title: `Download ${f.path}`,
    'aria-label': `Download ${f.path} (${fmtBytes(f.bytes)})`, dataset: { path: f.path } },
  icon('download'), h('span', { class: 'msg-file-name' }, f.path.split('/').pop()), h('span', { class: 'msg-file-size' }, fmtBytes(f.bytes)));
  b.addEventListener('click', () => download(fetchFile, f));
  return h('li', null, b);
}

function figure(fetchFile, f) {
  const name = f.path.split('/').pop();
  // Only bytes that are PNG, JPEG, GIF or WebP are ever put in an <img> (image_thumbs.js).
  const thumb = thumbnail(f, fetchFile, { cls: 'code-run-open', imgClass: 'code-run-image', label: `Chart ${name}` });
  return h('figure', { class: 'code-run-figure' }, thumb, h('figcaption', { class: 'muted' }, name));
}

function stream(label, text, cls) {
  if (!text) return null;
  return [h('div', { class: 'tool-section-title' }, label), h('pre', { class: `tool-pre ${cls}`, tabindex: '0' }, text)];
}

/**
 * Renders a run's result in `card` (the envelope's data) and its charts right after the
 * card. `fetchFile(path)` resolves to a Response with the file's bytes.
 */
export function showRun(card, data, { fetchFile = workspaceFiles } = {}) {
  if (!data || typeof data !== 'object') return false;
  const box = card.resultBox;
  clear(box);
  const facts = [];
  if (data.exit !== undefined) facts.push(data.exit === 0 ? 'exit 0' : `exit ${data.exit ?? 'killed'}`);
  if (data.timed_out) facts.push('timed out');
  if (data.limit_hit) facts.push(`${data.limit_hit} limit hit`);
  if (data.cpu_ms !== undefined) facts.push(`CPU ${fmtDuration(data.cpu_ms)}`);
  if (data.max_rss_bytes) facts.push(`peak ${fmtBytes(data.max_rss_bytes)}`);
  box.append(h('p', { class: 'code-run-facts muted' }, facts.join(' · ')));
  box.append(...(stream('Output', data.stdout, 'code-run-stdout') || []), ...(stream('Errors', data.stderr, 'code-run-stderr') || []));
  const files = Array.isArray(data.files) ? data.files.filter((f) => f && typeof f.path === 'string') : [];
  if (Array.isArray(data.not_saved) && data.not_saved.length) {
    box.append(h('p', { class: 'muted' }, `Not saved: ${data.not_saved.join('; ')}`));
  }
  if (data.exit !== 0 || data.timed_out || data.limit_hit) {
    card.setStatus('failed', data.timed_out ? 'Timed out' : 'Failed');
    card.el.classList.add('is-error');
  }
  card.el.nextElementSibling?.classList.contains('code-run-out') && card.el.nextElementSibling.remove();
  if (!files.length) return true;
  const images = files.filter((f) => IMAGE_TYPES.has(f.mime) && isImagePath(f.path));
  const out = h('div', { class: 'code-run-out', dataset: { toolId: card.id || '' } },
    images.map((f) => figure(fetchFile, f)),
    h('ul', { class: 'msg-files code-run-files', 'aria-label': 'Files the code saved' }, files.map((f) => chip(fetchFile, f))));
  card.el.after(out);
  return true;
}
