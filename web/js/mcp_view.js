// Admin console page "MCP servers": each server's state and last error, the tools it offers
// with their annotations; add, edit, enable/disable, refresh and remove the HTTP ones (stdio
// servers come from the config file and are read-only here). Header values are write-only.

import { h, clear, field, fmtDate, toast } from './dom.js';
import * as api from './api.js';

const STATE_LABEL = {
  connected: 'Connected', degraded: 'Degraded', error: 'Error', disabled: 'Disabled', connecting: 'Connecting…',
};

function annotationPills(a) {
  if (!a || typeof a !== 'object') return [];
  const pills = [];
  if (a.readOnlyHint) pills.push('read-only');
  if (a.destructiveHint) pills.push('destructive');
  if (a.idempotentHint) pills.push('idempotent');
  if (a.openWorldHint) pills.push('open world');
  return pills.map((p) => h('span', { class: `pill ${p === 'destructive' ? 'pill-warn' : ''}` }, p));
}

function serverCard(s, body, onEdit) {
  const state = s.status?.state || 'connecting';
  const badge = h('span', { class: `mcp-state mcp-state-${state}`, dataset: { state } }, STATE_LABEL[state] || state);
  const refresh = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Refresh ${s.name}` }, 'Refresh');
  refresh.addEventListener('click', async () => {
    refresh.disabled = true;
    try {
      await api.post(`/api/admin/mcp-servers/${encodeURIComponent(s.name)}/refresh`);
      toast(`${s.name} refreshed.`);
    } catch (e) { toast(`Refresh failed: ${e.message}`, 'error'); }
    renderMcpServers(body);
  });
  const actions = [refresh];
  if (s.source === 'api') {
    const toggle = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `${s.enabled ? 'Disable' : 'Enable'} ${s.name}` }, s.enabled ? 'Disable' : 'Enable');
    toggle.addEventListener('click', async () => {
      try {
        await api.put(`/api/admin/mcp-servers/${encodeURIComponent(s.name)}`, { url: s.url, enabled: !s.enabled });
        toast(`${s.name} ${s.enabled ? 'disabled' : 'enabled'}.`);
      } catch (e) { toast(`Update failed: ${e.message}`, 'error'); }
      renderMcpServers(body);
    });
    const edit = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Edit ${s.name}` }, 'Edit');
    edit.addEventListener('click', () => onEdit(s));
    const rm = h('button', { type: 'button', class: 'btn btn-small btn-danger', 'aria-label': `Remove ${s.name}` }, 'Remove');
    rm.addEventListener('click', async () => {
      if (rm.dataset.confirm !== '1') { rm.dataset.confirm = '1'; rm.textContent = 'Confirm'; return; }
      try {
        await api.del(`/api/admin/mcp-servers/${encodeURIComponent(s.name)}`);
        toast(`${s.name} removed.`);
      } catch (e) { toast(`Remove failed: ${e.message}`, 'error'); }
      renderMcpServers(body);
    });
    actions.push(toggle, edit, rm);
  }
  const where = s.transport === 'stdio'
    ? `stdio: ${[s.command, ...(s.args || [])].join(' ')}`
    : `HTTP: ${s.url}`;
  const tools = s.tools || [];
  return h('section', { class: 'card mcp-server', dataset: { server: s.name } },
    h('div', { class: 'mcp-head' },
      h('h2', null, s.name), badge,
      h('span', { class: 'pill' }, s.source === 'config' ? 'config file' : 'admin API'),
      s.forward_identity ? h('span', { class: 'pill', title: 'Each request carries a signed token naming the user' }, 'forwards identity') : null,
      h('span', { class: 'mcp-actions' }, actions)),
    h('p', null, h('code', { class: 'wrap-anywhere' }, where)),
    s.status?.error ? h('p', { class: 'form-error mcp-error', role: 'status' }, `Last error: ${s.status.error}`) : null,
    s.status?.notes?.length
      ? h('div', { class: 'banner banner-warn mcp-notes', role: 'status' },
        h('p', null, 'Some tools are left out by the MCP listing limits:'),
        h('ul', null, s.status.notes.map((n) => h('li', null, n))))
      : null,
    h('p', { class: 'muted small' },
      `Checked ${fmtDate(s.status?.checked_at)}`,
      s.status?.protocol_version ? ` · protocol ${s.status.protocol_version}` : '',
      s.headers?.length ? ` · headers: ${s.headers.join(', ')}` : '',
      ` · timeout ${s.timeout_ms} ms`),
    tools.length
      ? h('ul', { class: 'tool-catalog mcp-tools' }, tools.map((t) => h('li', { dataset: { tool: t.name } },
        h('span', { class: 'tool-name' }, t.name), ' ', ...annotationPills(t.annotations), ' ',
        h('span', { class: 'muted' }, t.description || ''))))
      : h('p', { class: 'muted' }, ['connected', 'degraded'].includes(state) ? 'This server offers no tools.' : 'No tools while the server is not connected.'));
}

