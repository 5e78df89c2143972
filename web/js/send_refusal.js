// What the banner says when a message is refused before its turn starts.
import { refusalText as budgetRefusalText } from './budget.js';

export function sendRefusalText(err, budget) {
  switch (err.code) {
    case 'budget_exhausted':
      // Worded with the top bar's words (budget.js), from the server's numbers.
      return budgetRefusalText(err.details, budget);
    case 'approval_pending':
      return approvalPendingText(err);
    case 'turn_in_progress':
      return 'A reply is still being generated in this chat. Wait for it to finish or press Stop.';
    case 'not_found':
      return 'This chat no longer exists.';
    case 'model_cannot_see_images':
    case 'too_many_images':
      // The server names the model and what to do; the text and images stay on the composer.
      return `Not sent: ${plain(err.message)}`;
    case 'conversation_full':
      return `${err.message} Your messages here stay readable and searchable.`;
    default:
      if (err.status === 429) return `Too many requests: ${err.message}`;
      if (err.status >= 500) return `The server could not answer: ${err.message}`;
      return err.message || 'The message could not be sent.';
  }
}

/** Who must decide the call the chat waits for: only an admin, or the user (on its card). */
function approvalPendingText(err) {
  if (err.details?.approver === 'admin') {
    return 'The last answer in this chat waits for an admin to approve or deny a tool call. An admin must decide it first; the answer appears here when they do.';
  }
  return 'The last answer in this chat waits for a tool call to be approved or denied. Approve or deny it on its card above first.';
}

/** A server sentence for the banner: code marks (`name`) dropped, a full stop at the end. */
function plain(message) {
  const t = String(message || '').replace(/`/g, '').trim();
  return /[.!?]$/.test(t) ? t : `${t}.`;
}
