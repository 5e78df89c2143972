// Admin "Assistants": the form that creates an assistant or saves a new version of one (name,
// description, instructions, model, tools, knowledge collections, temperature, max output
// tokens, the roles that see it). The server checks everything again; its `error.message` is
// shown under the form.

import { h, field, uid } from './dom.js';
import * as api from './api.js';

/** What the server accepts as a name (it is also the `/v1` model `assistant:<name>`). */
export const NAME_PATTERN = /^(?=.{1,64}$)[A-Za-z0-9_.-]+( [A-Za-z0-9_.-]+)*$/;

/** A stored temperature as typed (a 32-bit float may come back as 0.20000000298023224). */
export const tempText = (t) => (typeof t === 'number' ? String(Math.round(t * 1000) / 1000) : '');

/** A fieldset of checkboxes: `items` are [value, label, extra?]; returns {el, values()}. */
function checkGroup(legend, hint, items, chosen, name) {
  const hintId = uid('hint');
  const boxes = items.map(([value, label, extra]) => {
    const cb = h('input', { type: 'checkbox', value, checked: chosen.includes(value), name });
    return [cb, h('label', { class: 'check' }, cb, h('span', { class: 'tool-name' }, label), extra || null)];
  });
  const el = h('fieldset', { class: 'catalogue-fieldset assistant-checks', 'aria-describedby': hintId },
    h('legend', null, legend),
    h('p', { class: 'field-hint', id: hintId }, hint),
    boxes.length ? h('div', { class: 'assistant-check-list' }, boxes.map(([, label]) => label))
      : h('p', { class: 'muted small' }, 'None to choose from.'));
  return { el, values: () => boxes.filter(([cb]) => cb.checked).map(([cb]) => cb.value) };
}

/** The `/v1` model name of an assistant named `n` (spaces as `-`, as the server lists it). */
export function v1Slug(n) {
  return n.trim().split(/\s+/).filter(Boolean).join('-');
}

/**
 * The form for assistant `a` (null: a new one). `opts`: {models: {names, default}, tools:
 * [{name, kind, server}], roles: [name], collections: [{id, name}] or null when collections
 * cannot be listed here}. `onSaved(saved)` after a save; `onCancel()`.
 */
