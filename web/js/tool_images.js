// Images a tool other than the code interpreter returned (an MCP tool's image content, which
// the server keeps as workspace files and lists in the result's `data.files`), shown under
// the tool card like the interpreter's charts: each fetched with the reader's credentials
// (the workspace file route, or the share's on a share page), its bytes checked to be PNG,
// JPEG, GIF or WebP before it is put in an <img>, a click opening it full size.

import { h } from './dom.js';
import { IMAGE_TYPES, isImagePath } from './image_bytes.js';
import { thumbnail, workspaceFile } from './image_thumbs.js';

/** The image files a result's `data` lists ({path, mime, bytes}). */
export function listedImages(data) {
  const files = data && typeof data === 'object' && Array.isArray(data.files) ? data.files : [];
  return files.filter((f) => f && typeof f.path === 'string' && IMAGE_TYPES.has(f.mime) && isImagePath(f.path));
}

/** Puts the images `data` lists right after `card` (replacing an earlier rendering). */
export function showToolImages(card, data, { fetchFile = workspaceFile } = {}) {
  const next = card.el.nextElementSibling;
  if (next && next.classList.contains('tool-images-out')) next.remove();
  const images = listedImages(data);
  if (!images.length) return;
  card.el.after(h('div', { class: 'code-run-out tool-images-out', dataset: { toolId: card.id || '' } },
    images.map((f) => {
      const name = f.path.split('/').pop();
      return h('figure', { class: 'code-run-figure' },
        thumbnail(f, fetchFile, { cls: 'code-run-open', imgClass: 'code-run-image' }),
        h('figcaption', { class: 'muted' }, name));
    })));
}
