// Approval cards: a tool call that waits for a person's decision, shown in the chat under
// its tool card (live from `approval_required`, or after a reload from the pending list),
// with the arguments exactly as they will run and Approve / Deny with a note. Deciding the
// step's last call streams the turn as it goes on.

import { h, clear, fmtDate, toast } from './dom.js';
import * as api from './api.js';
import { AssistantTurn, FINISH_NOTES } from './turn.js';
import { citeFinishedTurn } from './citations.js';

function pretty(v) {
  try { return JSON.stringify(v, null, 2); } catch { return String(v); }
}

/** Decides approval `id`; streams the resumed turn into `onEvent` when there is one. */
export async function decide(id, decision, note, onEvent) {
  const body = { decision };
  if (note) body.note = note;
  const resp = await api.api('POST', `/api/approvals/${encodeURIComponent(id)}`, body,
    { accept: 'text/event-stream', response: true });
  if ((resp.headers.get('Content-Type') || '').includes('text/event-stream')) {
    await api.readSse(resp, onEvent);
    return { resumed: true, streamed: true };
  }
  return resp.json();
}

/**
 * One card. `approval`: `{approval_id|id, tool_call_id, name|tool, server, arguments,
 * approver, expires_at}`; `me`: the signed-in user (admins may decide admin approvals);
 * `log`: where a resumed turn is shown.
 */
export class ApprovalCard {
  constructor(approval, { me, log, onResumed } = {}) {
    this.id = approval.approval_id || approval.id;
    this.approval = approval;
    this.log = log;
    this.me = me;
    this.onResumed = onResumed;
    const name = approval.name || approval.tool;
    const mayDecide = approval.approver === 'user' || me?.role === 'admin';
    this.note = h('input', { type: 'text', class: 'approval-note', maxlength: '1000', placeholder: 'Note (optional, shown to the assistant when denied)', 'aria-label': `Note for ${name}` });
    this.approveBtn = h('button', { type: 'button', class: 'btn btn-primary', 'data-decision': 'approve' }, 'Approve');
    this.denyBtn = h('button', { type: 'button', class: 'btn btn-danger', 'data-decision': 'deny' }, 'Deny');
    this.status = h('p', { class: 'approval-status muted', role: 'status' });
    this.actions = h('div', { class: 'approval-actions' }, this.note, this.approveBtn, this.denyBtn);
    const who = approval.approver === 'admin' ? 'an admin' : 'you';
    this.el = h('section', { class: 'approval-card', 'aria-label': `Approval for ${name}`, dataset: { approvalId: this.id, toolCallId: approval.tool_call_id || '' } },
      h('header', { class: 'approval-head' },
        h('strong', null, 'Approval needed'),
        h('span', { class: 'pill' }, `Tool: ${name}`),
        approval.server ? h('span', { class: 'pill', title: 'MCP server' }, `Server: ${approval.server}`) : null,
        h('span', { class: 'muted small' }, `decided by ${who}`, approval.expires_at ? ` · expires ${fmtDate(approval.expires_at)}` : '')),
      h('div', { class: 'tool-section-title' }, 'Arguments as they will run'),
      h('pre', { class: 'tool-pre approval-args', tabindex: '0' }, pretty(approval.arguments ?? {})),
      mayDecide ? this.actions : (this.waiting = h('p', { class: 'muted approval-waiting' }, 'Waiting for an admin to approve or deny this call.')),
      this.status);
    this.el.approvalCard = this; // approval_follow.js settles it when decided elsewhere
    this.approveBtn.addEventListener('click', () => this.submit('approve'));
    this.denyBtn.addEventListener('click', () => this.submit('deny'));
  }

  settled(text) {
    this.actions.remove();
    this.waiting?.remove();
    this.el.classList.add('is-decided');
    this.status.textContent = text;
    settleToolCard(this.el, text);
  }

