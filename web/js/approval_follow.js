// An approval decided elsewhere (an admin in the console, the user in another tab or through
// the API) reaches the open chat: while a card waits, the chat asks now and then how its call
// stands; once decided, the card says by whom, and the turn that went on is followed live
// (from the last event the chat had, so nothing is drawn twice).

import * as api from './api.js';
import { AssistantTurn } from './turn.js';
import { feed, showPending } from './approval_card.js';

/** How often a waiting card's call is looked at. */
const POLL_MS = 1500;
/** How long a decided turn may take to be picked up and go on before the chat reloads it. */
const RESUME_TRIES = 20;

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });

/** The words a card shows for approval `a` once it is no longer pending. */
export function decisionText(a) {
  const by = a.decided_by ? ` by ${a.decided_by}` : '';
  switch (a.state) {
    case 'approved': return `Approved${by}.`;
    case 'denied': return `Denied${by}${a.note ? `: ${a.note}` : ''}.`;
    case 'expired': return 'This call expired before it was decided.';
    default: return '';
  }
}

/**
 * Watches the waiting cards of `view`'s open chat (the ChatView) until none waits; one
 * watcher per chat. `resumeFrom`: the last event id the chat had of the paused turn (null
 * after a reload, when the chat is drawn again once the turn went on).
 */
export function watchDecisions(view, resumeFrom = null) {
  const convId = view.current?.id;
  if (!convId) return;
  const w = view.decisionWatch;
  if (w && w.convId === convId) {
    if (resumeFrom) w.resumeFrom = resumeFrom;
    return;
  }
  const watch = { convId, resumeFrom, turnId: null };
  view.decisionWatch = watch;
  run(view, watch).finally(() => { if (view.decisionWatch === watch) view.decisionWatch = null; });
}

const stillOpen = (view, watch) => view.attached && view.decisionWatch === watch && view.current?.id === watch.convId;

function waitingCards(view) {
  return [...view.log.querySelectorAll('.approval-card:not(.is-decided):not(.is-deciding)')].map((el) => el.approvalCard).filter(Boolean);
}

async function run(view, watch) {
  for (;;) {
    await sleep(POLL_MS);
    if (!stillOpen(view, watch)) return;
    const cards = waitingCards(view);
    if (!cards.length) return;
    if (view.streaming) continue; // this chat's own stream shows what happens
    let items;
    try {
      items = (await api.get(`/api/approvals?conversation=${encodeURIComponent(watch.convId)}&limit=200`)).items || [];
    } catch {
      continue;
    }
    if (!stillOpen(view, watch)) return;
    const byId = new Map(items.map((a) => [a.id, a]));
    let decided = 0;
    for (const card of cards) {
      const a = byId.get(card.id);
      if (a && a.state !== 'pending') {
        card.settled(decisionText(a));
        watch.turnId = a.turn_id;
        decided += 1;
      }
    }
    if (decided && !waitingCards(view).length) {
      const again = await followResumed(view, watch);
      // The turn went on and paused for another call: its new card is watched in turn.
      if (again && stillOpen(view, watch)) {
        view.decisionWatch = null;
        watchDecisions(view, watch.resumeFrom);
      }
      return;
    }
  }
}

/**
 * Follows the turn the decisions let go on, into a new answer under the paused one; true
 * when it paused again for another call.
 */
async function followResumed(view, watch) {
  const { convId, turnId } = watch;
  if (!watch.resumeFrom || !turnId) {
    await redraw(view, watch);
    return false;
  }
  const turn = new AssistantTurn({ live: true });
  let paused = false;
  let shown = false;
  let asked = false; // the resumed turn asked for another decision
  for (let i = 0; i < RESUME_TRIES && stillOpen(view, watch); i += 1) {
    paused = false;
    try {
      await api.followTurn(convId, turnId, watch.resumeFrom, (ev, id) => {
        if (ev.type === 'approval_required') asked = true;
        // Not picked up yet, nothing new came and the turn still reads as paused; after
        // new events the turn went on and paused again for another call.
        if (ev.type === 'done' && ev.finish_reason === 'awaiting_approval') {
          if (!shown) { paused = true; return; }
          asked = true;
        }
        if (id && id !== 'end') watch.resumeFrom = id;
        if (!shown) { shown = true; view.log.append(turn.el); }
        feed(turn, ev, { log: view.log, me: view.appState.me });
        view.scrollToEnd();
      });
    } catch (err) {
      if (err.status === 401) return;
      paused = true;
    }
    if (!paused) break;
    await sleep(500);
  }
  if (!shown) {
    await redraw(view, watch);
    return false;
  }
  view.refreshMe();
  view.decorate();
  // Its new calls' cards, when the stream did not carry them (read back from the database).
  if (asked) await showPending(view.log, convId, view.appState.me);
  return asked;
}

/** Draws the chat again from the server (it follows a turn still running). */
async function redraw(view, watch) {
  if (!stillOpen(view, watch) || view.streaming) return;
  try {
    const conv = await api.get(`/api/conversations/${encodeURIComponent(watch.convId)}`);
    if (!stillOpen(view, watch) || view.streaming) return;
    view.current = conv;
    view.renderConversation(conv);
  } catch {
    // The chat stays as it is; a reload shows it.
  }
}
