// The admin console's "MCP servers" page and the server badge on chat tool cards, against the
// real mcp-server-time (stdio, from the config file) installed by tests/mcp/install.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  startServer, launchBrowser, newPage, registerViaUi, artifact, FakeUpstream, freePort, unnamedControls,
} from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = path.resolve(here, '..', 'mcp');

let upstream;
let server;
let browser;
let page;

before(async () => {
  execFileSync('bash', [path.join(peers, 'install.sh')], { stdio: 'inherit' });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agentchat-mcp-browser-'));
  const config = path.join(dir, 'agentchat.toml');
  writeFileSync(config, [
    '[[mcp_servers]]',
    'name = "time"',
    `command = ${JSON.stringify(path.join(peers, '.venv', 'bin', 'mcp-server-time'))}`,
    'args = ["--local-timezone", "UTC"]',
    '',
    // A server listing more tools than tools.mcp.max_tools_per_server (128): degraded.
    '[[mcp_servers]]',
    'name = "bulk"',
    `command = ${JSON.stringify(path.join(peers, '.venv', 'bin', 'python'))}`,
    `args = [${JSON.stringify(path.join(peers, 'agentchat_test_server.py'))}, "--bulk-pages", "1", "--bulk-per-page", "200"]`,
    'timeout_ms = 20000',
    '',
  ].join('\n'));
  upstream = await new FakeUpstream().start();
  [server, browser] = await Promise.all([startServer({ upstream, env: { AGENTCHAT_CONFIG: config } }), launchBrowser()]);
  page = await newPage(browser);
  await registerViaUi(page, server.url, 'root'); // first user: admin
});
after(async () => {
  await browser?.close();
  await server?.stop();
  await upstream?.stop();
});

test('MCP servers page: state, tools with annotations, add an HTTP server that is down', async () => {
  await page.goto(`${server.url}/admin/mcp`);
  const card = page.locator('.mcp-server[data-server="time"]');
  // The first connection may still be under way (a Python interpreter starting on a busy CI
  // machine): reload until it is up.
  for (let i = 0; i < 90; i += 1) {
    if (await card.locator('.mcp-state[data-state="connected"]').count()) break;
    await page.waitForTimeout(1000);
    await page.reload();
  }
  try {
    await card.locator('.mcp-state[data-state="connected"]').waitFor({ timeout: 5000 });
  } catch (e) {
    await page.screenshot({ path: artifact('debug-mcp.png'), fullPage: true });
    console.log('MCP PAGE', (await page.locator('main').innerHTML()).slice(0, 2000), JSON.stringify(page.errors));
    throw e;
  }
  await card.locator('[data-tool="time__get_current_time"]').waitFor();
  await card.getByText('config file').waitFor();
  assert.equal(await card.getByRole('button', { name: 'Remove time' }).count(), 0, 'config servers are read-only');

  const closed = await freePort();
  await page.getByLabel('Name').fill('down');
  await page.getByLabel('Streamable HTTP URL').fill(`http://127.0.0.1:${closed}/mcp`);
  await page.getByLabel('Timeout (ms)').fill('1500');
  await page.getByRole('button', { name: 'Add server' }).click();
  const down = page.locator('.mcp-server[data-server="down"]');
  await down.locator('.mcp-state[data-state="error"]').waitFor({ timeout: 15000 });
  await down.locator('.mcp-error').waitFor();
  await down.getByRole('button', { name: 'Disable down' }).click();
  await page.locator('.mcp-server[data-server="down"] .mcp-state[data-state="disabled"]').waitFor();
  assert.deepEqual(await unnamedControls(page), []);
  await page.screenshot({ path: artifact('admin-mcp-servers.png'), fullPage: true });
});

test('a server past the listing limits shows as degraded, with what was left out', async () => {
  await page.setViewportSize({ width: 360, height: 800 });
  await page.goto(`${server.url}/admin/mcp`);
  const card = page.locator('.mcp-server[data-server="bulk"]');
  for (let i = 0; i < 60; i += 1) {
    if (await card.locator('.mcp-state[data-state="degraded"]').count()) break;
    await page.waitForTimeout(1000);
    await page.reload();
  }
  await card.locator('.mcp-state[data-state="degraded"]').waitFor({ timeout: 5000 });
  assert.equal(await card.locator('.mcp-state').innerText(), 'Degraded');
  const notes = card.locator('.mcp-notes li');
  assert.equal(await notes.count(), 1);
  assert.match(await notes.first().innerText(), /77 more tools than tools\.mcp\.max_tools_per_server \(128\) were left out/);
  assert.equal(await card.locator('.mcp-tools li').count(), 128);
  // At 360 px the notes wrap inside the card: nothing sticks out sideways.
  const box = await card.boundingBox();
  const notesBox = await card.locator('.mcp-notes').boundingBox();
  assert.ok(notesBox.x >= box.x && notesBox.x + notesBox.width <= box.x + box.width + 1, 'notes fit the card');
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'no sideways scroll');
  await page.screenshot({ path: artifact('admin-mcp-degraded-360.png'), fullPage: false });
  await page.setViewportSize({ width: 1280, height: 800 });
});

test('the roles matrix offers the server wildcard; the tool card shows the server', async () => {
  await page.goto(`${server.url}/admin/roles`);
  const box = page.getByRole('checkbox', { name: 'Allow time__* for admin' });
  await box.check();
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();

  upstream.push({ toolCalls: [{ name: 'time__get_current_time', arguments: { timezone: 'UTC' } }] });
  await page.goto(`${server.url}/`);
  const box2 = page.getByRole('textbox', { name: 'Message' });
  await box2.fill('what time is it in UTC?');
  await page.getByRole('button', { name: 'Send' }).click();
  const toolCard = page.locator('.tool-card[data-tool="time__get_current_time"]');
  await toolCard.locator('.tool-status.ok').waitFor({ timeout: 20000 });
  assert.equal(await toolCard.locator('.tool-server').textContent(), 'time');
  assert.equal(await toolCard.locator('.tool-name').textContent(), 'get_current_time');
  await page.screenshot({ path: artifact('chat-mcp-tool-card.png'), fullPage: true });
});
