// Rendering of one exchange: the user's bubble and the assistant's turn (text segments
// interleaved with tool-call cards), both live from SSE events and from stored messages.

import { h, clear, fmtDuration, fmtNumber, icon } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { fileChips } from './attachments.js';
import { imageThumbs, splitImages } from './image_thumbs.js';
import { applyCitations } from './citations.js';
import { TOOL as CODE_TOOL, showCode, showRun } from './code_card.js';
import { showToolImages } from './tool_images.js';

export const FINISH_NOTES = {
  max_iterations: 'The assistant stopped after the maximum number of steps for one turn.',
  budget_exhausted: 'This reply stopped: what is left of your token budget was not enough for another step.',
  tool_failures: 'The turn stopped because a tool kept failing.',
  cancelled: 'Stopped.',
  awaiting_approval: 'Paused: a tool call waits for approval. The answer goes on once it is decided.',
  client_disconnected: 'This answer was interrupted because the page was closed or reloaded while it was being written.',
  upstream_error: 'The model provider failed while answering; this answer is incomplete.',
  error: 'Something went wrong while answering; this answer is incomplete.',
  shutdown: 'The server restarted while answering; this answer is incomplete.',
};

/**
 * The user's message; `files` ({path, bytes}) are the files it attached: images as
 * thumbnails (fetched with `fetchFile`, the workspace by default), the rest as chips.
 */
export function userBubble(text, { pending = false, files = [], fetchFile } = {}) {
  const { images, others } = splitImages(files);
  const article = h('article', { class: `msg msg-user${pending ? ' pending' : ''}`, 'aria-label': 'You said' },
    h('div', { class: 'bubble' }, imageThumbs(images, fetchFile), text ? h('div', { class: 'plain' }, text) : null, fileChips(others)));
  article.attachments = files || []; // what Edit sends again with the text
  return article;
}

function pretty(v) {
  if (v === undefined) return '';
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  try { return JSON.stringify(v, null, 2); } catch { return String(v); }
}

function summarizeArgs(args) {
  let obj = args;
  if (typeof obj === 'string') { try { obj = JSON.parse(obj); } catch { return obj.slice(0, 60); } }
  if (!obj || typeof obj !== 'object') return '';
  const parts = Object.entries(obj).slice(0, 3).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  const s = parts.join(', ');
  return s.length > 60 ? `${s.slice(0, 59)}…` : s;
}

/** The tool's name; an MCP tool (`{server}__{tool}`) shows its server as a badge. */
function toolLabel(name) {
  const at = (name || '').indexOf('__');
  if (at <= 0) return [h('span', { class: 'tool-name' }, name || 'tool')];
  const server = name.slice(0, at);
  return [h('span', { class: 'tool-server pill', title: `From the MCP server ${server}` }, server),
    h('span', { class: 'tool-name' }, name.slice(at + 2))];
}

