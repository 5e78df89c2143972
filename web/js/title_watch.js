// A new chat's title: the server makes one with a short model call after the first answer,
// in the background (it never delays the answer). This asks for it a few times, backing
// off, until the chat is titled or the server's title call must have ended (~20 s).

import * as api from './api.js';

const DELAYS_MS = [400, 800, 1500, 2500, 4000, 6000, 8000];

/** Calls `onTitled(conv)` once the chat `id` has its generated title (never if it does not). */
export async function watchTitle(id, onTitled) {
  for (const delay of DELAYS_MS) {
    await new Promise((resolve) => { setTimeout(resolve, delay); });
    let conv;
    try {
      conv = await api.get(`/api/conversations/${encodeURIComponent(id)}`);
    } catch {
      return; // gone, or signed out
    }
    if (!conv.title_auto) {
      onTitled(conv);
      return;
    }
  }
}

/** What the server titles a chat from its first message (llm/title.rs `provisional`; a message of
 * files alone passes their paths joined by ", ", as `provisional_with_files` does). */
export function provisionalTitle(text) {
  const words = text.split(/\s+/).filter(Boolean);
  let title = '';
  for (const w of words) {
    const next = (title ? 1 : 0) + [...w].length;
    if ([...title].length + next > 59) return `${title || [...w].slice(0, 59).join('')}…`;
    title += (title ? ' ' : '') + w;
  }
  return title || 'New conversation';
}

/** Shows chat `c`'s new title in the sidebar and, if it is open, in the header. */
export function applyTitle(view, c) {
  const change = { title: c.title, title_auto: c.title_auto };
  for (const list of [view.convList.items, view.convList.results || []]) {
    const item = list.find((x) => x.id === c.id);
    if (item) Object.assign(item, change);
  }
  view.convList.render();
  if (view.current?.id === c.id) {
    Object.assign(view.current, change);
    view.showTitle();
  }
}
