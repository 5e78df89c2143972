// A small, safe Markdown renderer. It builds DOM nodes with createElement/textContent only:
// raw HTML in the source stays visible text, links are limited to http(s)/mailto and open in
// a new tab with rel="noopener noreferrer", images are never loaded (shown as links instead).

import { h } from './dom.js';

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/** Returns a normalised href when the URL is absolute http(s)/mailto, else null. */
export function safeHref(raw) {
  if (typeof raw !== 'string') return null;
  const s = raw.trim().replace(/^<|>$/g, '');
  // Control characters and whitespace inside a scheme are a classic bypass: refuse them.
  if (/[\u0000-\u001f\u007f\s]/.test(s)) return null;
  let url;
  try { url = new URL(s); } catch { return null; }
  if (!SAFE_PROTOCOLS.has(url.protocol)) return null;
  return url.href;
}

function link(href, children) {
  const safe = safeHref(href);
  if (!safe) return h('span', { class: 'md-badlink', title: 'Link removed (unsupported address)' }, children);
  return h('a', { href: safe, target: '_blank', rel: 'noopener noreferrer nofollow' }, children);
}

// ---------- inline ----------

const INLINE_RULES = [
  { name: 'code', re: /(`+)([\s\S]+?)\1(?!`)/ },
  { name: 'image', re: /!\[([^\]\n]*)\]\(\s*((?:[^()\s]|\([^()\s]*\))+)(?:\s+"[^"\n]*")?\s*\)/ },
  { name: 'link', re: /\[([^\]\n]+)\]\(\s*((?:[^()\s]|\([^()\s]*\))+)(?:\s+"[^"\n]*")?\s*\)/ },
  { name: 'autolink', re: /<((?:https?:\/\/|mailto:)[^>\s]+)>/ },
  { name: 'url', re: /\bhttps?:\/\/[^\s<>"'`]*[^\s<>"'`.,:;!?)\]}]/ },
  { name: 'strong', re: /\*\*(?=\S)([\s\S]*?\S)\*\*|(?<![\w])__(?=\S)([\s\S]*?\S)__(?![\w])/ },
  { name: 'strike', re: /~~(?=\S)([\s\S]*?\S)~~/ },
  { name: 'em', re: /\*(?=[^\s*])([^*]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_]*?[^\s_])_(?![\w])/ },
  { name: 'br', re: /\n/ },
];

export function renderInline(text, depth = 0) {
  const out = [];
  let rest = text;
  while (rest.length) {
    let best = null;
    for (const rule of INLINE_RULES) {
      const m = rule.re.exec(rest);
      if (m && (best === null || m.index < best.m.index)) best = { rule, m };
    }
    if (!best) { out.push(rest); break; }
    const { rule, m } = best;
    if (m.index > 0) out.push(rest.slice(0, m.index));
    rest = rest.slice(m.index + m[0].length);
    const inner = (s) => (depth > 8 ? [s] : renderInline(s, depth + 1));
    switch (rule.name) {
      case 'code': out.push(h('code', null, m[2].trim() || m[2])); break;
      case 'image': {
        // Never load images from model output; offer the address as a link instead.
        const label = `Image: ${m[1] || 'untitled'}`;
        out.push(link(m[2], [label]));
        break;
      }
      case 'link': out.push(link(m[2], inner(m[1]))); break;
      case 'autolink': out.push(link(m[1], [m[1]])); break;
      case 'url': out.push(link(m[0], [m[0]])); break;
      case 'strong': out.push(h('strong', null, inner(m[1] ?? m[2]))); break;
      case 'strike': out.push(h('del', null, inner(m[1]))); break;
      case 'em': out.push(h('em', null, inner(m[1] ?? m[2]))); break;
      case 'br': out.push(h('br')); break;
      default: out.push(m[0]);
    }
  }
  return out;
}

// ---------- blocks ----------

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^\n]*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const HR = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  let inCode = false;
  for (let i = 0; i < s.length; i += 1) {
    const c = s[i];
    if (c === '\\' && s[i + 1] === '|') { cur += '|'; i += 1; continue; }
    if (c === '`') inCode = !inCode;
    if (c === '|' && !inCode) { cells.push(cur.trim()); cur = ''; continue; }
    cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

export function codeBlock(code, lang) {
  const codeEl = h('code', { class: lang ? `language-${lang}` : null }, code);
  const btn = h('button', { type: 'button', class: 'btn btn-small copy-btn', 'aria-label': 'Copy code' }, 'Copy');
  btn.addEventListener('click', async () => {
    let ok = false;
    try {
      await navigator.clipboard.writeText(code);
      ok = true;
    } catch {
      const range = document.createRange();
      range.selectNodeContents(codeEl);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      try { ok = document.execCommand('copy'); } catch { ok = false; }
      sel.removeAllRanges();
    }
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { btn.textContent = 'Copy'; }, 1500);
  });
  return h('div', { class: 'codeblock' },
    h('div', { class: 'codebar' }, h('span', { class: 'codelang' }, lang || 'text'), btn),
    h('pre', { tabindex: '0' }, codeEl));
}

function isBlockStart(line, next) {
  return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line)
    || LIST_ITEM.test(line) || (line.includes('|') && next !== undefined && TABLE_SEP.test(next) && next.includes('-'));
}

function parseList(lines, start) {
  const first = LIST_ITEM.exec(lines[start]);
  const baseIndent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  let i = start;
  while (i < lines.length) {
    const line = lines[i];
    const m = LIST_ITEM.exec(line);
    if (m && m[1].length === baseIndent && /\d/.test(m[2]) === ordered) {
      items.push({ lines: [m[3]], start: ordered ? parseInt(m[2], 10) : null });
      i += 1;
      continue;
    }
    if (!items.length) break;
    if (line.trim() === '') {
      // A blank line ends the list unless the next line continues it.
      const next = lines[i + 1];
      const nm = next !== undefined ? LIST_ITEM.exec(next) : null;
      if (next !== undefined && ((nm && nm[1].length >= baseIndent) || /^\s{2,}\S/.test(next))) {
        items[items.length - 1].lines.push('');
        i += 1;
        continue;
      }
      break;
    }
    const indent = line.match(/^\s*/)[0].length;
    if (indent > baseIndent) { items[items.length - 1].lines.push(line.slice(Math.min(indent, baseIndent + 4))); i += 1; continue; }
    if (m) break; // a different list type at the same level
    // lazy continuation of the item's paragraph
    if (!isBlockStart(line, lines[i + 1])) { items[items.length - 1].lines.push(line.trim()); i += 1; continue; }
    break;
  }
  const list = h(ordered ? 'ol' : 'ul');
  if (ordered && items[0] && items[0].start !== 1) list.setAttribute('start', String(items[0].start));
  for (const item of items) {
    const li = h('li');
    const text = item.lines.join('\n');
    const hasBlocks = item.lines.some((l, idx) => idx > 0 && isBlockStart(l, item.lines[idx + 1]));
    if (hasBlocks) {
      const nodes = renderBlocks(text.split('\n'));
      // unwrap a leading paragraph for tight lists
      if (nodes[0] && nodes[0].tagName === 'P') li.append(...nodes.shift().childNodes);
      for (const n of nodes) li.append(n);
    } else {
      li.append(...renderInline(text));
    }
    list.append(li);
  }
  return { node: list, next: i };
}

function renderBlocks(lines, depth = 0) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') { i += 1; continue; }

    let m = FENCE.exec(line);
    if (m) {
      const fence = m[1];
      const lang = m[2];
      const body = [];
      i += 1;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) && lines[i].trim().replace(new RegExp(`^\\${fence[0]}+`), '').trim() === '')) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1; // closing fence (or end of text while streaming)
      out.push(codeBlock(body.join('\n'), lang));
      continue;
    }
    m = HEADING.exec(line);
    if (m) {
      const level = Math.min(6, m[1].length + 2); // keep headings below the page's h1/h2
      out.push(h(`h${level}`, { class: 'md-h' }, renderInline(m[2])));
      i += 1;
      continue;
    }
    if (HR.test(line)) { out.push(h('hr')); i += 1; continue; }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) { body.push(QUOTE.exec(lines[i])[1]); i += 1; }
      out.push(h('blockquote', null, depth > 6 ? body.join('\n') : renderBlocks(body, depth + 1)));
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const { node, next } = parseList(lines, i);
      out.push(node);
      i = next;
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const header = splitRow(line);
      const aligns = splitRow(lines[i + 1]).map((c) => {
        const l = c.startsWith(':');
        const r = c.endsWith(':');
        if (l && r) return 'center';
        if (r) return 'right';
        return null;
      });
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].includes('|') && lines[i].trim() !== '') { rows.push(splitRow(lines[i])); i += 1; }
      const cell = (tag, text, idx) => h(tag, { class: aligns[idx] ? `align-${aligns[idx]}` : null }, renderInline(text));
      out.push(h('div', { class: 'table-wrap', tabindex: '0' },
        h('table', null,
          h('thead', null, h('tr', null, header.map((c, idx) => cell('th', c, idx)))),
          h('tbody', null, rows.map((r) => h('tr', null, header.map((_, idx) => cell('td', r[idx] ?? '', idx))))))));
      continue;
    }
    // paragraph
    const para = [line];
    i += 1;
    while (i < lines.length && lines[i].trim() !== '' && !isBlockStart(lines[i], lines[i + 1])) { para.push(lines[i]); i += 1; }
    out.push(h('p', null, renderInline(para.join('\n'))));
  }
  return out;
}

/** Renders markdown text into a fresh container element. */
export function renderMarkdown(text) {
  const root = h('div', { class: 'md' });
  const lines = String(text ?? '').replace(/\r\n?/g, '\n').split('\n');
  root.append(...renderBlocks(lines));
  return root;
}
