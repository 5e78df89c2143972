// Citations in an answer: the server stores, with an assistant message, the passages its
// `[K123]` markers stand for (`citations`: {n, marker, collection_id, file_id, file,
// byte_start, byte_end, quote?}). Each marker with a citation becomes a small numbered button, the
// sources are listed under the answer ("1 · refunds.md"), and both open the passage viewer.
// A live answer has none while it streams: they are fetched once its turn is done.

import { h } from './dom.js';
import * as api from './api.js';
import { openPassage } from './passage_dialog.js';
import { isWebCitation, webChip, webSourceItem } from './web_sources.js';

// `[K12]` (knowledge) or `[W12]` (web), or several in one pair of brackets: `[K7, W12]`,
// `[K7; K12]`, `[K7 K12]`.
const MARKER = /\[\s*([KW]\d{1,18}(?:\s*[,; ]\s*[KW]\d{1,18})*)\s*\]/g;

/** Whether `text` holds anything that looks like a citation marker. */
export function hasMarkers(text) {
  MARKER.lastIndex = 0;
  return MARKER.test(String(text || ''));
}

function chip(c) {
  if (isWebCitation(c)) return webChip(c);
  const title = c.quote ? `${c.file}: ${c.quote}` : c.file;
  const b = h('button', { type: 'button', class: 'cite-chip', title, 'aria-label': `Source ${c.n}: ${c.file}`, dataset: { n: String(c.n) } }, String(c.n));
  b.addEventListener('click', () => openPassage(c, b));
  return h('sup', { class: 'cite' }, b);
}

/** Replaces the markers in the text nodes under `root` (not in code or links) with chips. */
function chipMarkers(root, byMarker) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest('code, pre, a, .cite') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (hasMarkers(n.data)) nodes.push(n);
  for (const node of nodes) {
    const parts = [];
    let last = 0;
    const text = node.data;
    MARKER.lastIndex = 0;
    for (let m = MARKER.exec(text); m; m = MARKER.exec(text)) {
      const names = m[1].split(/[\s,;]+/).filter(Boolean);
      const known = names.map((k) => byMarker.get(k)).filter(Boolean);
      if (!known.length) continue;
      // The chip hugs the word it follows ("30 days¹", not "30 days ¹").
      if (m.index > last) parts.push(text.slice(last, m.index).replace(/[ \t]+$/, ''));
      const unknown = names.filter((k) => !byMarker.has(k));
      parts.push(...known.map(chip));
      if (unknown.length) parts.push(`[${unknown.join(', ')}]`);
      last = m.index + m[0].length;
    }
    if (!parts.length) continue;
    if (last < text.length) parts.push(text.slice(last));
    node.replaceWith(...parts);
  }
}

/** The list of sources under an answer, one per citation number. */
function sourcesList(citations) {
  const seen = new Map();
  for (const c of citations) if (!seen.has(c.n)) seen.set(c.n, c);
  const items = [...seen.values()].sort((a, b) => a.n - b.n);
  const title = h('p', { class: 'cite-sources-title' }, 'Sources');
  return h('div', { class: 'cite-sources' }, title,
    h('ol', { class: 'cite-source-list', 'aria-label': 'Sources' }, items.map((c) => {
      if (isWebCitation(c)) return webSourceItem(c);
      const b = h('button', { type: 'button', class: 'cite-source', 'aria-label': `Open source ${c.n}: ${c.file}`, dataset: { n: String(c.n) } },
        h('span', { class: 'cite-n' }, String(c.n)), ' · ', h('span', { class: 'cite-file' }, c.file));
      b.addEventListener('click', () => openPassage(c, b));
      return h('li', null, b);
    })));
}

/** Shows `citations` on the answer `turnEl` (an `.msg-assistant`); calling it again redraws. */
export function applyCitations(turnEl, citations) {
  const valid = (citations || []).filter((c) => isWebCitation(c) || (c && c.marker && c.n != null && c.file_id && c.collection_id));
  if (!valid.length) return;
  const byMarker = new Map(valid.map((c) => [c.marker, c]));
  const segments = turnEl.querySelector('.segments');
  for (const seg of segments.querySelectorAll('.text-seg')) chipMarkers(seg, byMarker);
  turnEl.querySelector('.cite-sources')?.remove();
  segments.after(sourcesList(valid));
}

/** The citations of the answer to question `questionId` among a conversation's messages. */
export function citationsOf(messages, questionId) {
  let at = messages.findIndex((m) => m.id === questionId);
  if (at < 0) at = messages.map((m) => m.role).lastIndexOf('user');
  const out = [];
  for (const m of messages.slice(at + 1)) {
    if (m.role === 'user') break;
    if (m.role === 'assistant' && Array.isArray(m.citations)) out.push(...m.citations);
  }
  return out;
}

/**
 * After a live turn's `done`: when its text has markers, fetches the conversation and shows
 * the citations stored with the answer to `questionId` (asks once more, shortly, if none are
 * there yet).
 */
export async function citeFinishedTurn(convId, questionId, turn) {
  if (!hasMarkers(turn.segments.textContent)) return;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    if (attempt) await new Promise((r) => setTimeout(r, 700));
    let conv;
    try {
      conv = await api.get(`/api/conversations/${encodeURIComponent(convId)}`);
    } catch {
      return;
    }
    const found = citationsOf(conv.messages || [], questionId);
    if (found.length) { turn.cite(found); return; }
  }
}
