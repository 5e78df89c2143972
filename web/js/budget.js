// The one place the browser words the token budget: the top bar and the chat banner both
// read it from here, from the same `budget` of `GET /api/me` (refreshed after every turn
// and every refusal), so they cannot disagree. "Used up" is said only when nothing is left;
// times are shown in the browser's time zone.

import { fmtNumber, fmtDate } from './dom.js';

const plural = (n, word) => `${fmtNumber(n)} ${word}${Number(n) === 1 ? '' : 's'}`;

/** Tokens free now: the limit less what was spent and what running replies hold. */
export function budgetLeft(b) {
  if (!b || b.limit === null || b.limit === undefined) return null;
  return Math.max(0, Number(b.limit) - Number(b.used || 0) - Number(b.reserved || 0));
}

/** " until 3 Dec 2026, 00:00" in the user's time zone, or "" for a budget that never resets. */
export function untilText(resetsAt) {
  return resetsAt ? ` until ${fmtDate(resetsAt)}` : '';
}

/** The top bar: short text, fill ratio (null when unlimited) and a full sentence. */
export function budgetInfo(b) {
  if (!b) return null;
  const left = budgetLeft(b);
  if (left === null) {
    return { text: 'Unlimited budget', ratio: null, title: 'No token limit applies to your account.', left: null };
  }
  const period = b.period && b.period !== 'total' ? ` this ${b.period}` : '';
  const resets = b.resets_at ? ` It resets on ${fmtDate(b.resets_at)}.` : ' Ask an admin to raise it.';
  const text = left === 0 ? 'Budget used up' : `${plural(left, 'token')} left`;
  return {
    text,
    ratio: b.limit > 0 ? left / b.limit : 0,
    title: left === 0
      ? `Your ${fmtNumber(b.limit)}-token budget${period} is used up.${resets}`
      : `${fmtNumber(left)} of ${fmtNumber(b.limit)} tokens left${period}.${b.resets_at ? ` It resets on ${fmtDate(b.resets_at)}.` : ''}`,
    left,
  };
}

/**
 * The banner for a message refused by the budget (429 `budget_exhausted`): with the
 * server's numbers (`details`: needed, remaining, resets_at), or the profile's budget.
 */
export function refusalText(details, b) {
  const remaining = details?.remaining ?? budgetLeft(b);
  const resetsAt = details?.resets_at ?? b?.resets_at ?? null;
  const until = untilText(resetsAt);
  const after = resetsAt ? '' : ' Ask an admin to raise it.';
  if (remaining === null || remaining === undefined || Number(remaining) <= 0) {
    return `Your token budget is used up${until}.${after}`;
  }
  const needed = details?.needed;
  const need = needed ? `This message needs about ${plural(needed, 'token')}` : 'This message needs more tokens than are left';
  return `${need}, but your token budget has ${plural(remaining, 'token')} left${until}. A new chat or a shorter message needs less.${after}`;
}

/** A note for a reply the budget stopped midway, with what is left now. */
export function stoppedText(b) {
  const left = budgetLeft(b);
  const until = untilText(b?.resets_at);
  if (left === 0) return `Your token budget is used up${until}.`;
  if (left === null) return '';
  return `${plural(left, 'token')} are left${until}, not enough for another step of this reply.`;
}