/** A collapsible card for one tool call. */
export class ToolCard {
  constructor({ id, name, arguments: args }) {
    this.id = id;
    this.name = name;
    this.statusEl = h('span', { class: 'tool-status running' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Running…');
    this.durEl = h('span', { class: 'tool-duration' });
    this.resultBox = h('div', { class: 'tool-result' }, h('p', { class: 'muted' }, 'Waiting for the result…'));
    const argsSummary = summarizeArgs(args);
    this.el = h('details', { class: 'tool-card', dataset: { toolId: id || '', tool: name || '' } },
      h('summary', null,
        h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, icon('tool')),
        ...toolLabel(name),
        argsSummary ? h('span', { class: 'tool-args-summary' }, argsSummary) : null,
        this.statusEl,
        this.durEl),
      h('div', { class: 'tool-body' },
        h('div', { class: 'tool-section-title' }, 'Arguments'),
        h('pre', { class: 'tool-pre', tabindex: '0' }, pretty(args ?? {})),
        this.resultBox));
    if (name === CODE_TOOL) showCode(this, args);
  }

  setStatus(kind, label) {
    this.statusEl.className = `tool-status ${kind}`;
    clear(this.statusEl).append(label);
  }

  setResult({ success, data, error, duration_ms: durationMs }) {
    clear(this.resultBox);
    if (durationMs !== undefined && durationMs !== null) this.durEl.textContent = fmtDuration(durationMs);
    if (success) {
      this.setStatus('ok', 'Done');
      // A share page reaches the run's files through the share (ToolCard.codeFiles).
      if (this.name === CODE_TOOL && showRun(this, data, ToolCard.codeFiles)) return;
      this.resultBox.append(h('div', { class: 'tool-section-title' }, 'Result'),
        h('pre', { class: 'tool-pre', tabindex: '0' }, pretty(data ?? null)));
      // An MCP tool's images, kept as files by the server.
      showToolImages(this, data, ToolCard.codeFiles);
    } else {
      const msg = typeof error === 'string' ? error : pretty(error ?? 'unknown error');
      this.setStatus('failed', 'Error');
      this.el.classList.add('is-error');
      this.resultBox.append(h('div', { class: 'tool-section-title' }, 'Error'),
        h('pre', { class: 'tool-pre tool-error', tabindex: '0' }, msg));
    }
  }

  setNoResult(reason) {
    if (this.statusEl.classList.contains('running')) {
      this.setStatus('skipped', reason || 'No result');
      clear(this.resultBox).append(h('p', { class: 'muted' }, reason || 'This call did not produce a result.'));
    }
  }
}

/** "Answered by claude in place of gpt (upstream error)": a stored answer a fallback gave. */
export function fallbackNote(m) {
  const why = String(m.fallback.reason || 'unavailable').replace(/_/g, ' ');
  return `Answered by ${m.model || 'a fallback model'} in place of ${m.fallback.from} (${why}).`;
}

/** Parses a stored tool message's content into a result envelope. */
export function parseToolContent(content) {
  try {
    const v = JSON.parse(content);
    if (v && typeof v === 'object' && 'success' in v) return v;
    return { success: true, data: v };
  } catch {
    return { success: true, data: content };
  }
}

export class AssistantTurn {
  constructor({ live = false } = {}) {
    this.segments = h('div', { class: 'segments' });
    this.notes = h('div', { class: 'turn-notes' });
    this.meta = h('div', { class: 'turn-meta' });
    this.typing = h('div', { class: 'typing', 'aria-hidden': 'true' }, h('span'), h('span'), h('span'));
    this.typing.hidden = !live;
    this.el = h('article', { class: 'msg msg-assistant', 'aria-label': 'Assistant' },
      h('div', { class: 'avatar bot', 'aria-hidden': 'true' }, 'AI'),
      h('div', { class: 'assistant-body' }, this.segments, this.typing, this.notes, this.meta));
    this.cards = new Map();
    this.textEl = null;
    this.text = '';
    this.renderPending = false;
    this.tokens = { input: 0, output: 0 };
    this.citations = [];
  }

  /** Shows `citations` (stored with the answer) as chips on its markers and a sources list. */
  cite(citations) {
    this.flush();
    this.textEl = null; // nothing redraws the text over the chips
    this.citations = citations;
    applyCitations(this.el, citations);
  }

  addText(t) {
    if (!t) return;
    if (!this.textEl) {
      this.textEl = h('div', { class: 'text-seg' });
      this.segments.append(this.textEl);
      this.text = '';
    }
    this.text += t;
    if (!this.renderPending) {
      this.renderPending = true;
      requestAnimationFrame(() => this.flush());
    }
  }

  flush() {
    this.renderPending = false;
    if (this.textEl) clear(this.textEl).append(renderMarkdown(this.text));
  }

