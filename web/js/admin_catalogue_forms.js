// The forms of the admin "Models" tab that change the catalogue at run time: add or edit a
// provider (POST/PUT /api/admin/providers) and a model (POST/PUT /api/admin/models). Only the
// entries the admin API owns (`source: "api"`) are edited; the configuration's are read-only.
// API keys are write-only: an edit keeps the stored key unless a new one is typed or the
// "remove" box is ticked. Prices go to the server as decimal strings, never as numbers.

import { h, field, uid } from './dom.js';
import * as api from './api.js';
import { catalogueHasInput, imageFields } from './admin_model_images.js';

/** 1 to 64 of letters, digits and `.-_:/@` (escaped for Chromium's `v`-flag patterns). */
const NAME_PATTERN = '[A-Za-z0-9.\\-_:\\/@]{1,64}';
const NAME_RULES = '1 to 64 letters, digits and . - _ : / @';
const KINDS = [['openai', 'OpenAI-compatible'], ['anthropic', 'Anthropic'], ['demo', 'Demo (built in)']];
const TIMEOUTS = [
  ['connect_timeout_secs', 'Connect timeout'], ['first_byte_timeout_secs', 'First byte timeout'],
  ['idle_timeout_secs', 'Idle timeout'], ['request_timeout_secs', 'Request timeout'],
];

export const entryPath = (what, name) => `/api/admin/${what}/${encodeURIComponent(name)}`;

/** A field with a hint under it, tied to the input by aria-describedby. */
function hinted(label, attrs, hint, tag) {
  const hintId = uid('hint');
  const f = field(label, { ...attrs, 'aria-describedby': hintId }, tag);
  f.wrap.append(h('p', { class: 'field-hint', id: hintId }, hint));
  return f;
}

/** A whole number from an input, or undefined when empty (the server's default). */
function wholeOrUnset(input) {
  const t = input.value.trim();
  return t === '' ? undefined : Number(t);
}

const numberAttrs = (value, min = '0') => ({ type: 'number', min, step: '1', inputmode: 'numeric', value: value ?? '', placeholder: 'server default' });

/**
 * The shell every catalogue form shares: a heading, the fields, the error (role=alert) and
 * Save / Cancel. `send()` returns the request; on success `onSaved(message)`.
 */
function shell({ title, submitLabel, fields, send, onSaved, onCancel }) {
  const err = h('p', { class: 'form-error', role: 'alert' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, submitLabel);
  const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
  cancel.addEventListener('click', onCancel);
  const form = h('form', { class: 'stack-form inline-form catalogue-form', 'aria-label': title },
    h('h3', null, title), fields, err, h('div', { class: 'form-actions' }, submit, cancel));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    submit.disabled = true;
    try {
      const message = await send();
      onSaved(message);
    } catch (e) {
      err.textContent = e.message;
      submit.disabled = false;
    }
  });
  return form;
}

