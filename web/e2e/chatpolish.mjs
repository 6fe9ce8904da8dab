// Browser tests against the real daemon for the chat's interrupt choice and
// polish: sending while an approval waits (queue, visible and cancellable,
// kept across a reload), code blocks (label, lazily loaded highlighting,
// Copy), regenerate and edit-and-resend (the daemon supersedes, the export
// and the audit trail keep the record), and the no-model banner against a
// daemon started without a model.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, newPage, shot, test } from './lib.mjs';

async function api(page, daemon, path, init = {}) {
  const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
  const r = await fetch(daemon.url + path, { ...init, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) } });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

const chatId = (page) => decodeURIComponent(new URL(page.url()).pathname.split('/').pop());

export async function runChatPolishFlow({ page, daemon, push, send, waitFor }) {
  const userBubbles = () => page.locator('.msg.user .bubble').allTextContents();

  await test('daemon: sending while an approval waits asks first; a queued message survives a reload, can be cancelled, and runs after the turn', async () => {
    await page.getByRole('link', { name: 'New chat' }).click();
    await push(
      { tool_calls: [{ id: 'call_q_w1', name: 'write_file', arguments: JSON.stringify({ path: '~/queued-note.txt', content: 'kept' }) }] },
      { text: ['Note written.'] },
      { text: ['Here is the summary you queued.'] },
    );
    await send('Write the queued note');
    await page.getByText('Approval needed').waitFor();
    // The second message does not go out on its own: the choice shows.
    await send('Then summarise it');
    const choice = page.getByRole('alertdialog');
    await choice.waitFor();
    assert((await choice.textContent()).includes('Write file'), 'the choice does not name the waiting call');
    await shot(page, 'e2e-pending-choice');
    await choice.getByRole('button', { name: 'Send after this turn' }).click();
    const queued = page.getByLabel('Waiting to send');
    await queued.getByText('Then summarise it').waitFor();
    // A second queued message, cancelled before it runs.
    await send('Actually, also delete everything');
    await page.getByRole('alertdialog').getByRole('button', { name: 'Send after this turn' }).click();
    await queued.getByText('Actually, also delete everything').waitFor();
    await shot(page, 'e2e-queued');
    await queued.locator('li', { hasText: 'Actually, also delete everything' }).getByRole('button', { name: 'Cancel' }).click();
    await queued.getByText('Actually, also delete everything').waitFor({ state: 'detached' });
    // The approval is still waiting, and a reload shows both it and the queue.
    await page.reload();
    await page.getByText('Approval needed').waitFor();
    await page.getByLabel('Waiting to send').getByText('Then summarise it').waitFor();
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('Note written.').waitFor();
    await page.getByText('Here is the summary you queued.').waitFor();
    await page.getByLabel('Waiting to send').waitFor({ state: 'detached' });
    const bubbles = await userBubbles();
    assert(JSON.stringify(bubbles) === JSON.stringify(['Write the queued note', 'Then summarise it']), `user messages: ${JSON.stringify(bubbles)}`);
    assert(readFileSync(join(daemon.home, 'queued-note.txt'), 'utf8') === 'kept', 'the approved write did not run');
  }, page);

  await test('daemon: the highlighter is not in the initial load; a code block gets its label, colours and Copy', async () => {
    const fresh = await newPage(page.context().browser(), { token: daemon.token() });
    try {
      await fresh.page.goto(daemon.url + '/');
      await fresh.page.locator('.conn-live').waitFor();
      const loaded = await fresh.page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name));
      assert(!loaded.some((n) => /\/assets\/highlight-/.test(n)), `highlight chunk loaded up front: ${loaded.join(', ')}`);
    } finally {
      await fresh.ctx.close();
    }
    await page.getByRole('link', { name: 'New chat' }).click();
    await push({ text: ['Here it is:\n\n```python\ndef answer():\n    return 42\n```\n'] });
    await send('Show me code');
    const block = page.locator('.msg.assistant .codeblock').first();
    await block.locator('.code-lang', { hasText: 'python' }).waitFor();
    await block.locator('.hljs-keyword', { hasText: 'def' }).first().waitFor();
    await page.evaluate(() => {
      window.__copied = [];
      navigator.clipboard.writeText = async (t) => void window.__copied.push(t);
    });
    await block.getByRole('button', { name: 'Copy python' }).click();
    await waitFor(async () => (await page.evaluate(() => window.__copied.length)) === 1, 'the code to be copied');
    const copied = await page.evaluate(() => window.__copied[0]);
    assert(copied === 'def answer():\n    return 42\n', `copied ${JSON.stringify(copied)}`);
    await page.getByRole('button', { name: 'Copy reply' }).last().click();
    await waitFor(async () => (await page.evaluate(() => window.__copied.length)) === 2, 'the reply to be copied');
    assert((await page.evaluate(() => window.__copied[1])).includes('```python'), 'Copy reply did not copy the Markdown source');
    await shot(page, 'e2e-codeblock');
  }, page);

  await test('daemon: regenerate and edit-and-resend replace the reply, and the export and audit keep what was replaced', async () => {
    await push({ text: ['A second version.'] });
    await page.getByRole('button', { name: 'Regenerate reply' }).click();
    await page.getByText('A second version.').waitFor();
    await page.locator('.codeblock').waitFor({ state: 'detached' });
    await push({ text: ['In Go instead.'] });
    await page.getByRole('button', { name: 'Edit and resend' }).click();
    const box = page.getByRole('textbox', { name: 'Edited text' });
    assert((await box.inputValue()) === 'Show me code', 'the edit box does not start from the message');
    await box.fill('Show me code in Go');
    await page.getByRole('button', { name: 'Save and send' }).click();
    await page.getByText('In Go instead.').waitFor();
    await page.getByText('A second version.').waitFor({ state: 'detached' });
    await page.reload();
    await page.getByText('In Go instead.').waitFor();
    assert(JSON.stringify(await userBubbles()) === JSON.stringify(['Show me code in Go']), `after edit: ${JSON.stringify(await userBubbles())}`);
    assert((await page.getByText('A second version.').count()) === 0, 'the superseded reply came back on reload');
    const id = chatId(page);
    const ex = await api(page, daemon, `/api/chats/${encodeURIComponent(id)}/export`);
    const superseded = ex.messages.filter((m) => m.superseded_by).map((m) => m.content);
    assert(superseded.includes('Show me code') && superseded.includes('A second version.') && superseded.some((c) => c.includes('```python')), `export superseded: ${JSON.stringify(superseded)}`);
    const audit = await api(page, daemon, `/api/audit?type=chat.rewind&chat=${encodeURIComponent(id)}`);
    assert(audit.events.length === 2, `audit has ${audit.events.length} rewind events`);
    await shot(page, 'e2e-edited-resend');
  }, page);
}

