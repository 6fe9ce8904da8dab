// The background plane and long-term memory against the real daemon
// (started by daemon.mjs with the scripted model): a user job is added and
// run from the Jobs page and its run shows in the history; a failed run
// becomes a notification the inbox shows and opens; a file watch is
// created, paused, fired on resume and deleted from the Notifications
// page; the Memory page lists and searches wiki pages written on disk, and
// a fact proposed from a chat is accepted into USER.md.
//
// Every wait is on a condition with a generous deadline: the daemon's
// background work (scheduler, watch engine, wiki watcher) runs on its own
// time, and CI machines are slow.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, shot, test } from './lib.mjs';

const LONG = 60_000;

async function api(page, daemon, method, path, body) {
  const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
  const r = await fetch(daemon.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

export async function runBackgroundFlow({ page, daemon, push, send, waitFor, fake }) {
  const job = 'e2e-briefing';

  await test('daemon: a job added on the Jobs page runs on demand and its run shows in the history', async () => {
    await page.goto(daemon.url + '/jobs');
    const form = page.getByRole('form', { name: 'New job' });
    await form.getByPlaceholder('morning-briefing').fill(job);
    // A schedule that never comes due while the test runs: only the manual
    // runs below happen.
    await form.getByLabel('Schedule', { exact: true }).fill('0 3 1 1 *');
    await form.getByPlaceholder("Give me a briefing of today's mail").fill('Give me a short briefing');
    await form.getByRole('button', { name: 'Add job' }).click();
    const row = page.locator('tr', { has: page.getByRole('button', { name: job, exact: true }) });
    await row.waitFor({ timeout: LONG });
    assert((await row.textContent()).includes('cron 0 3 1 1 *'), `job row: ${await row.textContent()}`);
    // The built-in jobs are listed too.
    await page.getByRole('button', { name: 'mail.ops', exact: true }).waitFor();

    await push({ text: ['Nothing urgent today.'] });
    await row.getByRole('button', { name: 'Run now' }).click();
    await page.getByText(new RegExp(`Started run \\d+ of ${job}\\.`)).waitFor();
    const history = page.getByRole('region', { name: `History of ${job}` });
    await history.waitFor();
    await waitFor(async () => {
      if ((await history.locator('li', { hasText: 'manual' }).filter({ hasText: /\bok\b/ }).count()) > 0) return true;
      await page.getByRole('button', { name: 'Refresh' }).click();
      return false;
    }, 'the manual run to finish ok in the history', LONG);
    const runs = await api(page, daemon, 'GET', `/api/jobs/${job}/runs`);
    assert(runs.runs.length === 1 && runs.runs[0].trigger === 'manual' && runs.runs[0].status === 'ok', `runs: ${JSON.stringify(runs.runs)}`);
    // The run's reply is in the job's own chat.
    const chats = await api(page, daemon, 'GET', '/api/chats');
    assert(chats.chats.some((c) => c.title === `Job: ${job}`), 'no chat for the job run');
    await shot(page, 'e2e-jobs-run');
  }, page);

  await test('daemon: a failed job run is notified; the inbox shows it, marks it read and opens the jobs page', async () => {
    await push({ status: 400, body: JSON.stringify({ error: { message: 'model exploded', type: 'invalid_request_error' } }) });
    await api(page, daemon, 'POST', `/api/jobs/${job}/run`);
    await page.goto(daemon.url + '/notifications');
    const inbox = page.getByRole('region', { name: 'Inbox' });
    const item = inbox.getByRole('listitem', { name: new RegExp(`^Job ${job} (error|timeout)$`) });
    // The inbox follows notification.created live; Refresh is the fallback.
    await waitFor(async () => {
      if ((await item.count()) > 0) return true;
      await inbox.getByRole('button', { name: 'Refresh' }).click();
      return false;
    }, 'the failed-job notification in the inbox', LONG);
    await item.getByText('new', { exact: true }).waitFor();
    await shot(page, 'e2e-notifications');
    await inbox.getByRole('tab', { name: 'Unread' }).click();
    await item.waitFor();
    await item.getByRole('link', { name: 'Open' }).click();
    await page.waitForURL(/\/jobs$/);
    await page.getByRole('button', { name: job, exact: true }).waitFor();
    const { notifications } = await api(page, daemon, 'GET', '/api/notifications');
    const n = notifications.find((x) => x.title.startsWith(`Job ${job}`));
    assert(n && n.read_at && n.kind === 'job', `notification after opening: ${JSON.stringify(n)}`);
    // Back in the inbox it is no longer unread.
    await page.goto(daemon.url + '/notifications');
    await page.getByRole('region', { name: 'Inbox' }).getByRole('listitem', { name: n.title }).waitFor();
    assert((await page.getByRole('region', { name: 'Inbox' }).getByRole('listitem', { name: n.title }).getByText('new', { exact: true }).count()) === 0, 'opened notification still marked new');
  }, page);

  await test('daemon: quiet hours are saved and a bad window is refused naming the field', async () => {
    const box = page.getByRole('region', { name: 'Notification settings' });
    await box.getByLabel('Quiet hours', { exact: true }).check();
    await box.getByLabel('Quiet from').fill('07:00');
    await box.getByLabel('Quiet until').fill('07:00');
    await box.getByRole('button', { name: 'Save' }).click();
    const alert = box.getByRole('alert');
    await alert.waitFor();
    assert((await alert.textContent()).includes('quiet_end'), `error: ${await alert.textContent()}`);
    await box.getByLabel('Quiet from').fill('22:30');
    await box.getByRole('button', { name: 'Save' }).click();
    await box.getByText('Saved.').waitFor();
    const s = await api(page, daemon, 'GET', '/api/notifications/settings');
    assert(s.quiet_start === '22:30' && s.quiet_end === '07:00', `settings: ${JSON.stringify(s)}`);
    // Leave no quiet hours behind for later tests.
    await box.getByLabel('Quiet hours', { exact: true }).uncheck();
    await box.getByRole('button', { name: 'Save' }).click();
    await waitFor(async () => (await api(page, daemon, 'GET', '/api/notifications/settings')).quiet_start === '', 'quiet hours to be cleared');
  }, page);

  await test('daemon: a file watch is created, paused, fires on resume, and is deleted', async () => {
    const file = join(daemon.home, 'watched.txt');
    writeFileSync(file, 'first version\n');
    await page.goto(daemon.url + '/notifications');
    const box = page.getByRole('region', { name: 'Watches' });
    const form = box.getByRole('form', { name: 'New watch' });
    await form.getByLabel('Source', { exact: true }).selectOption('file');
    await form.getByLabel('Event', { exact: true }).selectOption('file.changed');
    await form.getByLabel('Resource', { exact: true }).fill(file);
    await form.getByLabel('Instruction', { exact: true }).fill('Tell me when watched.txt changes');
    await form.getByRole('button', { name: 'Add watch' }).click();
    const item = box.getByRole('listitem', { name: `Watch file ${file}` });
    await item.waitFor({ timeout: LONG });
    await item.getByText('active', { exact: true }).waitFor();
    await item.getByText('nothing (it only notifies)').waitFor();

    await item.getByRole('button', { name: 'Pause' }).click();
    await item.getByText('paused', { exact: true }).waitFor();
    await item.getByRole('button', { name: 'Resume' }).waitFor();
    let [w] = (await api(page, daemon, 'GET', '/api/watches')).watches.filter((x) => x.ref === file);
    assert(w.state === 'paused', `state after pause: ${w.state}`);

    // A change while paused fires once when the watch resumes (the resume
    // asks for a pass at once); the model writes the message.
    writeFileSync(file, 'second version, longer\n');
    await push({ text: ['watched.txt changed.'] });
    await item.getByRole('button', { name: 'Resume' }).click();
    await item.getByText('active', { exact: true }).waitFor();
    const inbox = page.getByRole('region', { name: 'Inbox' });
    const fired = inbox.getByRole('listitem', { name: 'Watch: file.changed' });
    await waitFor(async () => {
      if ((await fired.count()) > 0) return true;
      await inbox.getByRole('button', { name: 'Refresh' }).click();
      return false;
    }, 'the watch notification', LONG);
    await waitFor(async () => {
      if ((await item.getByText('(1 event)').count()) > 0) return true;
      await box.getByRole('button', { name: 'Refresh' }).click();
      return false;
    }, 'the watch to show its last fire', LONG);
    await shot(page, 'e2e-watches');

    page.once('dialog', (d) => d.accept());
    await item.getByRole('button', { name: 'Delete' }).click();
    await item.waitFor({ state: 'detached', timeout: LONG });
    w = (await api(page, daemon, 'GET', '/api/watches')).watches.find((x) => x.ref === file);
    assert(!w, 'the deleted watch is still listed by the daemon');
  }, page);

  await test('daemon: the Memory page lists and searches wiki pages written in an editor', async () => {
    const wiki = join(daemon.dir, 'hestia-home', 'wiki', 'pages');
    mkdirSync(wiki, { recursive: true });
    writeFileSync(join(wiki, 'Compost.md'), '---\ntitle: Compost heap\ntags: [garden]\n---\n# Compost heap\n\nTurn the **compost** every two weeks.\n');
    writeFileSync(join(wiki, 'Garden.md'), '---\ntitle: Garden\n---\n# Garden\n\nThe beds are fed from the [[Compost]].\n');
    // The daemon's watcher indexes outside edits on its own.
    await waitFor(async () => {
      const { pages } = await api(page, daemon, 'GET', '/api/wiki/pages?prefix=pages/');
      return pages.some((p) => p.path === 'pages/Garden.md') && pages.some((p) => p.path === 'pages/Compost.md');
    }, 'the wiki watcher to index the new pages', LONG);
    await page.goto(daemon.url + '/memory');
    const wikiBox = page.getByRole('region', { name: 'Wiki' });
    const list = wikiBox.getByRole('list', { name: 'Wiki pages' });
    await list.getByRole('link', { name: 'Compost heap' }).waitFor();
    await list.getByRole('link', { name: 'Garden' }).waitFor();
    await wikiBox.getByLabel('Search the wiki').fill('compost');
    await wikiBox.getByRole('button', { name: 'Search' }).click();
    await wikiBox.getByText(/\d+ found\./).waitFor();
    await wikiBox.locator('.wiki-hits').getByRole('link', { name: 'Compost heap' }).click();
    const art = wikiBox.getByRole('article', { name: 'Wiki page Compost heap' });
    await art.waitFor();
    assert((await art.locator('strong').first().textContent()) === 'compost', 'page Markdown not rendered');
    await art.getByText('pages/Garden.md').waitFor();
    await shot(page, 'e2e-memory-wiki');
  }, page);

  await test('daemon: a fact proposed from a chat is reviewed and accepted into USER.md', async () => {
    await page.getByRole('link', { name: 'New chat' }).click();
    await push({ text: ['Noted, bees it is.'] });
    await send('I keep two beehives in the garden.');
    await page.getByText('Noted, bees it is.').waitFor();
    const chatID = decodeURIComponent(page.url().split('/c/')[1] ?? '');
    assert(chatID, `no chat id in ${page.url()}`);
    await page.getByRole('link', { name: 'Memory' }).click();
    const queue = page.getByRole('region', { name: 'Proposed facts' });
    await queue.getByText('Nothing waiting for review.').waitFor();
    await push({ tool_calls: [{ id: 'call_pm1', name: 'propose_memories', arguments: JSON.stringify({ candidates: [{ target: 'user', text: 'Keeps two beehives in the garden.', confidence: 'high' }] }) }] });
    await queue.getByLabel('Chat to review').selectOption(chatID);
    await queue.getByRole('button', { name: 'Propose facts' }).click();
    await queue.getByText('1 fact proposed.').waitFor({ timeout: LONG });
    const fact = queue.getByRole('textbox', { name: /^Proposed fact / });
    await fact.waitFor();
    assert((await fact.inputValue()) === 'Keeps two beehives in the garden.', `proposed: ${await fact.inputValue()}`);
    const userFile = join(daemon.dir, 'hestia-home', 'memory', 'USER.md');
    assert(!existsSync(userFile) || !readFileSync(userFile, 'utf8').includes('beehives'), 'the fact reached USER.md before it was accepted');
    await shot(page, 'e2e-memory-queue');
    await queue.getByRole('button', { name: 'Accept' }).click();
    await queue.getByText('Nothing waiting for review.').waitFor();
    await waitFor(async () => existsSync(userFile) && readFileSync(userFile, 'utf8').includes('Keeps two beehives in the garden.'), 'USER.md to hold the accepted fact');
    const req = (await (await fetch(fake.control + '/requests')).json()).at(-1);
    assert(req.some((m) => m.Content.includes('I keep two beehives')), 'the review did not send the chat to the model');
  }, page);
}
