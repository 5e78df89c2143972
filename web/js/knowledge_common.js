// Shared by the knowledge pages and the chat: whether the server offers knowledge (GET
// /api/knowledge, asked once per page load unless `fresh`), collection URLs, file states and
// the words for upload refusals.

import * as api from './api.js';
import { fmtBytes } from './dom.js';

let info = null;

/**
 * The server's knowledge settings: {available, reason, embedding_model, max_file_bytes,
 * accepted}. A server without the API answers {available: false, reason, missing: true}.
 */
export function knowledgeInfo({ fresh = false } = {}) {
  if (!info || fresh) {
    info = api.get('/api/knowledge').catch((err) => {
      info = null; // asked again next time
      if (err.status === 404) return { available: false, missing: true, reason: 'Knowledge collections are not available on this server.' };
      if (err.status === 403) return { available: false, reason: 'Your role may not use knowledge collections.' };
      throw err;
    });
  }
  return info;
}

export const collectionPath = (id) => `/api/collections/${encodeURIComponent(id)}`;
export const collectionPage = (id) => `/knowledge/${encodeURIComponent(id)}`;

/** Files in these states are still being worked on: the page polls while any is. */
export const BUSY_STATES = new Set(['queued', 'extracting', 'embedding']);

export const STATE_LABEL = {
  queued: 'Queued', extracting: 'Extracting text', embedding: 'Embedding', ready: 'Ready', failed: 'Failed', uploading: 'Uploading',
};

/** The extension of `name`, lower case, without the dot ('' when none). */
export function extensionOf(name) {
  const base = String(name || '').split('/').pop();
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

/** Why a file was refused, in words: the server's message, or one for the status. */
export function refusalText(err, settings) {
  const text = refusal(err, settings);
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function refusal(err, settings) {
  if (err.code === 'file_too_large' || err.status === 413) {
    return settings?.max_file_bytes ? `Too large: the limit is ${fmtBytes(settings.max_file_bytes)} per file.` : (err.message || 'Too large.');
  }
  if (err.code === 'unsupported_file_type' || err.status === 415) {
    const said = err.message || 'This type of file is not supported.';
    const kinds = settings?.accepted || [];
    // The accepted types, unless the server's message names some already.
    const listed = kinds.filter((k) => new RegExp(`\\.?\\b${k}\\b`, 'i').test(said)).length >= 2;
    return kinds.length && !listed ? `${said} Accepted: ${kinds.join(', ')}.` : said;
  }
  if (err.code === 'empty_file') return err.message || 'The file is empty.';
  if (err.status === 403) return 'You may not change this collection.';
  if (err.status === 0) return err.message;
  return err.message || 'The file could not be added.';
}

/** "3 documents · 41 chunks" */
export function countsText(c) {
  const docs = Number(c.documents || 0);
  const chunks = Number(c.chunks || 0);
  return `${docs} document${docs === 1 ? '' : 's'} · ${chunks} chunk${chunks === 1 ? '' : 's'}`;
}
