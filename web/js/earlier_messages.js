// "Show earlier messages": a long conversation arrives as a window of its latest messages
// (the server never sends a whole conversation); this button at the top of the log fetches
// the page before it and puts it above, keeping what the reader was looking at in place.

import { h } from './dom.js';
import * as api from './api.js';
import { renderStored } from './turn.js';

/**
 * The button for the messages before `cursor` of the conversation at `path` (its GET URL),
 * or null when there are none. `log` is the scrolling message list; `onLoaded` runs after a
 * page was added (to decorate the new messages).
 */
export function earlierButton({ log, path, cursor, onLoaded = () => {} }) {
  if (!cursor) return null;
  const wrap = h('div', { class: 'load-earlier' });
  const btn = h('button', { type: 'button', class: 'btn btn-small' }, 'Show earlier messages');
  const status = h('span', { class: 'muted small', role: 'status' });
  wrap.append(btn, status);
  let next = cursor;
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    status.textContent = '';
    try {
      const page = await api.get(`${path}?before=${encodeURIComponent(next)}`);
      const fromBottom = log.scrollHeight - log.scrollTop;
      wrap.after(...renderStored(page.messages || []));
      next = page.messages_before;
      if (next) btn.disabled = false;
      else wrap.remove();
      // Decorated before the place is restored: the actions change the new messages' height.
      onLoaded();
      log.scrollTop = log.scrollHeight - fromBottom;
    } catch (err) {
      btn.disabled = false;
      status.textContent = `Could not load earlier messages: ${err.message}`;
    }
  });
  return wrap;
}
