// Attachments in the composer (issue 22 item 3): the paperclip and a drop onto the chat upload
// to the workspace with progress on a chip in the composer (cancel, errors on the chip, not a
// toast); sending attaches the files, the demo model reads them, and the sent message shows
// them after a reload too. Works at 360 px and by keyboard.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, apiLogin, artifact, layoutProblems } from './harness.mjs';

const PHONE = { width: 360, height: 740 };
let demo;
let small;
let browser;

before(async () => {
  [demo, small, browser] = await Promise.all([
    startServer(),
    // Tight limits: 4 KB per file, 6 KB per workspace.
    startServer({ env: { AGENTCHAT_WORKSPACE_MAX_FILE_BYTES: '4096', AGENTCHAT_WORKSPACE_MAX_BYTES: '6144' } }),
    launchBrowser(),
  ]);
});
after(async () => {
  await browser?.close();
  await demo?.stop();
  await small?.stop();
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));
const file = (name, text) => ({ name, mimeType: 'text/plain', buffer: Buffer.from(text) });
const chip = (page, name) => page.locator('.composer .attach-chip').filter({ hasText: name });

async function attachWithPaperclip(page, ...files) {
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles(files);
}

async function workspaceFiles(server, username) {
  const { call } = await apiLogin(server.url, username, undefined, { register: false });
  return (await call('GET', '/api/files')).json.items.map((f) => f.path);
}

test('paperclip upload, send: the demo model reads the file; the message keeps its file after a reload', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, demo.url, 'clipper');
  await attachWithPaperclip(page, file('plan.md', '# Quarterly plan\n\nShip the attachments.\n'));
  await chip(page, 'plan.md').and(page.locator('[data-state=done]')).waitFor();
  assert.match(await chip(page, 'plan.md').innerText(), /40 B/);
  await page.getByRole('textbox', { name: 'Message' }).fill('Summarise this');
  await page.getByRole('button', { name: 'Send' }).click();

  const answer = page.locator('.msg-assistant').last();
  await answer.locator('.text-seg').filter({ hasText: 'I read the attached file plan.md' }).waitFor();
  assert.match(await answer.innerText(), /read_file/);
  assert.match(await answer.innerText(), /Ship the attachments\./);
  // The composer is empty again; the sent question shows its file.
  assert.equal(await page.locator('.composer .attach-chip').count(), 0);
  const sent = page.locator('.msg-user').last();
  await sent.getByRole('button', { name: /Download plan\.md/ }).waitFor();

  // Stored: the message names the file (and a reload draws it from there).
  const { call } = await apiLogin(demo.url, 'clipper', undefined, { register: false });
  const convs = await call('GET', '/api/conversations');
  const conv = await call('GET', `/api/conversations/${convs.json.items[0].id}`);
  assert.deepEqual(conv.json.messages[0].attachments.map(({ path, bytes }) => ({ path, bytes })), [{ path: 'plan.md', bytes: 40 }]);
  assert.match(conv.json.messages[0].attachments[0].sha256, /^[0-9a-f]{64}$/);
  await page.reload();
  await page.locator('.msg-user').last().getByRole('button', { name: /Download plan\.md/ }).waitFor();
  assert.equal(await page.locator('.msg-user .msg-file').count(), 1);

  // A second file of the same name never replaces the first.
  await attachWithPaperclip(page, file('plan.md', 'other'));
  await chip(page, 'plan (2).md').and(page.locator('[data-state=done]')).waitFor();
  assert.deepEqual((await workspaceFiles(demo, 'clipper')).sort(), ['plan (2).md', 'plan.md']);
  // Removing an uploaded file takes it off the message and out of the workspace.
  await chip(page, 'plan (2).md').getByRole('button', { name: 'Remove plan (2).md' }).click();
  assert.equal(await page.locator('.composer .attach-chip').count(), 0);
  await page.waitForFunction(async () => {
    const r = await fetch('/api/files', { headers: { Authorization: `Bearer ${JSON.parse(sessionStorage.getItem('agentchat.access')).token}` } });
    return (await r.json()).items.length === 1;
  });

  // Editing the question sends it again with its file.
  const question = page.locator('.msg-user').last();
  await question.getByRole('button', { name: 'Edit' }).click();
  await question.getByRole('textbox', { name: 'Edit your message' }).fill('Describe it');
  await question.getByRole('button', { name: 'Save and send' }).click();
  await page.locator('.msg-user .plain').filter({ hasText: 'Describe it' }).waitFor();
  await page.locator('.msg-assistant').last().getByRole('button', { name: 'Regenerate' }).waitFor();
  assert.equal(await page.locator('.msg-user').count(), 1);
  await page.locator('.msg-user').getByRole('button', { name: /Download plan\.md/ }).waitFor();
  const edited = await call('GET', `/api/conversations/${convs.json.items[0].id}`);
  assert.equal(edited.json.messages[0].content, 'Describe it');
  assert.deepEqual(edited.json.messages[0].attachments.map(({ path, bytes }) => ({ path, bytes })), [{ path: 'plan.md', bytes: 40 }]);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('progress shows on the chip while uploading, and cancel stops the upload', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, demo.url, 'slowpoke');
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: 64 * 1024 });
  await attachWithPaperclip(page, { name: 'big.log', mimeType: 'text/plain', buffer: Buffer.alloc(1024 * 1024, 'x') });
  const big = chip(page, 'big.log');
  await big.and(page.locator('[data-state=uploading]')).waitFor();
  // The bar moves in place, inside the composer.
  await page.waitForFunction(() => {
    const bar = document.querySelector('.composer .attach-chip[data-state=uploading] progress');
    return bar && bar.value > 0 && bar.value < 100;
  }, null, { timeout: 20000 });
  assert.match(await big.innerText(), /\d+% of 1\.0 MB/);
  assert.equal(await page.locator('#toasts .toast').count(), 0, 'no toast over the composer');
  await page.screenshot({ path: artifact('attach-progress.png') });
  // Sending waits for uploads, and says so on the composer.
  await page.getByRole('textbox', { name: 'Message' }).fill('too soon');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.attach-note').filter({ hasText: 'Wait until the files are uploaded' }).waitFor();
  assert.equal(await page.locator('.msg-user').count(), 0);

  await big.getByRole('button', { name: 'Cancel upload of big.log' }).click();
  assert.equal(await page.locator('.composer .attach-chip').count(), 0);
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  // Nothing stays in the workspace (the body may have reached the server before the abort:
  // the client deletes what it wrote).
  let left = await workspaceFiles(demo, 'slowpoke');
  for (let i = 0; i < 30 && left.length; i++) {
    await page.waitForTimeout(100);
    left = await workspaceFiles(demo, 'slowpoke');
  }
  assert.deepEqual(left, []);
  await page.context().close();
});

