// One collection (/knowledge/{id}): its name, description and sharing, the actions on it,
// adding documents (knowledge_add.js) and its files with their ingestion (knowledge_files.js).
// While any file is queued, extracting or embedding, the page asks again every second; it
// stops when none is, or when the page is left.

import { h, clear } from './dom.js';
import * as api from './api.js';
import { collectionPath, countsText } from './knowledge_common.js';
import { collectionActions, sharingText } from './knowledge_dialogs.js';
import { FileList } from './knowledge_files.js';
import { AddDocuments } from './knowledge_add.js';

const POLL_MS = 1000;

export async function renderCollection({ head, body, me, navigate, settings }, id) {
  const back = h('a', { href: '/knowledge', 'data-nav': '', class: 'back-link' }, '← All collections');
  let c;
  try {
    c = await api.get(collectionPath(id));
  } catch (err) {
    if (err.status === 401) return;
    head.append(back, h('h1', null, 'Knowledge'));
    clear(body).append(h('div', { class: 'banner banner-warn', role: 'status' },
      err.status === 404 ? 'This collection does not exist, or it is not shared with you.' : `Could not load the collection: ${err.message}`));
    return;
  }
  const title = h('h1', { class: 'collection-title' });
  const desc = h('p', { class: 'collection-desc' });
  const meta = h('p', { class: 'collection-meta muted small' });
  const actionsSlot = h('div', { class: 'collection-head-actions' });
  head.append(back, h('div', { class: 'collection-head' }, title, actionsSlot), desc, meta);

  const files = new FileList(c.id, { canManage: c.can_manage, onChange: () => refresh() });
  const filesCard = h('section', { class: 'card', 'aria-labelledby': 'kfiles-h' },
    h('h2', { id: 'kfiles-h' }, 'Documents'));
  if (c.can_manage) {
    const adder = new AddDocuments(c.id, { settings, files, onAdded: () => refresh() });
    filesCard.append(adder.el);
    adder.watch(body.closest('.admin') || body);
  } else {
    filesCard.append(h('p', { class: 'muted small' }, `Shared with you by ${c.owner?.username || 'its owner'}: you can pin and search it, not change it.`));
  }
  filesCard.append(files.el);
  clear(body).append(filesCard);

  function show(col) {
    c = { ...c, ...col };
    title.textContent = c.name;
    document.title = `${c.name} · Knowledge · AgentChat`;
    desc.textContent = c.description || '';
    desc.hidden = !c.description;
    clear(meta).append(countsText(c), ' · ', h('span', { class: 'collection-sharing' }, sharingText(c)),
      settings.embedding_model ? ` · embedded with ${settings.embedding_model}` : '');
    clear(actionsSlot).append(collectionActions(c, {
      me,
      onChanged: (saved) => show(saved),
      onDeleted: () => navigate('/knowledge'),
    }) || '');
    if (col.files) files.render(col.files);
  }
  show(c);

  let timer = null;
  let inFlight = false;
  let again = false; // asked while a request was out: ask once more after it
  async function refresh() {
    if (inFlight) { again = true; return; }
    clearTimeout(timer);
    inFlight = true;
    try {
      if (!body.isConnected) return;
      show(await api.get(collectionPath(c.id)));
    } catch (err) {
      if (err.status === 404 && body.isConnected) { navigate('/knowledge'); return; }
      // A hiccup: the next poll tries again.
    } finally {
      inFlight = false;
    }
    if (again) { again = false; refresh(); return; }
    schedule();
  }
  function schedule() {
    clearTimeout(timer);
    if (body.isConnected && files.busy()) timer = setTimeout(refresh, POLL_MS);
  }
  schedule();
}
