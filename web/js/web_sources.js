// Web citations in an answer: `[W12]` markers stand for results of the `web_search` tool
// (`citations`: {kind: "web", n, marker, url, title, quote?}). A marker becomes a numbered
// link to the page and the sources list under the answer shows its title and site, opened
// in a new tab without a referrer. Only http(s) URLs become links.

import { h } from './dom.js';

/** Whether `c` is a web citation the browser can show. */
export function isWebCitation(c) {
  return Boolean(c && c.kind === 'web' && c.marker && c.n != null && safeUrl(c.url));
}

/** `url` when it is an http(s) URL, else null (never a `javascript:` or `file:` link). */
function safeUrl(url) {
  try {
    const u = new URL(String(url));
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

function site(url) {
  try {
    return new URL(url).hostname.replace(/^www\./, '');
  } catch {
    return '';
  }
}

function link(c, cls, label, ...children) {
  return h('a', {
    class: cls, href: safeUrl(c.url), target: '_blank', rel: 'noopener noreferrer nofollow',
    title: c.quote ? `${c.title}: ${c.quote}` : c.title, 'aria-label': label, dataset: { n: String(c.n) },
  }, ...children);
}

/** The numbered chip that replaces a `[W…]` marker. */
export function webChip(c) {
  return h('sup', { class: 'cite' }, link(c, 'cite-chip cite-web', `Source ${c.n}: ${c.title} (${site(c.url)})`, String(c.n)));
}

/** One entry of the sources list: number, title, site. */
export function webSourceItem(c) {
  return h('li', null, link(c, 'cite-source cite-web', `Open source ${c.n}: ${c.title} (${site(c.url)}, new tab)`,
    h('span', { class: 'cite-n' }, String(c.n)), ' · ', h('span', { class: 'cite-file' }, c.title || site(c.url)),
    h('span', { class: 'cite-site' }, site(c.url))));
}
