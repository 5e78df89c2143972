// Web sources on the page of a shared conversation: an answer's `[W…]` markers become
// numbered links to the pages and a Sources list shows their titles and sites (new tab, no
// referrer), as in the chat. Knowledge sources stay a line of file names there: their
// passage viewer needs the owner's collections, which a reader cannot open.

import { isWebCitation } from './web_sources.js';

/** Draws the web citations among `citations` on the finished answer `turn`. */
export function shareWebSources(turn, citations) {
  const web = citations.filter(isWebCitation);
  if (web.length) turn.cite(web);
}
