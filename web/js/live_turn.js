// A live turn in the chat: its events drawn as they come, a dropped stream re-attached with
// the last event id, Stop (also before `turn_start`), and the approval card for a call that
// waits for a decision.

import * as api from './api.js';
import { showApproval } from './approval_card.js';
import { citeFinishedTurn } from './citations.js';
import { watchDecisions } from './approval_follow.js';

/**
 * Shows a live turn in `view` (the ChatView): `first` opens its stream; if that drops before the turn's `done` or
 * `error`, it is re-attached with the last event id seen (nothing repeated, nothing lost).
 * Rejects (ApiError) only when the first request is refused before anything streamed.
 * `bubble`: the question just sent, which gets its message id at `turn_start`.
 */
export async function runTurn(view, convId, turn, turnId, first, bubble = null) {
  const controller = new AbortController();
  view.streaming = { convId, controller, turn };
  view.setBusy(true);
  let lastId = null;
  let finished = false;
  let done = false; // ended with `done`: its citations (if any) are stored by now
  const started = performance.now();
  let pausedAt = null; // the last event before a pause for approval: where the turn goes on
  const onEvent = (ev, id) => {
    if (id) lastId = id;
    if (id && id !== 'end') pausedAt = id;
    switch (ev.type) {
      case 'turn_start':
        turnId = ev.message_id;
        if (bubble) bubble.dataset.messageId = ev.message_id;
        if (view.streaming?.controller === controller) {
          view.streaming.started = true;
          if (view.streaming.stopOnStart) view.stop();
        }
        break;
      case 'text_delta': turn.addText(ev.text); break;
      case 'tool_call': turn.addToolCall(ev); break;
      case 'tool_result': turn.addToolResult(ev); break;
      case 'usage': turn.addUsage(ev); break;
      case 'approval_required': showApproval(turn, ev, { me: view.appState.me, log: view.log }); break;
      case 'done': {
        finished = true;
        if (ev.message_id) turn.el.dataset.messageId = ev.message_id;
        done = true;
        let extra = '';
        if (ev.finish_reason === 'budget_exhausted') extra = view.resetsText();
        turn.finish(ev.finish_reason, extra);
        break;
      }
      case 'error': {
        finished = true;
        turn.note(errorText(ev.code, ev.message), 'error');
        turn.finish(null);
        break;
      }
      default: break;
    }
    view.scrollToEnd();
  };
  try {
    let failures = 0;
    for (let attempt = 0; ; attempt += 1) {
      const before = lastId;
      try {
        if (attempt === 0) await first(onEvent, controller.signal);
        else await api.followTurn(convId, turnId, lastId, onEvent, controller.signal);
      } catch (err) {
        if (err.name === 'AbortError') throw err;
        if (attempt === 0 && lastId === null && err instanceof api.ApiError) throw err;
        if (err instanceof api.ApiError && err.status < 500) break;
      }
      if (finished || !turnId) break;
      failures = lastId === before ? failures + 1 : 0;
      if (failures > 6) break;
      await pause(Math.min(250 * 2 ** failures, 4000), controller.signal);
    }
    if (!finished) {
      turn.finish(null);
      turn.note('The connection closed before the answer finished. Reload the chat to see what was stored.', 'warn');
    }
    turn.renderMeta(Math.round(performance.now() - started));
    if (done && turnId) citeFinishedTurn(convId, turnId, turn);
    if (turn.finishReason === 'awaiting_approval' && view.current?.id === convId) watchDecisions(view, pausedAt);
  } catch (err) {
    if (err.name !== 'AbortError') throw err;
    turn.finish('cancelled');
  } finally {
    if (view.streaming && view.streaming.controller === controller) view.streaming = null;
    view.setBusy(false);
    if (view.current && view.current.id === convId) view.decorate();
  }
}

/** Waits `ms`, or rejects with an AbortError when `signal` aborts. */
function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new DOMException('aborted', 'AbortError'));
    }, { once: true });
  });
}

function errorText(code, message) {
  const friendly = {
    upstream_error: 'The model provider returned an error',
    upstream_rate_limited: 'The model provider is rate limiting requests; try again in a moment',
    upstream_timeout: 'The model provider took too long to answer',
    upstream_unreachable: 'The model provider could not be reached',
    upstream_malformed: 'The model provider sent a reply that could not be understood',
    upstream_incomplete: 'The model provider stopped in the middle of its reply',
    upstream_misconfigured: 'The model provider is not configured correctly; tell an admin',
    unavailable: 'The service is temporarily unavailable',
    budget_exhausted: 'Your token budget is not enough for this reply',
  };
  const head = friendly[code] || 'Something went wrong';
  // The server's budget message carries a UTC time; the top bar has the local one.
  if (code === 'budget_exhausted') return `${head}. See what is left at the top.`;
  return message ? `${head}. (${message})` : `${head}.`;
}
