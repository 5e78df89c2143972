// Admin console, a user's conversation read-only (opened from the audit log): messages,
// tool calls and results as the user saw them, with no way to post. The server records
// each reading in the admin audit trail.

import { h, clear, fmtDate } from './dom.js';
import * as api from './api.js';
import { unavailable, loading } from './admin_common.js';
import { renderStored } from './turn.js';
import { earlierButton } from './earlier_messages.js';

export async function renderConversation(body, id) {
  clear(body);
  const l = loading(body);
  let conv;
  try {
    conv = await api.get(`/api/admin/conversations/${encodeURIComponent(id)}`);
  } catch (err) {
    l.remove();
    if (err.status === 404) {
      body.append(h('div', { class: 'banner banner-warn', role: 'status' }, 'This conversation no longer exists (its owner deleted it, or the account was deleted).'));
    } else {
      unavailable(body, err, 'The conversation');
    }
    body.append(backLink());
    return;
  }
  l.remove();
  const owner = conv.owner || 'a deleted account';
  const log = h('div', { class: 'messages admin-readonly-log', role: 'log', 'aria-label': `Messages of ${owner}` });
  const items = renderStored(conv.messages || []);
  for (const el of items) {
    if (el.classList?.contains('msg-user')) el.setAttribute('aria-label', `${owner} said`);
  }
  const earlier = earlierButton({
    log, path: `/api/admin/conversations/${encodeURIComponent(id)}`, cursor: conv.messages_before,
  });
  if (earlier) log.append(earlier);
  if (items.length) log.append(...items);
  else log.append(h('p', { class: 'muted' }, 'This conversation has no messages.'));
  body.append(h('div', { class: 'card admin-conversation' },
    backLink(),
    h('h2', null, conv.title || 'Untitled conversation'),
    h('p', { class: 'muted small' },
      `${owner} · started ${fmtDate(conv.created_at)} · last active ${fmtDate(conv.updated_at)}`),
    h('div', { class: 'banner banner-info', role: 'note' },
      'Read-only: you cannot post here. Your reading of this conversation is recorded in the admin changes.'),
    log));
}

function backLink() {
  return h('p', null, h('a', { href: '/admin/audit', 'data-nav': '' }, '← Back to the audit log'));
}
