// Admin console, "Assistants": named presets members can chat with (instructions, model,
// tools, knowledge, parameters, the roles that see them). The list, the form that creates one
// or saves a new version (assistants_form.js), each one's versions (assistants_versions.js),
// and retiring one (no new chats; its chats take no new messages).

import { h, clear, toast } from './dom.js';
import * as api from './api.js';
import { unavailable, loading } from './admin_common.js';
import { confirmAction } from './admin_dialogs.js';
import { loadCatalogue } from './admin_models.js';
import { assistantForm } from './assistants_form.js';
import { versionsPanel } from './assistants_versions.js';

/** What the form offers: catalogue models, tools, roles and the collections the admin may read. */
async function loadOptions() {
  const [catalogue, offered, tools, roles, collections] = await Promise.all([
    loadCatalogue(),
    api.get('/api/models').catch(() => null), // for the name of the server's default
    api.get('/api/admin/tools').catch(() => ({ items: [] })),
    api.get('/api/admin/roles').catch(() => ({ items: [] })),
    api.get('/api/collections').catch(() => null),
  ]);
  const toolItems = Array.isArray(tools) ? tools : (tools.items || []);
  // Each MCP server also gets a `{server}__*` entry: every tool of that server, as on a role.
  const servers = [...new Set(toolItems.filter((t) => t.kind === 'mcp').map((t) => t.server))]
    .map((s) => ({ name: `${s}__*`, kind: 'mcp-all', server: s }));
  return {
    models: { names: (catalogue?.models || []).map((m) => m.name), default: offered?.default || null },
    tools: [...toolItems, ...servers],
    roles: (roles.items || []).map((r) => r.name),
    collections: collections ? (collections.items || []).map((c) => ({ id: c.id, name: c.name })) : null,
  };
}

const cell = (label, ...content) => h('td', { 'data-label': label }, h('span', { class: 'cell-value' }, ...content));

export async function renderAssistants(body) {
  clear(body);
  const l = loading(body);
  let list;
  let opts;
  try {
    [list, opts] = await Promise.all([api.adminAssistants(), loadOptions()]);
  } catch (err) {
    l.remove();
    unavailable(body, err, 'Assistants');
    return;
  }
  l.remove();
  const items = list.items || [];
  const names = new Map((opts.collections || []).map((c) => [c.id, c.name]));
  const collectionName = (id) => names.get(id) || `collection ${String(id).slice(0, 8)}…`;
  const reload = (message) => { if (message) toast(message); renderAssistants(body); };

  // One slot under the list for the form or the versions, whichever was asked for last.
  const slot = h('div', { class: 'assistant-slot' });
  const add = h('button', { type: 'button', class: 'btn btn-primary btn-small' }, 'New assistant');
  const showForm = (a, from) => {
    const back = () => { clear(slot); (from || add).focus(); };
    const form = assistantForm(a, opts, {
      onSaved: (saved) => reload(a ? `${saved.name} saved as version ${saved.version}.` : `Assistant ${saved.name} created.`),
      onCancel: back,
    });
    slot.replaceChildren(h('div', { class: 'card' }, form));
    form.scrollIntoView?.({ block: 'nearest' });
    form.querySelector('input')?.focus();
  };
  add.addEventListener('click', () => showForm(null, add));
  const showVersions = (a, from) => {
    const panel = versionsPanel(a, collectionName, () => { clear(slot); from.focus(); });
    slot.replaceChildren(panel);
    panel.scrollIntoView?.({ block: 'nearest' });
  };

  const rows = items.map((a) => {
    const edit = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Edit ${a.name}` }, 'Edit');
    const versions = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Versions of ${a.name}` }, 'Versions');
    const retire = h('button', { type: 'button', class: 'btn btn-small btn-danger', 'aria-label': `Retire ${a.name}` }, 'Retire');
    edit.addEventListener('click', () => showForm(a, edit));
    versions.addEventListener('click', () => showVersions(a, versions));
    retire.addEventListener('click', async () => {
      const ok = await confirmAction({
        title: `Retire ${a.name}?`,
        text: `No new chats can start with ${a.name}, and the chats that use it take no new messages (they can still be read). Its versions stay in the admin changes.`,
        confirmLabel: 'Retire assistant',
        run: () => api.retireAssistant(a.id),
      });
      if (ok) reload(`${a.name} retired.`);
      else retire.focus();
    });
    return h('tr', { dataset: { assistantId: a.id } },
      h('th', { scope: 'row' }, h('span', { class: 'assistant-name' }, a.name),
        a.description ? h('span', { class: 'tool-desc' }, a.description) : null),
      cell('Version', String(a.version)),
      cell('Model', a.model || h('span', { class: 'muted' }, 'server default')),
      cell('Tools', a.tools?.length ? a.tools.join(', ') : h('span', { class: 'muted' }, 'none')),
      cell('Visible to', a.visible_to_roles?.length ? a.visible_to_roles.join(', ') : h('span', { class: 'muted' }, 'every role')),
      h('td', { 'data-label': 'Actions' }, h('div', { class: 'row-actions' }, edit, versions, retire)));
  });

  body.append(h('div', { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', null, 'Assistants'), add),
    h('p', { class: 'muted' }, 'Named instructions with their own model, tools and knowledge that members pick when they start a chat. Each save is a new version; chats use the current one.'),
    items.length
      ? h('div', { class: 'table-wrap' }, h('table', { class: 'data-table stack catalogue-table assistants-table' },
        h('caption', { class: 'visually-hidden' }, 'Assistants'),
        h('thead', null, h('tr', null, ['Name', 'Version', 'Model', 'Tools', 'Visible to', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, rows)))
      : h('p', { class: 'muted' }, 'No assistants yet.')),
  slot);
}
