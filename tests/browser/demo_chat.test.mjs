// Sign-in flows and a chat with the built-in demo model (no fake upstream).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, signInViaUi, artifact, unnamedControls } from './harness.mjs';

let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

test('register, sign in, session survives reload, sign out', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'alice');
  // first user is admin: the Admin link is visible
  await page.getByRole('link', { name: 'Admin' }).waitFor();
  await page.reload();
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  // wrong password shows an error, right one signs in
  await page.getByLabel('Username').fill('alice');
  await page.getByLabel('Password').fill('wrong password!!');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: /wrong|invalid/i }).waitFor();
  await page.screenshot({ path: artifact('sign-in.png') });
  await signInViaUi(page, server.url, 'alice');
  // after sign-out, the refresh cookie is gone: a reload lands on sign-in
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  await page.reload();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  assert.deepEqual(page.errors.filter((e) => !/401|Failed to load resource/.test(e)), []);
  await page.context().close();
});

test('change password from the account button: other sessions end, the new one works', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'petra');
  const other = await newPage(browser);
  await signInViaUi(other, server.url, 'petra');
  await page.getByRole('button', { name: /Account petra/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Account' });
  await dialog.getByLabel('Current password').fill('wrong password!!');
  await dialog.getByLabel(/New password/).fill('a brand new passphrase');
  await dialog.getByRole('button', { name: 'Change password' }).click();
  await dialog.getByRole('alert').filter({ hasText: /password/i }).waitFor();
  await dialog.getByLabel('Current password').fill('correct horse battery staple');
  await dialog.getByRole('button', { name: 'Change password' }).click();
  await page.getByText(/Password changed/).waitFor();
  // this tab stays signed in (a reload uses the new refresh cookie); the other one is out
  await page.reload();
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  await other.reload();
  await other.getByRole('button', { name: 'Sign in' }).waitFor();
  await signInViaUi(other, server.url, 'petra', 'a brand new passphrase');
  await page.context().close();
  await other.context().close();
});

test('chat with the demo model: streamed answer and a tool card', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'bob');
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('what time is it?');
  await box.press('Enter');
  const card = page.locator('.tool-card').filter({ hasText: 'current_time' });
  await card.waitFor();
  await card.locator('.tool-status.ok').waitFor();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: '[demo]' }).first().waitFor();
  // the card is collapsed by default and opens on click
  assert.equal(await card.evaluate((d) => d.open), false);
  await card.locator('summary').click();
  await card.getByText('Result').waitFor();
  // Shift+Enter makes a newline, Enter sends
  await box.fill('what is 2+3');
  await box.press('Shift+Enter');
  assert.equal(await box.inputValue(), 'what is 2+3\n');
  await box.press('Enter');
  await page.locator('.tool-card').filter({ hasText: 'calculator' }).locator('.tool-status.ok').waitFor();
  await page.locator('.msg-assistant').nth(1).locator('.text-seg').filter({ hasText: '5' }).waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();
  // the conversation is listed and survives a reload with what was stored
  await page.getByRole('link', { name: /what time is it/ }).waitFor();
  await page.reload();
  await page.locator('.tool-card').filter({ hasText: 'calculator' }).waitFor();
  await page.locator('.msg-user').filter({ hasText: 'what time is it?' }).waitFor();
  await page.screenshot({ path: artifact('chat-desktop.png'), fullPage: true });
  assert.deepEqual(await unnamedControls(page), [], 'every control has an accessible name');

  // rename and search
  await page.getByRole('button', { name: /^Rename what time is it/ }).click();
  await page.getByRole('textbox', { name: 'New title' }).fill('Clock questions');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'Clock questions' }).waitFor();
  await page.getByRole('searchbox', { name: 'Search chats' }).fill('zzz');
  await page.getByText('No chats match your search.').waitFor();
  await page.getByRole('searchbox', { name: 'Search chats' }).fill('clock');
  await page.getByRole('link', { name: /Clock questions/ }).waitFor();
  // new chat then delete the old one
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  await page.getByRole('button', { name: 'Delete Clock questions' }).click();
  await page.getByRole('group', { name: 'Confirm delete' }).getByRole('button', { name: 'Delete' }).click();
  await page.getByText('No chats match your search.').waitFor();
  await page.context().close();
});

test('works at 360 px wide', async () => {
  const page = await newPage(browser, { viewport: { width: 360, height: 740 } });
  await registerViaUi(page, server.url, 'carol');
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('what is 6*7');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: '42' }).waitFor();
  // nothing overflows horizontally
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `page overflows by ${overflow}px`);
  // the sidebar opens from the menu button
  await page.getByRole('button', { name: 'Show conversations' }).click();
  await page.getByRole('button', { name: 'New chat' }).waitFor({ state: 'visible' });
  await page.waitForTimeout(300); // slide-in transition
  await page.screenshot({ path: artifact('chat-360-sidebar.png') });
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.getByRole('button', { name: 'Files', exact: true }).click();
  await page.getByRole('heading', { name: 'Workspace files' }).waitFor();
  await page.screenshot({ path: artifact('chat-360-files.png') });
  await page.getByRole('button', { name: 'Close files' }).click();
  // the admin console fits too (carol is a member: use the first user's screens elsewhere)
  const overflow2 = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow2 <= 0, `page overflows by ${overflow2}px`);
  await page.context().close();
});

test('markdown renderer: structure and URL policy', async () => {
  const page = await newPage(browser);
  await page.goto(server.url);
  const out = await page.evaluate(async () => {
    const { renderMarkdown } = await import('/js/markdown.js');
    const html = (src) => renderMarkdown(src).innerHTML;
    return {
      lists: html('- a\n- b\n  - nested\n\n1. one\n2. two'),
      heading: html('# Title\n\nSome *it* and **bold** and `co<de>` and ~~gone~~'),
      quote: html('> quoted\n\n---'),
      links: html('[a](https://x.test/a_(b)) <javascript:alert(1)> [d](data:text/html,hi) [p](//evil.test) [m](mailto:a@b.test) https://bare.test/x.'),
      code: html('```js\nconst a = "<b>";\n```'),
      table: html('| a | b |\n|:-|-:|\n| 1 | 2 |'),
      snake: html('call my_function_name and __init__ please'),
    };
  });
  assert.match(out.lists, /<ul><li>a<\/li><li>b<ul><li>nested<\/li><\/ul><\/li><\/ul><ol><li>one<\/li><li>two<\/li><\/ol>/);
  assert.match(out.heading, /<h3 class="md-h">Title<\/h3>/);
  assert.match(out.heading, /<em>it<\/em>.*<strong>bold<\/strong>.*<code>co&lt;de&gt;<\/code>.*<del>gone<\/del>/);
  assert.match(out.quote, /<blockquote><p>quoted<\/p><\/blockquote><hr>/);
  assert.match(out.links, /<a href="https:\/\/x.test\/a_\(b\)" target="_blank" rel="noopener noreferrer nofollow">a<\/a>/);
  assert.match(out.links, /<a href="mailto:a@b.test"/);
  assert.match(out.links, /<a href="https:\/\/bare.test\/x"[^>]*>https:\/\/bare.test\/x<\/a>\./);
  assert.doesNotMatch(out.links, /href="(javascript|data)|href="\/\//i);
  assert.match(out.code, /<code class="language-js">const a = "&lt;b&gt;";<\/code>/);
  assert.match(out.table, /<th class="">a<\/th>|<th>a<\/th>/);
  assert.match(out.table, /<td class="align-right">2<\/td>/);
  assert.doesNotMatch(out.snake, /<em>|<strong>function/);
  await page.context().close();
});