/** The banner against a daemon that has no model: started apart, on its own home. */
export async function runNoModelFlow({ browser, Daemon, bin, dir, port }) {
  await test('daemon without a model: the banner shows the two ways to configure one and nothing is sent', async () => {
    const d = new Daemon(bin, join(dir, 'nomodel'), port, '', '');
    d.noModel = true;
    await d.start();
    // The banner is what a user who skipped first-run setup sees.
    await fetch(d.url + '/api/setup/dismiss', { method: 'POST', headers: { Authorization: `Bearer ${d.token()}` } });
    const p = await newPage(browser, { token: d.token() });
    try {
      await p.page.goto(d.url + '/');
      const banner = p.page.locator('.no-model');
      await banner.waitFor();
      const text = await banner.textContent();
      assert(text.includes('No model is configured') && text.includes('HESTIA_LLM_BASE_URL'), `banner: ${text}`);
      assert((await banner.getByRole('link', { name: 'Settings' }).getAttribute('href')) === '/settings', 'no link to Settings');
      await p.page.getByLabel('Message').fill('hello?');
      assert(await p.page.getByRole('button', { name: 'Send' }).isDisabled(), 'Send is enabled without a model');
      await p.page.getByLabel('Message').press('Enter');
      const token = await p.page.evaluate(() => localStorage.getItem('hestia.token'));
      const r = await fetch(d.url + '/api/chats', { headers: { Authorization: `Bearer ${token}` } });
      const { chats } = await r.json();
      assert((chats ?? []).length === 0, `a chat was created without a model: ${JSON.stringify(chats)}`);
      await shot(p.page, 'e2e-no-model');
    } finally {
      await p.ctx.close();
      await d.stop();
    }
  });
}