  addToolCall(call) {
    this.flush();
    this.textEl = null; // text after a tool call starts a new segment
    const card = new ToolCard(call);
    this.cards.set(call.id, card);
    this.segments.append(card.el);
    return card;
  }

  addToolResult(res) {
    let card = this.cards.get(res.id);
    if (!card) card = this.addToolCall({ id: res.id, name: res.name, arguments: {} });
    card.setResult(res);
  }

  addUsage(u) {
    this.tokens.input += Number(u.input_tokens || 0);
    this.tokens.output += Number(u.output_tokens || 0);
    this.renderMeta();
  }

  renderMeta(durationMs) {
    const parts = [];
    if (this.tokens.input || this.tokens.output) parts.push(`${fmtNumber(this.tokens.input)} in · ${fmtNumber(this.tokens.output)} out tokens`);
    if (durationMs) parts.push(fmtDuration(durationMs));
    this.meta.textContent = parts.join(' · ');
  }

  note(text, kind = 'info') {
    this.notes.append(h('div', { class: `turn-note note-${kind}`, role: kind === 'error' ? 'alert' : null }, text));
  }

  finish(reason, extra) {
    this.finishReason = reason;
    this.flush();
    this.typing.hidden = true;
    for (const card of this.cards.values()) card.setNoResult(reason === 'cancelled' ? 'Stopped' : 'No result');
    if (reason && reason !== 'stop') {
      let text = FINISH_NOTES[reason] || `The turn ended: ${reason}.`;
      if (extra) text += ` ${extra}`;
      this.note(text, reason === 'cancelled' ? 'info' : 'warn');
    }
    if (!this.segments.childNodes.length && !this.notes.childNodes.length) {
      this.segments.append(h('p', { class: 'muted' }, '(no answer)'));
    }
  }
}

/** Builds DOM for stored messages. Returns the elements in order. */
export function renderStored(messages) {
  const out = [];
  let turn = null;
  let lastAssistantDuration = 0;
  let citations = [];
  const closeTurn = () => {
    if (turn) {
      turn.flush();
      turn.typing.hidden = true;
      for (const card of turn.cards.values()) card.setNoResult('No result');
      turn.renderMeta(lastAssistantDuration);
      if (citations.length) turn.cite(citations);
    }
    turn = null;
    lastAssistantDuration = 0;
    citations = [];
  };
  for (const m of messages) {
    if (m.role === 'user') {
      closeTurn();
      const bubble = userBubble(m.content, { files: m.attachments || [] });
      bubble.dataset.messageId = m.id; // what Edit and Regenerate go back to
      out.push(bubble);
      continue;
    }
    if (!turn) {
      turn = new AssistantTurn();
      out.push(turn.el);
    }
    if (m.role === 'assistant') {
      turn.el.dataset.messageId = m.id; // the turn's last answer: where a copy continues from
      if (m.content) { turn.textEl = null; turn.addText(m.content); turn.flush(); turn.textEl = null; }
      for (const c of m.tool_calls || []) turn.addToolCall(c);
      if (m.input_tokens || m.output_tokens) turn.addUsage(m);
      if (m.duration_ms) lastAssistantDuration += Number(m.duration_ms);
      if (Array.isArray(m.citations)) citations.push(...m.citations);
      if (m.fallback) turn.note(fallbackNote(m), 'info');
      if (m.status === 'incomplete') {
        const reason = m.status_reason || 'incomplete';
        turn.note(FINISH_NOTES[reason] || `This answer is incomplete (${reason.replace(/_/g, ' ')}).`, reason === 'cancelled' ? 'info' : 'warn');
      }
    } else if (m.role === 'tool') {
      const env = parseToolContent(m.content);
      const card = turn.cards.get(m.tool_call_id) || turn.addToolCall({ id: m.tool_call_id, name: m.name || 'tool', arguments: {} });
      card.setResult({ ...env, duration_ms: m.duration_ms });
    }
  }
  closeTurn();
  return out;
}
