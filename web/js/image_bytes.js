// What an image file is, from its name and from its bytes. A path ending in .png, .jpg,
// .jpeg, .webp or .gif is shown as an image; its bytes must then start with that format's
// magic number before they ever reach an <img> (so an SVG, HTML or anything else renamed to
// .png is never rendered: it stays a download).

const EXTENSIONS = /\.(png|jpe?g|webp|gif)$/i;

/** The types the composer treats as images (what the server normalises). */
export const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

/** Whether `path` names an image attachment (by its extension, as the server does). */
export function isImagePath(path) {
  return EXTENSIONS.test(String(path || ''));
}

/** Whether a picked, pasted or dropped File is an image the composer previews. */
export function isImageFile(file) {
  return IMAGE_TYPES.has(file?.type) || (!file?.type && isImagePath(file?.name));
}

const starts = (b, bytes, at = 0) => bytes.every((v, i) => b[at + i] === v);

/** The image type the first bytes `b` (a Uint8Array) announce, or null (SVG, text, …). */
export function sniffImage(b) {
  if (starts(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts(b, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (starts(b, [0x47, 0x49, 0x46, 0x38]) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61) return 'image/gif';
  if (starts(b, [0x52, 0x49, 0x46, 0x46]) && starts(b, [0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  return null;
}

/**
 * A blob of `blob`'s bytes typed by what they are, or null when they are no PNG, JPEG, GIF
 * or WebP (whatever type the server or the file name claimed).
 */
export async function checkedImage(blob) {
  const head = new Uint8Array(await blob.slice(0, 16).arrayBuffer());
  const type = sniffImage(head);
  return type ? new Blob([blob], { type }) : null;
}
