// The empty chat: a greeting, the tools the member's role allows (so a refusal is never a
// surprise) and a few suggestions that send themselves; in a new chat, the assistants to
// start one with, and in a chat with an assistant, who that is (assistants_picker.js).
import { h } from './dom.js';
import { assistantPicker, assistantIntro } from './assistants_picker.js';
import { shownConversation } from './assistants_badge.js';

const SUGGESTIONS = ['What time is it?', 'What is 2+3*4?', 'List my files'];

export function emptyState(tools, onPick) {
  const conv = shownConversation();
  return h('div', { class: 'empty-state' },
    h('div', { class: 'logo big', 'aria-hidden': 'true' }),
    h('h2', null, 'How can I help?'),
    h('p', { class: 'muted' }, 'Ask anything. The assistant can call the tools your role allows.'),
    conv?.assistant ? assistantIntro(conv.assistant) : null,
    allowedToolsNote(tools),
    h('div', { class: 'suggestions' }, SUGGESTIONS.map((s) => {
      const b = h('button', { type: 'button', class: 'chip' }, s);
      b.addEventListener('click', () => onPick(s));
      return b;
    })),
    conv ? null : assistantPicker());
}

/** Which tools the member's role allows. */
function allowedToolsNote(tools) {
  if (!tools.length) return h('p', { class: 'muted small allowed-tools' }, 'Your role allows no tools yet: an admin can allow them under Roles & tools.');
  return h('details', { class: 'allowed-tools' },
    h('summary', null, `Your role allows ${tools.length} tool${tools.length === 1 ? '' : 's'}`),
    h('ul', null, tools.map((t) => h('li', null, h('code', null, t)))));
}
