// The admin console's model catalogue (GET /api/admin/models): the providers with whether a
// key is set and each one's circuit breaker, and every model with its limits, the price in
// force, fallbacks and the roles that may use it. Providers and models added here (`source:
// "api"`) can be edited and removed (admin_catalogue_forms.js); the configuration's are
// read-only. Also the models field of each role on the "Roles & tools" page.

import { h, clear, fmtNumber, fmtDate, toast } from './dom.js';
import * as api from './api.js';
import { unavailable, loading } from './admin_common.js';
import { confirmAction } from './admin_dialogs.js';
import { providerForm, modelForm, entryPath } from './admin_catalogue_forms.js';
import { priceText, money } from './model_label.js';
import { catalogueHasInput, inputText } from './admin_model_images.js';

/** A role's `models` entry that allows every model. */
export const ALL_MODELS = '*';

export const UNPRICED_WARNING = 'unpriced — cannot be used under a money budget';

/** The catalogue, or null when it cannot be read (the roles page then leaves `models` alone). */
export async function loadCatalogue() {
  try { return await api.get('/api/admin/models'); } catch { return null; }
}

export async function renderModels(body) {
  clear(body);
  const l = loading(body);
  let cat;
  try {
    cat = await api.get('/api/admin/models');
  } catch (err) {
    l.remove();
    unavailable(body, err, 'The model catalogue');
    return;
  }
  l.remove();
  const reload = (message) => { if (message) toast(message); renderModels(body); };
  body.append(providersCard(cat, reload), modelsCard(cat, reload));
}

const cell = (label, ...content) => h('td', { 'data-label': label }, h('span', { class: 'cell-value' }, ...content));

/**
 * A card's form slot and its "Add …" button: `open(entry)` shows the add (null) or edit form
 * under the table; Cancel closes it and gives focus back.
 */
function formSlot(addLabel, makeForm) {
  const slot = h('div', { class: 'catalogue-slot' });
  const add = h('button', { type: 'button', class: 'btn btn-small' }, addLabel);
  const open = (entry, from) => {
    clear(slot);
    const form = makeForm(entry, () => { clear(slot); (from || add).focus(); });
    slot.append(form);
    form.scrollIntoView?.({ block: 'nearest' });
    form.querySelector('input:not([readonly]), select')?.focus();
  };
  add.addEventListener('click', () => open(null, add));
  return { slot, add, open };
}

