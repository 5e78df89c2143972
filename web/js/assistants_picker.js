// "Chat with an assistant" in the empty new chat: the assistants the member's role may use
// (GET /api/assistants), each a card with its description, the tools it may call for this
// member and its knowledge. Picking one creates the chat with it and opens it. In a chat
// already started with an assistant, the empty log introduces that assistant instead.

import { h, clear, uid } from './dom.js';
import * as api from './api.js';

let known = []; // the assistants last listed, for the introduction of a chat with one

const toolsText = (a) => (a.tools?.length ? `Tools: ${a.tools.join(', ')}` : 'No tools');
const knowledgeText = (a) => (a.collections?.length ? `Knowledge: ${a.collections.map((c) => c.name).join(', ')}` : null);

/** Opens conversation `conv` in the chat screen (app.js routes; the sidebar lists it first). */
async function openChat(conv) {
  const app = await import('../app.js');
  app.state.chat?.convList?.add(conv);
  app.navigate(`/c/${encodeURIComponent(conv.id)}`);
}

/** The picker; fills itself once the list arrives and stays hidden when there is none. */
export function assistantPicker() {
  const headingId = uid('asst-pick');
  const cards = h('ul', { class: 'assistant-cards', 'aria-labelledby': headingId });
  const err = h('p', { class: 'form-error', role: 'alert' });
  const el = h('section', { class: 'assistant-picker', 'aria-labelledby': headingId, hidden: true },
    h('h3', { id: headingId }, 'Chat with an assistant'), cards, err);
  api.myAssistants().then((res) => {
    known = res.items || [];
    clear(cards);
    for (const a of known) {
      const descId = uid('asst-desc');
      const btn = h('button', { type: 'button', class: 'assistant-card', 'aria-label': `Chat with ${a.name}`, 'aria-describedby': descId },
        h('span', { class: 'assistant-card-name' }, a.name),
        h('span', { class: 'assistant-card-desc', id: descId }, a.description || 'No description.'),
        h('span', { class: 'assistant-card-meta' }, [toolsText(a), knowledgeText(a)].filter(Boolean).join(' · ')));
      btn.addEventListener('click', async () => {
        err.textContent = '';
        for (const b of cards.querySelectorAll('button')) b.disabled = true;
        try {
          await openChat(await api.startAssistantChat(a.id));
        } catch (e) {
          if (e.status !== 401) err.textContent = `Could not start a chat with ${a.name}: ${e.message}`;
          for (const b of cards.querySelectorAll('button')) b.disabled = false;
        }
      });
      cards.append(h('li', null, btn));
    }
    el.hidden = !known.length;
  }, () => { el.hidden = true; }); // no assistants on this server, or none for this role
  return el;
}

/** The empty log of a chat with assistant `{id, name}`: who answers, and what it can use. */
export function assistantIntro(assistant) {
  const a = known.find((x) => x.id === assistant.id);
  return h('div', { class: 'assistant-intro' },
    h('p', null, 'You are chatting with the assistant ', h('strong', null, assistant.name), '.'),
    a?.description ? h('p', { class: 'muted' }, a.description) : null,
    a ? h('p', { class: 'muted small' }, [toolsText(a), knowledgeText(a)].filter(Boolean).join(' · ')) : null);
}
