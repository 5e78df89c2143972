// The "Knowledge" page (/knowledge): document collections the assistant searches with its
// `search_knowledge` tool and cites. Lists the collections one may search (own and shared),
// creates one, renames, describes and deletes those one manages; admins share them with
// roles. /knowledge/{id} is one collection with its files (knowledge_collection.js). When the
// server cannot offer collections (no pgvector), the page says why and nothing else.

import { h, clear, field, fmtRelative, toast } from './dom.js';
import * as api from './api.js';
import { knowledgeInfo, collectionPage, countsText } from './knowledge_common.js';
import { collectionActions, sharingText } from './knowledge_dialogs.js';
import { renderCollection } from './knowledge_collection.js';

/** Renders the page into `main`: the list, or the collection `id`. */
export async function renderKnowledge(main, id, { me, navigate }) {
  const body = h('div', { class: 'admin-body' });
  const head = h('div', { class: 'admin-head' });
  main.append(h('div', { class: 'admin knowledge' }, head, body));
  body.append(h('p', { class: 'muted loading' }, 'Loading…'));
  let settings;
  try {
    settings = await knowledgeInfo({ fresh: true });
  } catch (err) {
    if (err.status === 401) return;
    head.append(h('h1', null, 'Knowledge'));
    clear(body).append(h('div', { class: 'banner banner-error', role: 'alert' }, `Could not load knowledge: ${err.message}`));
    return;
  }
  if (!settings.available) {
    head.append(h('h1', null, 'Knowledge'));
    clear(body).append(h('div', { class: 'banner banner-warn knowledge-unavailable', role: 'status' },
      h('span', { class: 'banner-text' }, settings.reason || 'Knowledge collections are not available on this server.')));
    return;
  }
  const ctx = { me, navigate, settings, head, body };
  if (id) await renderCollection(ctx, id);
  else await renderList(ctx);
}

async function renderList(ctx) {
  const { head, body, me, navigate } = ctx;
  head.append(h('h1', null, 'Knowledge'));
  const name = field('Name', { name: 'collection_name', maxlength: '100', required: true, autocomplete: 'off', placeholder: 'e.g. Support handbook' });
  const description = field('Description (optional)', { name: 'collection_description', maxlength: '2000', autocomplete: 'off', placeholder: 'What is in it, for whom' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create collection');
  const error = h('p', { class: 'form-error', role: 'alert' });
  const form = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'New collection' },
    h('div', { class: 'form-row' }, name.wrap, description.wrap, h('div', { class: 'field field-auto' }, submit)), error);
  const list = h('ul', { class: 'collection-list', 'aria-label': 'Collections' });
  const note = h('p', { class: 'muted', role: 'status' });
  clear(body).append(
    h('div', { class: 'card' },
      h('p', null, 'Collections of documents the assistant can search and cite. Pin collections to a chat (the Knowledge button above the chat) to have it search them there.'),
      form),
    h('div', { class: 'card' }, h('h2', null, 'Collections'), note, list));

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.textContent = '';
    const n = name.input.value.trim();
    if (!n) { error.textContent = 'Give the collection a name.'; name.input.focus(); return; }
    const payload = { name: n };
    if (description.input.value.trim()) payload.description = description.input.value.trim();
    submit.disabled = true;
    try {
      const created = await api.post('/api/collections', payload);
      toast(`Created ${created.name}. Add documents to it.`);
      navigate(collectionPage(created.id));
    } catch (err) {
      error.textContent = err.code === 'collection_exists' ? `You already have a collection named ${n}.` : err.message;
      name.input.focus();
    } finally {
      submit.disabled = false;
    }
  });

  async function load() {
    let items;
    try {
      items = (await api.get('/api/collections')).items || [];
    } catch (err) {
      if (err.status !== 401) note.textContent = `Could not load the collections: ${err.message}`;
      return;
    }
    clear(list);
    note.textContent = items.length ? '' : 'No collections yet. Create one above, then add documents to it.';
    for (const c of items) list.append(item(c));
  }

  function item(c) {
    const li = h('li', { class: 'collection-item', dataset: { collectionId: c.id } },
      h('div', { class: 'collection-main' },
        h('a', { href: collectionPage(c.id), 'data-nav': '', class: 'collection-name' }, c.name),
        c.description ? h('p', { class: 'collection-desc' }, c.description) : null,
        h('p', { class: 'collection-meta muted small' },
          h('span', null, countsText(c)), ' · ',
          h('span', { class: 'collection-sharing' }, sharingText(c)),
          c.updated_at ? ` · updated ${fmtRelative(c.updated_at)}` : '')),
      collectionActions(c, { me, onChanged: (saved) => li.replaceWith(item({ ...c, ...saved })), onDeleted: () => load() }));
    return li;
  }

  await load();
}
