// The account dialog's preferences: the theme (light / dark / system, applied at once) and
// the model new chats start with. Both are stored on the account (PATCH
// /api/me/preferences), so they follow the user to another browser.

import { h, uid } from './dom.js';
import * as api from './api.js';
import { THEMES, applyTheme } from './theme.js';
import { modelLabel } from './model_label.js';

/** The preferences section; `me` is updated in place as changes are saved. */
export function preferencesSection(me, models) {
  const prefs = me.preferences || { theme: 'system', default_model: null };
  const status = h('p', { class: 'small muted prefs-status', role: 'status' });
  const error = h('div', { class: 'form-error', role: 'alert' });
  const save = async (change, undo) => {
    status.textContent = '';
    error.textContent = '';
    try {
      me.preferences = await api.patch('/api/me/preferences', change);
      status.textContent = 'Saved.';
    } catch (err) {
      error.textContent = err.message || 'The preference could not be saved.';
      undo();
    }
  };

  const name = uid('theme');
  const themeGroup = h('fieldset', { class: 'theme-choices' },
    h('legend', { class: 'account-section' }, 'Theme'),
    THEMES.map(({ value, label }) => {
      const input = h('input', { type: 'radio', name, value, checked: prefs.theme === value });
      input.addEventListener('change', () => {
        if (!input.checked) return;
        const before = me.preferences?.theme || 'system';
        applyTheme(value);
        save({ theme: value }, () => {
          applyTheme(before);
          for (const r of themeGroup.querySelectorAll('input')) r.checked = r.value === before;
        });
      });
      return h('label', { class: 'check theme-choice' }, input, label);
    }));

  const modelId = uid('default-model');
  const serverDefault = models?.default;
  const select = h('select', { id: modelId, class: 'default-model' },
    h('option', { value: '' }, serverDefault ? `Server default (${serverDefault})` : 'Server default'),
    (models?.models || []).map((m) => h('option', { value: m, selected: prefs.default_model === m }, modelLabel(m, models))));
  const offered = !prefs.default_model || (models?.models || []).includes(prefs.default_model);
  const gone = offered ? null
    : h('p', { class: 'small form-info' }, `Your default model "${prefs.default_model}" is no longer offered; new chats use the server's default.`);
  select.addEventListener('change', () => {
    const before = me.preferences?.default_model || '';
    save({ default_model: select.value || null }, () => { select.value = before; });
    // The picker of a chat not started yet follows (a started chat keeps its model).
    const picker = document.querySelector('.model-select');
    const start = select.value || serverDefault;
    if (picker && [...picker.options].some((o) => o.value === start)) picker.value = start;
  });

  return h('section', { class: 'account-prefs', 'aria-label': 'Preferences' },
    themeGroup,
    h('div', { class: 'field' }, h('label', { for: modelId }, 'Default model for new chats'), select),
    gone, status, error);
}