/** Edit and Remove for an entry the admin API owns; a note for the configuration's. */
function actionsCell({ entry, what, noun, open, reload, removeText }) {
  if (entry.source !== 'api') return cell('Actions', h('span', { class: 'muted small' }, 'from configuration'));
  const edit = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Edit ${noun} ${entry.name}` }, 'Edit');
  edit.addEventListener('click', () => open(entry, edit));
  const rm = h('button', { type: 'button', class: 'btn btn-small btn-danger', 'aria-label': `Remove ${noun} ${entry.name}` }, 'Remove');
  rm.addEventListener('click', async () => {
    const ok = await confirmAction({
      title: `Remove ${noun} ${entry.name}?`,
      text: removeText,
      confirmLabel: `Remove ${noun}`,
      run: () => api.del(entryPath(what, entry.name)),
    });
    if (ok) reload(`${noun[0].toUpperCase()}${noun.slice(1)} ${entry.name} removed.`);
    else rm.focus();
  });
  return cell('Actions', h('span', { class: 'row-actions' }, edit, rm));
}

function cardHead(title, add) {
  return h('div', { class: 'card-head' }, h('h2', null, title), add);
}

function providersCard(cat, reload) {
  const providers = cat.providers || [];
  const { slot, add, open } = formSlot('Add provider', (p, close) => providerForm(p, { onSaved: reload, onCancel: close }));
  const rows = providers.map((p) => h('tr', null,
    h('th', { scope: 'row' }, h('span', { class: 'tool-name' }, p.name)),
    cell('Kind', p.kind),
    cell('Base URL', p.base_url ? h('code', { class: 'wrap-anywhere' }, p.base_url) : h('span', { class: 'muted' }, 'built in')),
    cell('API key', p.api_key_set
      ? h('span', { class: 'pill key-set' }, 'key set')
      : h('span', { class: 'pill' }, 'no key')),
    breakerCell(p.breaker),
    actionsCell({
      entry: p, what: 'providers', noun: 'provider', open, reload,
      removeText: `Models can no longer be served by ${p.name}. A provider that models still use cannot be removed: remove or move them first.`,
    })));
  return h('div', { class: 'card' },
    cardHead('Providers', add),
    h('p', { class: 'muted' }, 'The upstream endpoints. Those of the server\'s configuration ([[providers]]) are changed there; those added here can be edited and removed. Keys are write-only: only whether one is set is shown. A provider that keeps failing is taken out of service for a while (its circuit opens): its models\' calls go to their fallbacks until a probe call succeeds.'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'data-table stack catalogue-table' },
      h('caption', { class: 'visually-hidden' }, 'Providers'),
      h('thead', null, h('tr', null, ['Name', 'Kind', 'Base URL', 'API key', 'Circuit', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, rows))),
    slot);
}

const BREAKER_TEXT = { closed: 'closed', open: 'open', half_open: 'half-open (probing)' };

/** A provider's circuit breaker: its state, until when it is open, and why it opened. */
function breakerCell(b) {
  if (!b) return cell('Circuit', h('span', { class: 'muted' }, 'unknown'));
  const pill = h('span', { class: `pill breaker-${b.state}` }, BREAKER_TEXT[b.state] || b.state);
  const detail = [];
  if (b.state === 'open' && b.open_until) detail.push(`until ${fmtDate(b.open_until)}`);
  if (b.state !== 'closed' && b.last_error) detail.push(b.last_error);
  if (b.state === 'closed' && b.consecutive_failures > 0) detail.push(`${b.consecutive_failures} failure(s) in a row`);
  return cell('Circuit', pill, detail.length
    ? h('span', { class: 'tool-desc wrap-anywhere' }, detail.join(' — '))
    : null);
}

function priceCell(m) {
  if (m.unpriced) return cell('Price', h('span', { class: 'price-warn', role: 'note' }, UNPRICED_WARNING));
  const p = m.price_in_force;
  const now = p
    ? h('span', null, priceText(p), p.cache_read !== p.input || p.cache_write !== p.input
      ? h('span', { class: 'tool-desc' }, `cache read ${money(p.cache_read, p.currency)}, write ${money(p.cache_write, p.currency)}`)
      : null)
    : h('span', { class: 'price-warn' }, 'no price in force yet');
  const history = (m.prices || []).length > 1
    ? h('details', { class: 'price-history' }, h('summary', null, `${m.prices.length} prices`),
      h('ul', null, m.prices.map((r) => h('li', null,
        `${r.effective_from ? `from ${fmtDate(r.effective_from)}` : 'always'}: ${priceText(r)}`))))
    : null;
  return cell('Price', now, history);
}

function modelsCard(cat, reload) {
  const models = cat.models || [];
  const withInput = catalogueHasInput(cat); // a server that says what its models read
  const { slot, add, open } = formSlot('Add model', (m, close) => modelForm(m, cat, { onSaved: reload, onCancel: close }));
  const rows = models.map((m) => h('tr', null,
    h('th', { scope: 'row' }, h('span', { class: 'tool-name' }, m.name)),
    cell('Provider', m.provider),
    cell('Upstream id', h('code', { class: 'wrap-anywhere' }, m.upstream_model)),
    cell('Window', fmtNumber(m.context_window)),
    cell('Max output', fmtNumber(m.max_output)),
    withInput ? cell('Input', inputText(m) || h('span', { class: 'muted' }, 'unknown')) : null,
    priceCell(m),
    cell('Fallbacks', (m.fallbacks || []).length ? m.fallbacks.join(' → ') : h('span', { class: 'muted' }, 'none')),
    cell('Roles', (m.roles || []).length
      ? m.roles.map((r) => h('span', { class: 'pill' }, r))
      : h('span', { class: 'muted' }, 'no role may use it')),
    actionsCell({
      entry: m, what: 'models', noun: 'model', open, reload,
      removeText: `Users can no longer pick ${m.name}; chats that use it are asked to pick another model. A model that is another model's fallback cannot be removed.`,
    })));
  return h('div', { class: 'card' },
    cardHead('Models', add),
    h('p', { class: 'muted' }, 'Prices are per million tokens, input / output. Which roles may use a model is set under “Roles & tools”. Models of the server\'s configuration are changed there; those added here can be edited and removed.'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'data-table stack catalogue-table' },
      h('caption', { class: 'visually-hidden' }, 'Models'),
      h('thead', null, h('tr', null, ['Name', 'Provider', 'Upstream id', 'Window', 'Max output', withInput ? 'Input' : null, 'Price in force', 'Fallbacks', 'Roles', 'Actions'].filter(Boolean).map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, rows))),
    slot);
}

/**
 * The models a role may use, as checkboxes: "all models (*)" and one per catalogue model.
 * `role.models` is changed in place; `onChange()` after each change.
 */
export function modelChecks(role, catalogue, onChange) {
  const names = (catalogue?.models || []).map((m) => m.name);
  const boxes = [];
  const sync = () => {
    const all = role.models.includes(ALL_MODELS);
    for (const [name, cb] of boxes) {
      cb.checked = all || role.models.includes(name);
      cb.disabled = all;
    }
  };
  const toggle = (name, on) => {
    role.models = on ? [...new Set([...role.models, name])] : role.models.filter((x) => x !== name);
    sync();
    onChange();
  };
  const allBox = h('input', { type: 'checkbox', checked: role.models.includes(ALL_MODELS), 'aria-label': `All models (*) for ${role.name}` });
  allBox.addEventListener('change', () => toggle(ALL_MODELS, allBox.checked));
  const items = names.map((name) => {
    const cb = h('input', { type: 'checkbox', 'aria-label': `Allow model ${name} for ${role.name}` });
    cb.addEventListener('change', () => toggle(name, cb.checked));
    boxes.push([name, cb]);
    return h('label', { class: 'check' }, cb, h('span', { class: 'tool-name' }, name));
  });
  sync();
  return h('div', { class: 'model-checks' },
    h('label', { class: 'check' }, allBox, 'all models (*)'),
    items);
}

/** What a role's PUT sends as `models`: only names the catalogue still offers (or `*`). */
export function modelsToSave(role, catalogue) {
  const names = new Set((catalogue?.models || []).map((m) => m.name));
  return role.models.filter((m) => m === ALL_MODELS || names.has(m));
}
