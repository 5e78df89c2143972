// Object URLs of images shown in the page, revoked when their element leaves the document
// (a message scrolled out by a new conversation, a removed chip): each URL holds its bytes in
// memory until revoked. An element moved within one task (detached and put back, as the chat
// does with a live turn when it redraws) keeps its URL: removals are checked after the task.
// One taken out and put back later (a question being edited, then the edit cancelled) gets a
// new URL of the same bytes, kept (weakly) with the element for that.

const live = new Map(); // element -> object URL
const blobs = new WeakMap(); // element -> its bytes, while the element exists
const parked = new Set(); // WeakRefs of elements out of the document whose URL was revoked
let observer = null;

function watch() {
  if (observer) return;
  observer = new MutationObserver(sweep);
  observer.observe(document.documentElement, { childList: true, subtree: true });
}

function sweep() {
  for (const [el, url] of live) {
    if (el.isConnected) continue;
    URL.revokeObjectURL(url);
    live.delete(el);
    parked.add(new WeakRef(el));
  }
  for (const ref of parked) {
    const el = ref.deref();
    if (!el) { parked.delete(ref); continue; }
    if (!el.isConnected) continue;
    parked.delete(ref);
    const blob = blobs.get(el);
    if (blob) showBlob(el, blob); // put back: shown again
  }
  if (!live.size && !parked.size) { observer?.disconnect(); observer = null; }
}

/**
 * Shows `blob` in `img` through an object URL that is revoked once `img` is out of the
 * document. `img` must be in the document already or be put there within this task.
 */
export function showBlob(img, blob) {
  release(img);
  const url = URL.createObjectURL(blob);
  img.src = url;
  live.set(img, url);
  blobs.set(img, blob);
  watch();
  // An element never put in the document is not seen by the observer: check after the task.
  setTimeout(() => { if (!img.isConnected) sweep(); }, 0);
  return url;
}

/** Revokes `img`'s URL now and forgets its bytes (a chip removed, the viewer closed). */
export function release(img) {
  blobs.delete(img);
  const url = live.get(img);
  if (!url) return;
  URL.revokeObjectURL(url);
  live.delete(img);
}