export function assistantForm(a, opts, { onSaved, onCancel }) {
  const editing = Boolean(a);
  const nameHint = uid('hint');
  const name = field('Name', {
    value: a?.name || '', required: true, maxlength: '64', autocomplete: 'off', spellcheck: 'false',
    pattern: '[A-Za-z0-9_.\\-]+( [A-Za-z0-9_.\\-]+)*', 'aria-describedby': nameHint,
  });
  const v1Name = h('code', { class: 'wrap-anywhere' });
  const showV1Name = () => { v1Name.textContent = `assistant:${v1Slug(name.input.value) || '<name>'}`; };
  name.wrap.append(h('p', { class: 'field-hint', id: nameHint }, 'Letters, digits, spaces, dot, dash and underscore, up to 64. API clients use it as the model ', v1Name, '.'));
  name.input.addEventListener('input', showV1Name);
  showV1Name();
  const desc = field('Description (shown to members when they pick it)', { value: a?.description || '', maxlength: '500' });
  const instr = field('Instructions', { rows: '8', required: true, class: 'assistant-instructions' }, 'textarea');
  instr.input.value = a?.instructions || '';

  const modelId = uid('asst-model');
  const names = opts.models?.names || [];
  const model = h('select', { id: modelId, name: 'model' },
    h('option', { value: '' }, opts.models?.default ? `Server default (${opts.models.default})` : 'Server default'),
    names.map((m) => h('option', { value: m, selected: a?.model === m }, m)));
  if (a?.model && !names.includes(a.model)) {
    model.append(h('option', { value: a.model, selected: true }, `${a.model} (not in the catalogue)`));
  }

  // Tools: the same allowlist entries as a role's (an MCP server's `name__*` stands for all its tools).
  const toolNames = [...new Set([...opts.tools.map((t) => t.name), ...(a?.tools || [])])].sort();
  const kind = new Map(opts.tools.map((t) => [t.name, t]));
  const tools = checkGroup('Tools', 'A member gets only the ticked tools their role also allows.',
    toolNames.map((t) => {
      const info = kind.get(t);
      let pill = null;
      if (info?.kind === 'mcp') pill = h('span', { class: 'pill' }, `MCP: ${info.server}`);
      else if (info?.kind === 'custom') pill = h('span', { class: 'pill' }, 'custom');
      else if (t.endsWith('__*')) pill = h('span', { class: 'pill' }, 'all tools of the server');
      return [t, t, pill];
    }), a?.tools || [], 'tools');

  // Collections: kept as they are when they cannot be listed here.
  let collections;
  if (opts.collections) {
    const known = new Map(opts.collections.map((c) => [c.id, c.name]));
    const ids = [...opts.collections.map((c) => c.id), ...(a?.collections || []).filter((id) => !known.has(id))];
    collections = checkGroup('Knowledge collections', 'Searched by search_knowledge in chats with this assistant (members see those they may read).',
      ids.map((id) => [id, known.get(id) || `collection ${String(id).slice(0, 8)}…`]), a?.collections || [], 'collections');
  } else {
    const kept = a?.collections || [];
    collections = {
      el: h('p', { class: 'muted small' }, `Knowledge collections are not available here${kept.length ? `; the ${kept.length} chosen stay as they are` : ''}.`),
      values: () => kept,
    };
  }

  const temp = field('Temperature (0 to 2)', { type: 'number', min: '0', max: '2', step: '0.1', inputmode: 'decimal', placeholder: 'model default', value: tempText(a?.params?.temperature) });
  const maxOut = field('Max output tokens', { type: 'number', min: '1', step: '1', inputmode: 'numeric', placeholder: 'model default', value: a?.params?.max_output_tokens ?? '' });
  const roles = checkGroup('Visible to roles', 'None ticked: every role sees it.',
    [...new Set([...opts.roles, ...(a?.visible_to_roles || [])])].map((r) => [r, r]), a?.visible_to_roles || [], 'roles');

  const err = h('p', { class: 'form-error', role: 'alert' });
  const save = h('button', { type: 'submit', class: 'btn btn-primary' }, editing ? `Save as version ${(a.version || 1) + 1}` : 'Create assistant');
  const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Cancel');
  cancel.addEventListener('click', onCancel);
  const titleId = uid('asst-form');
  const form = h('form', { class: 'stack-form catalogue-form assistant-form', novalidate: true, 'aria-labelledby': titleId },
    h('h3', { id: titleId }, editing ? `Edit ${a.name}` : 'New assistant'),
    name.wrap, desc.wrap, instr.wrap,
    h('div', { class: 'field' }, h('label', { for: modelId }, 'Model'), model),
    tools.el, collections.el,
    h('div', { class: 'form-row' }, temp.wrap, maxOut.wrap),
    roles.el, err,
    h('div', { class: 'form-actions' }, save, cancel));

  const invalid = (input, text) => { err.textContent = text; input.focus(); return null; };
  const body = () => {
    const n = name.input.value.trim();
    if (!NAME_PATTERN.test(n)) return invalid(name.input, 'The name must be 1 to 64 letters, digits, single spaces, dots, dashes or underscores.');
    if (!instr.input.value.trim()) return invalid(instr.input, 'Write the instructions the assistant follows.');
    const params = {};
    if (temp.input.value.trim() !== '') {
      const t = Number(temp.input.value);
      if (!Number.isFinite(t) || t < 0 || t > 2) return invalid(temp.input, 'The temperature must be between 0 and 2.');
      params.temperature = t;
    }
    if (maxOut.input.value.trim() !== '') {
      const m = Number(maxOut.input.value);
      if (!Number.isInteger(m) || m < 1) return invalid(maxOut.input, 'Max output tokens must be a whole number of at least 1.');
      params.max_output_tokens = m;
    }
    return {
      name: n,
      description: desc.input.value.trim(),
      instructions: instr.input.value,
      model: model.value || null,
      tools: tools.values(),
      collections: collections.values(),
      params,
      visible_to_roles: roles.values(),
    };
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const b = body();
    if (!b) return;
    save.disabled = true;
    try {
      onSaved(await api.saveAssistant(a?.id, b));
    } catch (e) {
      if (e.status !== 401) err.textContent = e.message || 'The assistant could not be saved.';
    } finally {
      save.disabled = false;
    }
  });
  return form;
}
