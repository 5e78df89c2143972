// The full-size view of an image (an attached one, or a chart a tool made): a modal dialog
// with the picture at its own size (scaled down to the window), its file name, a download
// button and Close. Esc closes it (the dialog's own behaviour) and focus goes back to the
// thumbnail that opened it. The picture comes from a blob already checked to be an image.

import { h } from './dom.js';
import { showBlob, release } from './blob_urls.js';

/** Opens `blob` (a checked image) named `name`; focus returns to `opener` on close. */
export function openImage(blob, name, opener = null) {
  const img = h('img', { class: 'image-viewer-img', alt: name });
  const close = h('button', { type: 'button', class: 'btn btn-primary' }, 'Close');
  const save = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Download');
  const dialog = h('dialog', { class: 'image-viewer', 'aria-label': `Image ${name}` },
    h('div', { class: 'image-viewer-frame', tabindex: '0' }, img),
    h('div', { class: 'image-viewer-bar' },
      h('span', { class: 'image-viewer-name', title: name }, name),
      h('span', { class: 'image-viewer-size muted small', 'aria-live': 'polite' }),
      save, close));
  img.addEventListener('load', () => {
    dialog.querySelector('.image-viewer-size').textContent = `${img.naturalWidth} × ${img.naturalHeight}`;
  }, { once: true });
  close.addEventListener('click', () => dialog.close());
  save.addEventListener('click', () => download(blob, name));
  // A click on the dim area around the picture closes it too, as in most viewers.
  dialog.addEventListener('click', (ev) => { if (ev.target === dialog) dialog.close(); });
  dialog.addEventListener('close', () => {
    release(img);
    dialog.remove();
    if (opener?.isConnected) opener.focus();
  });
  document.body.append(dialog);
  showBlob(img, blob);
  dialog.showModal();
  close.focus();
  return dialog;
}

function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
