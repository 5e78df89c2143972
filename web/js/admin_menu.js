// The admin sections on a phone: one "Section" menu in a single row instead of ten tabs
// wrapped over four rows (the tabs stay on wider screens; CSS shows one or the other).

import { h } from './dom.js';

/**
 * A select of `sections` ([key, label]) with `current` chosen; choosing one follows that
 * section's tab link, so the app's own in-page navigation handles it.
 */
export function sectionMenu(sections, current) {
  const select = h('select', { id: 'admin-section', class: 'admin-menu-select' },
    sections.map(([key, label]) => h('option', { value: key, selected: key === current }, label)));
  select.addEventListener('change', () => {
    const tab = [...document.querySelectorAll('.admin-tabs .admin-tab')]
      .find((a) => a.getAttribute('href') === `/admin/${select.value}`);
    tab?.click();
  });
  return h('div', { class: 'admin-menu field' }, h('label', { for: 'admin-section' }, 'Section'), select);
}
