// Whether a catalogue model takes images, in the admin console's Models tab: a cell saying
// what it reads ("text" or "text, images" with its limits) and, in the add/edit form, a
// "Takes images" box with the most images per request and the largest image. Both appear only
// when the server's catalogue carries `input` (a server without images shows and sends
// nothing of it).

import { h, field, fmtBytes, uid } from './dom.js';

/** Whether this server's catalogue says what its models read. */
export const catalogueHasInput = (catalogue) => (catalogue?.models || []).some((m) => Array.isArray(m.input));

/** What model `m` reads, for its row: "text" or "text, images" and the image limits. */
export function inputText(m) {
  if (!Array.isArray(m.input)) return null;
  if (!m.input.includes('image')) return 'text';
  const limits = [m.max_images ? `≤ ${m.max_images} per request` : null, m.max_image_bytes ? `≤ ${fmtBytes(m.max_image_bytes)} each` : null].filter(Boolean);
  return `text, images${limits.length ? ` (${limits.join(', ')})` : ''}`;
}

const whole = (input) => (input.value.trim() === '' ? undefined : Number(input.value.trim()));

/**
 * The form's image fields for model `m` (null: a new one): `{wrap, apply(body)}`, `apply`
 * putting `input` (and the limits when given) on the request body.
 */
export function imageFields(m) {
  const box = h('input', { type: 'checkbox', id: uid('img'), checked: Boolean(m?.input?.includes('image')) });
  const most = field('Most images per request', { type: 'number', min: '1', max: '100', step: '1', inputmode: 'numeric', value: m?.max_images ?? '', placeholder: 'server default' });
  const largest = field('Largest image (bytes)', { type: 'number', min: '1024', max: '67108864', step: '1', inputmode: 'numeric', value: m?.max_image_bytes ?? '', placeholder: 'server default' });
  const limits = h('div', { class: 'form-row' }, most.wrap, largest.wrap);
  const sync = () => { limits.hidden = !box.checked; };
  box.addEventListener('change', sync);
  sync();
  const wrap = h('fieldset', { class: 'catalogue-fieldset' },
    h('legend', null, 'Images'),
    h('label', { class: 'check', for: box.id }, box, 'Takes images'),
    h('p', { class: 'field-hint' }, 'Tick only for a model the provider documents as reading images: a message with images to any other model is refused before anything is spent.'),
    limits);
  const apply = (body) => {
    body.input = box.checked ? ['text', 'image'] : ['text'];
    if (!box.checked) return;
    const n = whole(most.input);
    const b = whole(largest.input);
    if (n !== undefined) body.max_images = n;
    if (b !== undefined) body.max_image_bytes = b;
  };
  return { wrap, apply };
}
