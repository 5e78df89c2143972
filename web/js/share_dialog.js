// "Share" in the chat header: makes a read-only link to a snapshot of the open chat
// (POST /api/conversations/{id}/shares) — for the members of this server, or for anyone
// with the link when the role may (public is shown disabled, with the reason, otherwise) —
// with an expiry and tool outputs hidden if asked, and shows it with a Copy button. The
// chat's existing links are listed with how often each was read; each can hide or show the
// tools' details and be revoked.

import { h, clear, uid, icon, toast, fmtDate, fmtRelative } from './dom.js';
import * as api from './api.js';

const EXPIRIES = [['', 'Never'], ['1', 'In 1 day'], ['7', 'In 7 days'], ['30', 'In 30 days']];

async function copyText(text, input) {
  try {
    await navigator.clipboard.writeText(text);
    toast('Link copied.');
  } catch {
    input?.select();
    toast('Copying is not allowed here: the link is selected, copy it yourself.', 'error');
  }
}

/** The header button; `current()` is the open chat (or null). */
export function shareButton(current) {
  const btn = h('button', { type: 'button', class: 'btn btn-ghost share-btn', 'aria-haspopup': 'dialog', 'aria-label': 'Share this chat', title: 'Share a read-only link to this chat' },
    icon('upload'), h('span', { class: 'share-label' }, 'Share'));
  btn.hidden = true;
  btn.addEventListener('click', () => {
    const conv = current();
    if (conv) openShareDialog(conv, btn);
  });
  return { el: btn, update: () => { btn.hidden = !current(); } };
}

function radio(name, value, label, hint, { checked = false, disabled = false } = {}) {
  const id = uid('share-scope');
  const input = h('input', { type: 'radio', name, value, id, checked, disabled });
  return {
    input,
    el: h('div', { class: 'share-choice' }, input,
      h('label', { for: id }, label, hint ? h('span', { class: 'small muted' }, hint) : null)),
  };
}

function shareItem(s, reload) {
  const off = s.state !== 'live';
  const redact = h('input', { type: 'checkbox', checked: s.redact_tools, disabled: off });
  redact.addEventListener('change', async () => {
    redact.disabled = true;
    try {
      await api.patch(`/api/shares/${encodeURIComponent(s.id)}`, { redact_tools: redact.checked });
      toast(redact.checked ? 'Tool outputs are now hidden on this link.' : 'Tool outputs are now shown on this link.');
    } catch (err) {
      redact.checked = !redact.checked;
      toast(`Could not change the link: ${err.message}`, 'error');
    } finally {
      redact.disabled = off;
    }
  });
  const copy = h('button', { type: 'button', class: 'btn btn-small', disabled: off }, 'Copy');
  copy.setAttribute('aria-label', `Copy the ${s.scope} link`);
  copy.addEventListener('click', () => copyText(s.url));
  const revoke = h('button', { type: 'button', class: 'btn btn-small btn-danger' }, 'Revoke');
  revoke.setAttribute('aria-label', `Revoke the ${s.scope} link made ${fmtDate(s.created_at)}`);
  revoke.addEventListener('click', async () => {
    revoke.disabled = true;
    try {
      await api.del(`/api/shares/${encodeURIComponent(s.id)}`);
      toast('Link revoked: it no longer opens.');
      await reload();
    } catch (err) {
      revoke.disabled = false;
      toast(`Could not revoke the link: ${err.message}`, 'error');
    }
  });
  const views = s.views === 1 ? '1 view' : `${s.views} views`;
  const meta = [views];
  if (s.last_viewed_at) meta.push(`last ${fmtRelative(s.last_viewed_at)}`);
  meta.push(s.expires_at ? `${off ? 'expired' : 'expires'} ${fmtDate(s.expires_at)}` : 'never expires');
  return h('li', { class: `share-item${off ? ' is-off' : ''}`, dataset: { shareId: s.id } },
    h('div', { class: 'share-item-head' },
      h('span', { class: 'pill' }, s.scope === 'public' ? 'public' : 'org'),
      off ? h('span', { class: 'pill' }, 'expired') : null,
      h('span', { class: 'share-item-url' }, s.url)),
    h('p', { class: 'small muted share-item-meta', style: null }, `${meta.join(' · ')} · ${s.message_count} messages`),
    h('div', { class: 'share-item-actions' }, h('label', null, redact, 'Hide tool outputs'), copy, revoke));
}

