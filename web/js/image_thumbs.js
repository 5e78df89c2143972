// Image attachments of a message as thumbnails: each file is fetched with the reader's
// credentials (the workspace file route in the chat, the share's file route on a share
// page), its bytes checked to be PNG, JPEG, GIF or WebP, and shown from a blob URL that is
// revoked when the message leaves the page. A click opens the full-size view. A file that
// is gone, or whose bytes are no image, says so in place of its thumbnail.

import { h, fmtBytes } from './dom.js';
import * as api from './api.js';
import { isImagePath, checkedImage } from './image_bytes.js';
import { showBlob } from './blob_urls.js';
import { openImage } from './image_viewer.js';

/** The signed-in user's workspace file `path` (a Response). */
export const workspaceFile = (path) => api.api('GET', `/api/files/${path.split('/').map(encodeURIComponent).join('/')}`,
  undefined, { response: true, accept: '*/*' });

/** `files` ({path, bytes}) split into images (by extension) and the rest. */
export function splitImages(files) {
  const images = [];
  const others = [];
  for (const f of files || []) (isImagePath(f.path) ? images : others).push(f);
  return { images, others };
}

// A long history asks for its pictures a few at a time, not all at once.
const MAX_PARALLEL = 4;
let running = 0;
const waiting = [];
function limited(job) {
  return new Promise((resolve, reject) => {
    const run = () => {
      running += 1;
      job().then(resolve, reject).finally(() => {
        running -= 1;
        waiting.shift()?.();
      });
    };
    if (running < MAX_PARALLEL) run(); else waiting.push(run);
  });
}

/** Fetches `path` through `fetchFile` and checks its bytes: a typed image blob, or null. */
export async function loadImage(fetchFile, path) {
  const resp = await fetchFile(path);
  return checkedImage(await resp.blob());
}

/**
 * A thumbnail button for image `f` ({path, bytes}) that opens the full-size view; `label`
 * is what the picture is called (its file name by default); `cls` goes on the button,
 * `imgClass` on the picture.
 */
export function thumbnail(f, fetchFile, { cls = 'msg-image', imgClass = 'thumb-img', label } = {}) {
  const name = label || f.path.split('/').pop();
  const img = h('img', { class: imgClass, alt: name, decoding: 'async' });
  const button = h('button', { type: 'button', class: `thumb ${cls}`, 'aria-label': `Open image ${name} full size`,
    title: f.bytes ? `${f.path} · ${fmtBytes(f.bytes)}` : f.path, dataset: { path: f.path, state: 'loading' }, disabled: true }, img);
  limited(() => loadImage(fetchFile, f.path)).then((blob) => {
    if (!blob) throw Object.assign(new Error('not an image'), { notImage: true });
    showBlob(img, blob); // (revoked at once if the message left before its picture came)
    button.dataset.state = 'ready';
    button.disabled = false;
    button.addEventListener('click', () => openImage(blob, name, button));
  }).catch((err) => {
    button.dataset.state = 'missing';
    img.remove();
    const why = err.notImage ? 'not an image that can be shown' : err.status === 404 || err.status === 410 ? 'no longer available' : 'could not be loaded';
    button.append(h('span', { class: 'thumb-missing' }, `${name}: ${why}`));
    button.setAttribute('aria-label', `${name}: ${why}`);
  });
  return button;
}

/** A message's image attachments as a row of thumbnails (null when it has none). */
export function imageThumbs(images, fetchFile = workspaceFile) {
  if (!images || !images.length) return null;
  return h('ul', { class: 'msg-images', 'aria-label': 'Attached images' },
    images.map((f) => h('li', null, thumbnail(f, fetchFile))));
}
