// Images on the composer's chips: a thumbnail of the picked, pasted or dropped picture (from
// the local file, its bytes checked first; a restored one from the workspace) shown through
// an object URL revoked when the chip goes; the server's verdict on the upload (its size
// after resizing, or why it was refused, in the server's words); and a name for a pasted
// screenshot, which the clipboard calls just "image.png".

import { h, icon } from './dom.js';
import { isImageFile, isImagePath, checkedImage } from './image_bytes.js';
import { showBlob } from './blob_urls.js';
import { loadImage, workspaceFile } from './image_thumbs.js';

/** The upload refusals of an image whose message the server writes for people. */
const IMAGE_CODES = new Set(['unsupported_image', 'invalid_image', 'image_too_large']);

/** The server's words for an image it refused (415/422/413), or null for other errors. */
export function imageErrorText(err) {
  return IMAGE_CODES.has(err?.code) && err.message ? err.message : null;
}

/** Whether a composer item is (or will be) an image. */
export function isImageItem(item) {
  return item.file instanceof Blob ? isImageFile(item.file) : isImagePath(item.path || item.name);
}

const pad = (n) => String(n).padStart(2, '0');

/**
 * `file`, renamed when it is a pasted picture without a name of its own ("image.png" from
 * the clipboard): "pasted 2026-12-06 17-05-09.png", so two pastes are told apart.
 */
export function namedPaste(file) {
  if (!(file instanceof File) || !isImageFile(file) || !/^image\.(png|jpe?g|gif|webp)$/i.test(file.name)) return file;
  const d = new Date();
  const stamp = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}-${pad(d.getMinutes())}-${pad(d.getSeconds())}`;
  return new File([file], `pasted ${stamp}.${file.name.split('.').pop().toLowerCase()}`, { type: file.type, lastModified: file.lastModified });
}

/**
 * The chip's leading picture: a thumbnail for an image (the file icon until it loads, and
 * when its bytes are no image), else the file icon.
 */
export function chipPreview(item) {
  const fallback = icon('file');
  if (!isImageItem(item)) return fallback;
  const img = h('img', { class: 'attach-thumb', alt: '' });
  const box = h('span', { class: 'attach-thumb-box', 'aria-hidden': 'true' }, fallback);
  const bytes = item.file instanceof Blob ? checkedImage(item.file) : loadImage(workspaceFile, item.path);
  bytes.then((blob) => {
    if (!blob) return;
    fallback.replaceWith(img);
    showBlob(img, blob);
  }).catch(() => { /* the icon stays */ });
  return box;
}

/** "1024 × 768 · resized from 4032 × 3024" from an upload answer's `image`, or ''. */
export function imageFacts(image) {
  if (!image || !image.width || !image.height) return '';
  const o = image.original;
  const resized = o && (o.width !== image.width || o.height !== image.height);
  return `${image.width} × ${image.height}${resized ? ` · resized from ${o.width} × ${o.height}` : ''}`;
}