export async function renderMcpServers(body) {
  clear(body);
  let servers;
  try {
    servers = await api.get('/api/admin/mcp-servers');
  } catch (err) {
    body.append(h('div', { class: 'banner banner-warn', role: 'status' }, `Could not load MCP servers: ${err.message}`));
    return;
  }
  const items = servers.items || [];
  const formCard = h('div', { class: 'card' });

  function drawForm(server) {
    clear(formCard);
    const editing = Boolean(server);
    const name = field('Name', { value: server?.name || '', required: true, pattern: '[a-z0-9\\-]{1,24}', autocomplete: 'off', readonly: editing || null, placeholder: 'github' });
    const url = field('Streamable HTTP URL', { value: server?.url || '', required: true, type: 'url', placeholder: 'https://mcp.example.com/mcp' });
    const timeout = field('Timeout (ms)', { value: String(server?.timeout_ms || 30000), type: 'number', min: '1', max: '600000' });
    const headers = field('Headers (JSON object)', { rows: '3', class: 'mono', spellcheck: 'false' }, 'textarea');
    headers.input.value = '{}';
    const ident = h('input', { type: 'checkbox', id: 'mcp-ident', checked: Boolean(server?.forward_identity) });
    const enabled = h('input', { type: 'checkbox', id: 'mcp-enabled', checked: server ? Boolean(server.enabled) : true });
    const err = h('p', { class: 'form-error', role: 'alert' });
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    cancel.addEventListener('click', () => drawForm(null));
    const form = h('form', { class: 'stack-form', 'aria-label': editing ? `Edit ${server.name}` : 'Add an MCP server' },
      h('h2', null, editing ? `Edit ${server.name}` : 'Add an MCP server'),
      h('p', { class: 'muted small' }, 'Servers added here speak Streamable HTTP. Programs (stdio servers) can only be configured in the config file.'),
      h('div', { class: 'form-row' }, name.wrap, timeout.wrap), url.wrap, headers.wrap,
      editing && server.headers?.length ? h('p', { class: 'muted small' }, `Stored headers: ${server.headers.join(', ')}. Leave {} to keep them; entering headers replaces them all.`) : null,
      h('div', { class: 'field-inline' }, ident, h('label', { for: 'mcp-ident' }, 'Forward the user\'s identity (signed token, verifiable at /.well-known/jwks.json)')),
      h('div', { class: 'field-inline' }, enabled, h('label', { for: 'mcp-enabled' }, 'Enabled')),
      err,
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, editing ? 'Save server' : 'Add server'), editing ? cancel : null));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      let hdrs;
      try { hdrs = JSON.parse(headers.input.value || '{}'); } catch { err.textContent = 'Headers must be a valid JSON object.'; headers.input.focus(); return; }
      const payload = { url: url.input.value.trim(), timeout_ms: Number(timeout.input.value), forward_identity: ident.checked, enabled: enabled.checked };
      if (!editing || Object.keys(hdrs).length) payload.headers = hdrs;
      try {
        if (editing) await api.put(`/api/admin/mcp-servers/${encodeURIComponent(server.name)}`, payload);
        else await api.post('/api/admin/mcp-servers', { name: name.input.value.trim(), ...payload });
        toast(editing ? 'Server saved.' : 'Server added. Allow its tools for roles under “Roles & tools”.');
        renderMcpServers(body);
      } catch (e2) { err.textContent = e2.message; }
    });
    formCard.append(form);
  }

  const list = h('div', { class: 'mcp-list' });
  if (!items.length) list.append(h('div', { class: 'card' }, h('p', { class: 'muted' }, 'No MCP servers yet.')));
  for (const s of items) list.append(serverCard(s, body, (srv) => { drawForm(srv); formCard.scrollIntoView?.({ block: 'nearest' }); }));
  drawForm(null);
  body.append(list, formCard);
}