  async submit(decision) {
    this.el.classList.add('is-deciding'); // decided here: approval_follow.js leaves it be
    this.approveBtn.disabled = true;
    this.denyBtn.disabled = true;
    this.status.textContent = decision === 'approve' ? 'Approving…' : 'Denying…';
    let turn = null;
    try {
      const out = await decide(this.id, decision, this.note.value.trim(), (ev) => {
        if (!turn) {
          turn = new AssistantTurn({ live: true });
          this.log?.append(turn.el);
        }
        feed(turn, ev, { log: this.log, me: this.me });
      });
      this.settled(decision === 'approve' ? 'Approved.' : 'Denied.');
      // The resumed answer's citations are stored when it is done (the open chat's).
      const open = /^\/c\/([^/]+)$/.exec(location.pathname);
      if (turn && out.streamed && open) citeFinishedTurn(decodeURIComponent(open[1]), null, turn);
      if (!out.streamed && !out.resumed) this.status.textContent += ' Other calls of this step still wait for a decision.';
      if (out.resumed && !out.streamed) this.status.textContent += ' The answer goes on in the background; reload to see it.';
      this.onResumed?.();
    } catch (err) {
      if (err.status === 409) {
        this.settled(err.code === 'approval_expired' ? 'This call expired before it was decided.' : 'This call was already decided.');
        return;
      }
      this.el.classList.remove('is-deciding');
      this.approveBtn.disabled = false;
      this.denyBtn.disabled = false;
      this.status.textContent = '';
      toast(`The decision was not recorded: ${err.message}`, 'error');
    }
  }
}

/** The tool card above a decided approval card, and its answer's pause note, no longer say it waits. */
function settleToolCard(cardEl, text) {
  const answer = cardEl.closest('.msg-assistant');
  const paused = [...(answer?.querySelectorAll('.turn-note') || [])].find((n) => n.textContent === FINISH_NOTES.awaiting_approval);
  if (paused && !answer.querySelector('.approval-card:not(.is-decided)')) {
    paused.textContent = 'A tool call waited for approval here; once decided, the answer went on below.';
    paused.className = 'turn-note note-info';
  }
  const id = cardEl.dataset.toolCallId;
  const scope = cardEl.closest('.messages') || document;
  const tool = [...scope.querySelectorAll('.tool-card')].find((el) => id && el.dataset.toolId === id);
  const status = tool?.querySelector('.tool-status.waiting');
  if (!status) return;
  const denied = /^Denied|expired/.test(text);
  status.className = `tool-status ${denied ? 'skipped' : 'ok'}`;
  clear(status).append(denied ? (text.startsWith('Denied') ? 'Denied' : 'Expired') : 'Approved');
}

/** Applies one turn event to `turn` (the events a resumed turn streams). */
export function feed(turn, ev, ctx) {
  switch (ev.type) {
    case 'text_delta': turn.addText(ev.text); break;
    case 'tool_call': turn.addToolCall(ev); break;
    case 'tool_result': turn.addToolResult(ev); break;
    case 'usage': turn.addUsage(ev); break;
    case 'approval_required': showApproval(turn, ev, ctx); break;
    case 'done': turn.finish(ev.finish_reason); break;
    case 'error': turn.note(ev.message || 'Something went wrong.', 'error'); turn.finish(null); break;
    default: break;
  }
}

/** Puts an approval card under its tool card in a live turn. */
export function showApproval(turn, ev, { me, log } = {}) {
  const card = turn.cards.get(ev.tool_call_id) || turn.addToolCall({ id: ev.tool_call_id, name: ev.name, arguments: ev.arguments });
  card.setStatus('waiting', 'Waiting for approval');
  card.el.after(new ApprovalCard(ev, { me, log }).el);
}

/** After a reload: cards for the conversation's pending approvals, under their tool cards. */
export async function showPending(log, conversationId, me) {
  let page;
  try {
    page = await api.get(`/api/approvals?state=pending&conversation=${encodeURIComponent(conversationId)}`);
  } catch {
    return 0;
  }
  const items = page.items || [];
  for (const a of items.reverse()) {
    if ([...log.querySelectorAll('.approval-card')].some((el) => el.dataset.approvalId === a.id)) continue; // shown live
    const toolCard = [...log.querySelectorAll('.tool-card')].find((el) => el.dataset.toolId === a.tool_call_id);
    const card = new ApprovalCard(a, { me, log });
    if (toolCard) {
      const status = toolCard.querySelector('.tool-status');
      if (status) { status.className = 'tool-status waiting'; clear(status).append('Waiting for approval'); }
      toolCard.after(card.el);
    } else {
      log.append(card.el);
    }
  }
  return items.length;
}