function openShareDialog(conv, opener) {
  const err = h('div', { class: 'form-error', role: 'alert' });
  const org = radio('scope', 'org', 'People signed in to this server', null, { checked: true });
  const pub = radio('scope', 'public', 'Anyone with the link', null, { disabled: true });
  const pubWhy = h('p', { class: 'small muted share-public-why' });
  pubWhy.hidden = true;
  const expiryId = uid('share-expiry');
  const expiry = h('select', { id: expiryId, name: 'expires' }, EXPIRIES.map(([v, label]) => h('option', { value: v }, label)));
  const redactId = uid('share-redact');
  const redact = h('input', { type: 'checkbox', id: redactId, name: 'redact_tools' });
  const create = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create link');
  const close = h('button', { type: 'button', class: 'btn btn-ghost' }, 'Close');
  const madeInput = h('input', { type: 'text', readonly: true, 'aria-label': 'The new link' });
  const madeCopy = h('button', { type: 'button', class: 'btn btn-primary' }, 'Copy link');
  madeCopy.addEventListener('click', () => copyText(madeInput.value, madeInput));
  const made = h('div', { class: 'share-made', role: 'status' }, madeInput, madeCopy);
  made.hidden = true;
  const list = h('ul', { class: 'share-list', 'aria-label': 'Links to this chat' });
  const listNote = h('p', { class: 'small muted' }, 'Loading…');
  const form = h('form', { class: 'share-form', novalidate: true },
    h('h2', { class: 'auth-title' }, 'Share this chat'),
    h('p', { class: 'small muted' }, 'The link shows this chat as it is now, read-only: later messages are not shown. Every view is recorded.'),
    h('fieldset', null, h('legend', null, 'Who can open the link'), org.el, pub.el, pubWhy),
    h('div', { class: 'field' }, h('label', { for: expiryId }, 'Link expires'), expiry),
    h('div', { class: 'share-choice' }, redact,
      h('label', { for: redactId }, 'Hide tool outputs', h('span', { class: 'small muted' }, 'Tool results and the arguments of tool calls show as hidden.'))),
    err, made,
    h('div', { class: 'dialog-actions' }, close, create),
    h('h3', { class: 'small' }, 'Links to this chat'), listNote, list);
  const dialog = h('dialog', { class: 'account-dialog share-dialog', 'aria-label': 'Share this chat' }, form);
  close.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => { dialog.remove(); opener.focus(); });

  const path = `/api/conversations/${encodeURIComponent(conv.id)}/shares`;
  const reload = async () => {
    try {
      const res = await api.get(path);
      const mayPublic = Boolean(res.can_share_public);
      pub.input.disabled = !mayPublic;
      pubWhy.hidden = mayPublic;
      pubWhy.textContent = mayPublic ? '' : 'Your role may not make public links: an admin decides which roles may.';
      const shown = (res.items || []).filter((s) => s.state !== 'revoked');
      clear(list).append(...shown.map((s) => shareItem(s, reload)));
      listNote.textContent = shown.length ? '' : 'No links yet.';
      listNote.hidden = shown.length > 0;
    } catch (e) {
      listNote.hidden = false;
      listNote.textContent = `Could not load the links: ${e.message}`;
    }
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const body = { scope: pub.input.checked ? 'public' : 'org', redact_tools: redact.checked };
    if (expiry.value) body.expires_at = new Date(Date.now() + Number(expiry.value) * 86400000).toISOString();
    create.disabled = true;
    try {
      const s = await api.post(path, body);
      madeInput.value = s.url;
      made.hidden = false;
      madeInput.select();
      await reload();
      madeCopy.focus();
    } catch (e) {
      err.textContent = e.code === 'nothing_to_share' ? 'This chat has no messages yet: send one first.' : (e.message || 'The link could not be made.');
    } finally {
      create.disabled = false;
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  org.input.focus();
  reload();
}
