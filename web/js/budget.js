// The one place the browser words the budget, in tokens and in money: the top bar and the
// chat banner both read it from here, from the same `budget` of `GET /api/me` (refreshed
// after every turn and every refusal), so they cannot disagree. "Used up" is said only when
// nothing is left; times are shown in the browser's time zone. Money arrives as exact
// decimal strings and is only rounded here, for display.

import { fmtNumber, fmtDate } from './dom.js';

const plural = (n, word) => `${fmtNumber(n)} ${word}${Number(n) === 1 ? '' : 's'}`;

/** Tokens free now: the limit less what was spent and what running replies hold. */
export function budgetLeft(b) {
  if (!b || b.limit === null || b.limit === undefined) return null;
  return Math.max(0, Number(b.limit) - Number(b.used || 0) - Number(b.reserved || 0));
}

/** "$4.21" (or "$0.0035" for small amounts) in the budget's currency. */
export function fmtMoney(amount, currency) {
  const n = Number(amount);
  const small = Math.abs(n) > 0 && Math.abs(n) < 1;
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: small ? 4 : 2 }).format(n);
  } catch {
    return `${n.toFixed(small ? 4 : 2)} ${currency}`;
  }
}

/** Money free now (a number) for the `money` part of a budget, or null when there is none. */
export function moneyLeft(b) {
  const m = b?.money;
  if (!m) return null;
  return Math.max(0, Number(m.limit) - Number(m.used || 0) - Number(m.reserved || 0));
}

/** " until 3 Dec 2026, 00:00" in the user's time zone, or "" for a budget that never resets. */
export function untilText(resetsAt) {
  return resetsAt ? ` until ${fmtDate(resetsAt)}` : '';
}

/** The top bar: short text, fill ratio (null when unlimited) and a full sentence. */
export function budgetInfo(b) {
  if (!b) return null;
  const tokens = tokenInfo(b);
  const money = moneyInfo(b);
  if (!money) return tokens;
  if (!tokens.ratio && tokens.ratio !== 0) return money;
  // Both apply: the bar shows the tighter one, the sentence both.
  const tighter = money.ratio <= tokens.ratio ? money : tokens;
  return { ...tighter, title: `${money.title} ${tokens.title}` };
}

function tokenInfo(b) {
  const left = budgetLeft(b);
  if (left === null) {
    return { text: 'Unlimited budget', ratio: null, title: 'No token limit applies to your account.', left: null };
  }
  const period = periodText(b);
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

function moneyInfo(b) {
  const left = moneyLeft(b);
  if (left === null) return null;
  const { limit, currency } = b.money;
  const period = periodText(b);
  const resets = b.resets_at ? ` It resets on ${fmtDate(b.resets_at)}.` : ' Ask an admin to raise it.';
  return {
    text: left === 0 ? 'Budget used up' : `${fmtMoney(left, currency)} left`,
    ratio: Number(limit) > 0 ? left / Number(limit) : 0,
    title: left === 0
      ? `Your ${fmtMoney(limit, currency)} budget${period} is used up.${resets}`
      : `${fmtMoney(left, currency)} of ${fmtMoney(limit, currency)} left${period}.${b.resets_at ? ` It resets on ${fmtDate(b.resets_at)}.` : ''}`,
    left,
  };
}

const periodText = (b) => (b.period && b.period !== 'total' ? ` this ${b.period}` : '');

/**
 * The banner for a message refused by the budget (429 `budget_exhausted`): with the
 * server's numbers (`details`: needed, remaining, resets_at), or the profile's budget.
 */
export function refusalText(details, b) {
  if (details?.currency) return moneyRefusalText(details);
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

/** A money budget's refusal: `details` has currency, needed, remaining (decimal strings). */
function moneyRefusalText(details) {
  const { currency } = details;
  const until = untilText(details.resets_at);
  const after = details.resets_at ? '' : ' Ask an admin to raise it.';
  if (Number(details.remaining) <= 0) return `Your ${currency} budget is used up${until}.${after}`;
  return `This message may cost up to ${fmtMoney(details.needed, currency)}, but your budget has ${fmtMoney(details.remaining, currency)} left${until}. A new chat, a shorter message or a cheaper model needs less.${after}`;
}

/** A note for a reply the budget stopped midway, with what is left now. */
export function stoppedText(b) {
  const money = moneyLeft(b);
  if (money === 0) return `Your ${b.money.currency} budget is used up${untilText(b?.resets_at)}.`;
  const left = budgetLeft(b);
  const until = untilText(b?.resets_at);
  if (left === 0) return `Your token budget is used up${until}.`;
  if (left === null) return '';
  return `${plural(left, 'token')} are left${until}, not enough for another step of this reply.`;
}