/** Adds a provider (`p` null) or edits `p`. */
export function providerForm(p, { onSaved, onCancel }) {
  const editing = Boolean(p);
  const name = hinted('Name', { value: p?.name || '', required: true, pattern: NAME_PATTERN, maxlength: '64', autocomplete: 'off', spellcheck: 'false', readonly: editing || null }, editing ? 'A provider cannot be renamed.' : NAME_RULES);
  const kind = field('Kind', {}, 'select');
  kind.input.append(...KINDS.map(([v, t]) => h('option', { value: v, selected: v === (p?.kind || 'openai') }, t)));
  const base = hinted('Base URL', { value: p?.base_url || '', inputmode: 'url', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://api.example.com/v1' }, 'Empty: the vendor\'s own endpoint.');
  const keyHint = editing && p.api_key_set
    ? 'The stored key is kept unless you type a new one. Keys are write-only: never shown again.'
    : 'Write-only: it is never shown again.';
  const key = hinted('API key', { type: 'password', autocomplete: 'off', spellcheck: 'false', placeholder: editing && p.api_key_set ? 'Kept unless a new one is typed' : '' }, keyHint);
  let removeKey = null;
  if (editing && p.api_key_set) {
    removeKey = h('input', { type: 'checkbox', id: uid('rmkey') });
    removeKey.addEventListener('change', () => { key.input.disabled = removeKey.checked; if (removeKey.checked) key.input.value = ''; });
  }
  const retries = field('Max retries', { ...numberAttrs(p?.max_retries), max: '10' });
  const timeouts = TIMEOUTS.map(([k, label]) => [k, field(`${label} (seconds)`, numberAttrs(p?.[k], '1'))]);
  const fields = [
    h('div', { class: 'form-row' }, name.wrap, kind.wrap),
    base.wrap,
    key.wrap,
    removeKey ? h('div', { class: 'field-inline key-remove' }, removeKey, h('label', { for: removeKey.id }, 'Remove the stored key')) : null,
    h('div', { class: 'form-row' }, retries.wrap),
    h('details', { class: 'catalogue-more', open: timeouts.some(([k]) => p?.[k] != null) },
      h('summary', null, 'Timeouts'),
      h('div', { class: 'form-row' }, timeouts.map(([, f]) => f.wrap))),
  ];
  const send = async () => {
    const body = { name: name.input.value.trim(), kind: kind.input.value, base_url: base.input.value.trim() };
    for (const [k, f] of [['max_retries', retries], ...timeouts]) {
      const v = wholeOrUnset(f.input);
      if (v !== undefined) body[k] = v;
    }
    if (removeKey?.checked) body.api_key = '';
    else if (key.input.value !== '') body.api_key = key.input.value;
    if (editing) {
      await api.put(entryPath('providers', p.name), body);
      return `Provider ${p.name} saved.`;
    }
    await api.post('/api/admin/providers', body);
    return `Provider ${body.name} added.`;
  };
  return shell({ title: editing ? `Edit provider ${p.name}` : 'Add a provider', submitLabel: editing ? 'Save provider' : 'Create provider', fields, send, onSaved, onCancel });
}

/** The index in `prices` (oldest first) of the row in force now, or -1. */
function inForceIndex(prices, now = Date.now()) {
  let at = -1;
  prices.forEach((r, i) => { if (!r.effective_from || Date.parse(r.effective_from) <= now) at = i; });
  return at;
}

/** A price row as the API shows it, turned back into what it takes (strings kept exact). */
const rowBody = (r) => ({
  currency: r.currency, input: r.input, output: r.output, cache_read: r.cache_read, cache_write: r.cache_write,
  ...(r.effective_from ? { effective_from: r.effective_from } : {}),
});

/** The price fields: currency, input, output and the two cache prices (empty: the input price). */
function priceFields(row) {
  const sameAsInput = (v) => (row && v !== row.input ? v : '');
  const money = (label, value, placeholder) => field(label, { value: value ?? '', inputmode: 'decimal', autocomplete: 'off', spellcheck: 'false', placeholder });
  const f = {
    currency: field('Currency', { value: row?.currency || 'USD', maxlength: '3', pattern: '[A-Za-z]{3}', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'characters' }),
    input: money('Input price', row?.input, 'e.g. 3'),
    output: money('Output price', row?.output, 'e.g. 15'),
    cache_read: money('Cache read price', row && sameAsInput(row.cache_read), 'same as input'),
    cache_write: money('Cache write price', row && sameAsInput(row.cache_write), 'same as input'),
  };
  const wrap = h('fieldset', { class: 'catalogue-fieldset' },
    h('legend', null, 'Price per million tokens'),
    h('p', { class: 'field-hint' }, 'Decimal amounts, e.g. 0.15. Leave input and output empty for an unpriced model (it cannot be used under a money budget).'),
    h('div', { class: 'form-row price-row' }, Object.values(f).map((x) => x.wrap)));
  /** The row to store, null for none, or throws a message. */
  const read = () => {
    const v = Object.fromEntries(Object.entries(f).map(([k, x]) => [k, x.input.value.trim()]));
    if (!v.input && !v.output && !v.cache_read && !v.cache_write) return null;
    if (!v.input || !v.output) throw new Error('Give both an input and an output price, or leave all prices empty for an unpriced model.');
    const out = { currency: (v.currency || 'USD').toUpperCase(), input: v.input, output: v.output };
    if (v.cache_read) out.cache_read = v.cache_read;
    if (v.cache_write) out.cache_write = v.cache_write;
    return out;
  };
  return { wrap, read };
}

/** Checkboxes of the other models; the order they are ticked in is the fallback order. */
function fallbackChecks(current, others) {
  let order = [...current];
  const shown = h('p', { class: 'field-hint', 'aria-live': 'polite' });
  const say = () => { shown.textContent = order.length ? `Tried in this order: ${order.join(' → ')}` : 'No fallbacks.'; };
  const boxes = others.map((name) => {
    const cb = h('input', { type: 'checkbox', id: uid('fb'), checked: order.includes(name) });
    cb.addEventListener('change', () => {
      order = cb.checked ? [...order, name] : order.filter((x) => x !== name);
      say();
    });
    return h('label', { class: 'check', for: cb.id }, cb, h('span', { class: 'tool-name' }, name));
  });
  say();
  const wrap = h('fieldset', { class: 'catalogue-fieldset' },
    h('legend', null, 'Fallbacks'),
    h('p', { class: 'field-hint' }, 'Models that answer, in the order ticked, when this one fails before its first token.'),
    others.length ? h('div', { class: 'fallback-checks' }, boxes) : h('p', { class: 'muted small' }, 'No other model yet.'),
    shown);
  return { wrap, read: () => order.filter((n) => others.includes(n)) };
}

/** Adds a model (`m` null) or edits `m`; `catalogue` gives the providers and other models. */
export function modelForm(m, catalogue, { onSaved, onCancel }) {
  const editing = Boolean(m);
  const name = hinted('Name', { value: m?.name || '', required: true, pattern: NAME_PATTERN, maxlength: '64', autocomplete: 'off', spellcheck: 'false', readonly: editing || null }, editing ? 'A model cannot be renamed.' : `What users pick. ${NAME_RULES}.`);
  const provider = field('Provider', { required: true }, 'select');
  const providers = (catalogue.providers || []).map((p) => p.name);
  provider.input.append(...providers.map((n) => h('option', { value: n, selected: n === m?.provider }, n)));
  const upstream = hinted('Upstream id', { value: m?.upstream_model || '', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. gpt-4o-2024-08-06' }, 'The provider\'s id of the model. Empty: the name.');
  const windowF = field('Context window (tokens)', numberAttrs(m?.context_window, '1'));
  const maxOut = field('Max output (tokens)', numberAttrs(m?.max_output, '1'));
  const prices = (m?.prices || []).map(rowBody);
  const at = inForceIndex(prices);
  const price = priceFields(at >= 0 ? prices[at] : null);
  const others = (catalogue.models || []).map((x) => x.name).filter((n) => n !== m?.name);
  const fallbacks = fallbackChecks(m?.fallbacks || [], others);
  const images = catalogueHasInput(catalogue) ? imageFields(m) : null;
  const fields = [
    h('div', { class: 'form-row' }, name.wrap, provider.wrap),
    upstream.wrap,
    h('div', { class: 'form-row' }, windowF.wrap, maxOut.wrap),
    price.wrap,
    editing && prices.length > 1 ? h('p', { class: 'muted small' }, 'These fields change the price in force now; the other rows of its price table are kept.') : null,
    fallbacks.wrap,
    images?.wrap,
  ];
  const send = async () => {
    const row = price.read();
    let table;
    if (at >= 0) table = row ? prices.map((r, i) => (i === at ? { ...row, ...(r.effective_from ? { effective_from: r.effective_from } : {}) } : r)) : prices.filter((_, i) => i !== at);
    else table = row ? [row, ...prices] : prices;
    const body = { name: name.input.value.trim(), provider: provider.input.value, upstream_model: upstream.input.value.trim(), prices: table, fallbacks: fallbacks.read() };
    const cw = wholeOrUnset(windowF.input);
    const mo = wholeOrUnset(maxOut.input);
    if (cw !== undefined) body.context_window = cw;
    if (mo !== undefined) body.max_output = mo;
    images?.apply(body);
    if (editing) {
      await api.put(entryPath('models', m.name), body);
      return `Model ${m.name} saved.`;
    }
    await api.post('/api/admin/models', body);
    return `Model ${body.name} added. Roles that allow all models (*) may use it now; others once they list it under “Roles & tools”.`;
  };
  return shell({ title: editing ? `Edit model ${m.name}` : 'Add a model', submitLabel: editing ? 'Save model' : 'Create model', fields, send, onSaved, onCancel });
}
