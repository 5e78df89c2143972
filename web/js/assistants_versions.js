// Admin "Assistants": the versions of one assistant (every save is one), newest first: who
// saved it, when, and what changed from the version before, in words (tools added and
// removed, the model, the roles that see it); changed instructions can be unfolded.

import { h, fmtDate } from './dom.js';
import * as api from './api.js';
import { tempText } from './assistants_form.js';

const list = (xs) => (xs.length ? xs.join(', ') : 'none');
const modelName = (m) => m || 'server default';
const rolesText = (r) => (r?.length ? r.join(', ') : 'every role');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Who saved a version: its author's name (`created_by`, or `created_by_name` beside an id). */
const author = (v) => v.created_by_name || (v.created_by && !UUID.test(v.created_by) ? v.created_by : 'an account since deleted');

/** "added a, b; removed c" between two lists (names via `label`), or null when equal. */
function setChange(before = [], after = [], label = (x) => x) {
  const added = after.filter((x) => !before.includes(x)).map(label);
  const removed = before.filter((x) => !after.includes(x)).map(label);
  const parts = [];
  if (added.length) parts.push(`added ${list(added)}`);
  if (removed.length) parts.push(`removed ${list(removed)}`);
  return parts.length ? parts.join('; ') : null;
}

/** What changed from version `prev` to `v`, as list items. `collectionName(id)` names a collection. */
export function versionChanges(prev, v, collectionName = (id) => id) {
  if (!prev) {
    return [h('li', null, `Created: model ${modelName(v.model)}; tools ${list(v.tools || [])}; visible to ${rolesText(v.visible_to_roles)}`)];
  }
  const items = [];
  const line = (text) => items.push(h('li', null, text));
  if (prev.name !== v.name) line(`Renamed from ${prev.name} to ${v.name}`);
  if ((prev.description || '') !== (v.description || '')) line(`Description: ${v.description || '(none)'}`);
  if (prev.instructions !== v.instructions) {
    items.push(h('li', null, 'Instructions changed ',
      h('details', { class: 'assistant-instr' }, h('summary', null, 'Show the new instructions'), h('pre', { class: 'tool-pre' }, v.instructions || ''))));
  }
  if ((prev.model || null) !== (v.model || null)) line(`Model: ${modelName(prev.model)} → ${modelName(v.model)}`);
  const tools = setChange(prev.tools, v.tools);
  if (tools) line(`Tools: ${tools}`);
  const cols = setChange(prev.collections, v.collections, collectionName);
  if (cols) line(`Knowledge: ${cols}`);
  const p0 = prev.params || {};
  const p1 = v.params || {};
  const param = (v0) => (v0 === undefined || v0 === null ? 'model default' : String(v0));
  const t0 = tempText(p0.temperature);
  const t1 = tempText(p1.temperature);
  if (t0 !== t1) line(`Temperature: ${t0 || 'model default'} → ${t1 || 'model default'}`);
  if (p0.max_output_tokens !== p1.max_output_tokens) line(`Max output tokens: ${param(p0.max_output_tokens)} → ${param(p1.max_output_tokens)}`);
  const roles = setChange(prev.visible_to_roles, v.visible_to_roles);
  if (roles) line(`Visible to: ${rolesText(prev.visible_to_roles)} → ${rolesText(v.visible_to_roles)}`);
  if (!items.length) line('Saved without changes');
  return items;
}

/**
 * A card with the versions of assistant `a`; `collectionName(id)` names a collection;
 * `onClose()` when its Close button is pressed.
 */
export function versionsPanel(a, collectionName, onClose) {
  const body = h('div', { class: 'assistant-versions-body' }, h('p', { class: 'muted loading' }, 'Loading versions…'));
  const close = h('button', { type: 'button', class: 'btn btn-small' }, 'Close');
  close.addEventListener('click', onClose);
  const headingId = `versions-${a.id}`;
  const card = h('section', { class: 'card assistant-versions', 'aria-labelledby': headingId },
    h('div', { class: 'card-head' }, h('h2', { id: headingId }, `Versions of ${a.name}`), close), body);
  api.assistantVersions(a.id).then((res) => {
    const items = res.items || [];
    body.replaceChildren(items.length ? h('ol', { class: 'assistant-version-list', 'aria-label': `Versions of ${a.name}` },
      items.map((v, i) => h('li', { class: 'assistant-version', dataset: { version: String(v.version) } },
        h('div', { class: 'assistant-version-head' },
          h('strong', null, `Version ${v.version}`),
          i === 0 ? h('span', { class: 'pill' }, 'current') : null,
          h('span', { class: 'muted small' }, ` by ${author(v)} · ${fmtDate(v.created_at)}`)),
        h('ul', { class: 'change-lines' }, versionChanges(items[i + 1], v, collectionName)))))
      : h('p', { class: 'muted' }, 'No versions recorded.'));
  }, (err) => {
    if (err.status !== 401) body.replaceChildren(h('p', { class: 'form-error', role: 'alert' }, `Could not load the versions: ${err.message}`));
  });
  return card;
}