test('too large and quota errors stay on their chips; a drop onto the chat attaches', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, small.url, 'dropper');
  // Dragging files over the chat shows the drop zone; dropping attaches them.
  const dt = await page.evaluateHandle(() => {
    const d = new DataTransfer();
    d.items.add(new File(['a'.repeat(3000)], 'first.txt', { type: 'text/plain' }));
    return d;
  });
  await page.dispatchEvent('.chat-main', 'dragenter', { dataTransfer: dt });
  await page.locator('.drop-zone').filter({ hasText: 'Drop files to attach them' }).waitFor({ state: 'visible' });
  await page.dispatchEvent('.chat-main', 'drop', { dataTransfer: dt });
  await page.locator('.drop-zone').waitFor({ state: 'hidden' });
  await chip(page, 'first.txt').and(page.locator('[data-state=done]')).waitFor();

  await attachWithPaperclip(page, file('huge.txt', 'h'.repeat(5000)), file('second.txt', 'b'.repeat(4000)));
  const huge = chip(page, 'huge.txt');
  await huge.and(page.locator('[data-state=error]')).waitFor();
  assert.match(await huge.innerText(), /Too large.*4\.0 KB per file/);
  // The workspace holds 6 KB: the server refuses the second 4 KB file and the chip says why.
  const second = chip(page, 'second.txt');
  await second.and(page.locator('[data-state=error]')).waitFor();
  assert.match(await second.innerText(), /No room/);
  assert.equal(await page.locator('#toasts .toast').count(), 0, 'errors are on the chips, not toasts');
  // Failed files do not go with the message; the uploaded one does.
  await page.getByRole('textbox', { name: 'Message' }).fill('hello');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-user').last().getByRole('button', { name: /Download first\.txt/ }).waitFor();
  assert.equal(await page.locator('.msg-user .msg-file').count(), 1);
  assert.equal(await page.locator('.composer .attach-chip').count(), 0);
  await page.context().close();
});

test('at 360 px the chips wrap without overflow, and it all works by keyboard', async () => {
  const page = await newPage(browser, { viewport: PHONE });
  await registerViaUi(page, demo.url, 'thumbs');
  // Let the page finish loading first: a late render after sign-up can move the focus.
  await page.waitForLoadState('networkidle');
  await page.getByRole('button', { name: 'Attach files' }).waitFor();
  const input = page.getByRole('textbox', { name: 'Message' });
  await input.focus();
  // Shift+Tab from the message reaches the paperclip; Enter opens the file picker.
  await page.keyboard.press('Shift+Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Attach files');
  const chooser = page.waitForEvent('filechooser');
  await page.keyboard.press('Enter');
  const long = 'a-very-long-file-name-that-would-never-fit-on-a-phone-screen-quarterly-report-final-v2.csv';
  await (await chooser).setFiles([file(long, 'x,y\n1,2\n'), file('notes.txt', 'n'), file('todo.md', '- [ ] ship')]);
  for (const name of [long, 'notes.txt', 'todo.md']) await chip(page, name).and(page.locator('[data-state=done]')).waitFor();
  const tops = await page.locator('.composer .attach-chip').evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().top)));
  assert.ok(new Set(tops).size > 1, `the chips wrap onto more than one row: ${tops}`);
  await page.screenshot({ path: artifact('attach-phone.png') });
  assert.deepEqual(await layoutProblems(page), []);

  // Remove a file by keyboard: focus moves on to the next chip's button.
  await chip(page, 'notes.txt').getByRole('button', { name: 'Remove notes.txt' }).focus();
  await page.keyboard.press('Enter');
  assert.equal(await page.locator('.composer .attach-chip').count(), 2);
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Remove todo.md');
  // Send by keyboard: the message carries the two files, drawn as chips that fit.
  await input.fill('Summarise these');
  await input.press('Enter');
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'I read the attached file' }).waitFor();
  await page.locator('.msg-user .msg-file').nth(1).waitFor();
  assert.deepEqual(await layoutProblems(page), []);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});
