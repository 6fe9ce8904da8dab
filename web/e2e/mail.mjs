// Browser tests of the Mail page. runMailShots renders it against the
// fixture daemon (mail routes answered here with page.route) in light, dark
// and phone layouts; runMailFlow imports a real Maildir with the hestia CLI
// into the running test daemon and drives search, reading, downloads,
// keyboard navigation and "ask about this thread" through chromium.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFixtures } from './fixtures.mjs';
import { assert, newPage, shot, test, viewports } from './lib.mjs';

const now = Date.now();
const iso = (h) => new Date(now - h * 3_600_000).toISOString();
const fxRows = [
  { id: 41, thread_id: 1, subject: 'Re: Lisbon 14–17 March?', from: 'Ana Lima <ana@example.org>', date: iso(2), unread: true, thread_count: 4, snippet: 'Friday morning works, I booked TAP 1342. Can you sort the hotel?' },
  { id: 38, thread_id: 2, subject: 'Your March statement', from: 'Northbank <statements@northbank.example>', date: iso(20), has_attachments: true, thread_count: 1, snippet: 'Your statement for March is ready. It is attached as a PDF.' },
  { id: 35, thread_id: 3, subject: 'Heating repair invoice', from: 'Plumb & Co <office@plumb.example>', date: iso(50), has_attachments: true, thread_count: 2, snippet: 'Please find the invoice for the boiler repair attached.' },
  { id: 31, thread_id: 4, subject: 'Book club: next title', from: 'Marta <marta@example.net>', date: iso(120), thread_count: 6, snippet: 'We picked “The Dispossessed”. Same place, Thursday 19:00.' },
  { id: 22, thread_id: 5, subject: 'Weekly digest', from: 'news@lists.example', date: iso(200), unread: true, thread_count: 1, snippet: 'Ten links worth your time this week.' },
];
const fxMessage = {
  id: 41, thread_id: 1, account: 'personal', mailbox: 'INBOX', subject: 'Re: Lisbon 14–17 March?', from: 'Ana Lima <ana@example.org>', to: 'Sam <sam@example.org>',
  date: iso(2), unread: true, body_state: 'full', body_length: 220,
  body: 'Hi Sam,\n\nFriday morning works, I booked TAP 1342 (07:40). Can you sort the hotel? Casa do Bairro had rooms for 3 nights.\n\nAna\n\n> On Tue, Sam wrote:\n> What about 14–17 March?',
  attachments: [{ index: 0, filename: 'boarding-pass.pdf', content_type: 'application/pdf', size: 48213, stored: true }],
};
const fxThread = {
  thread_id: 1, subject: 'Lisbon 14–17 March?', count: 4,
  messages: [fxRows[0], { ...fxRows[0], id: 40, from: 'Sam <sam@example.org>', unread: false, date: iso(5), snippet: 'Booked? I can do the hotel.' }, { ...fxRows[0], id: 37, date: iso(30), snippet: 'What about 14–17 March?' }, { ...fxRows[0], id: 36, from: 'Sam <sam@example.org>', date: iso(40), snippet: 'When can you come?' }],
};
const fxBoxes = {
  total: 2184, threads: 1311,
  mailboxes: [
    { account: 'personal', name: 'INBOX', role: 'inbox', messages: 1630, unread: 12 },
    { account: 'personal', name: 'Archive', role: 'archive', messages: 402, unread: 0 },
    { account: 'personal', name: 'Sent', role: 'sent', messages: 148, unread: 0 },
    { account: 'personal', name: 'Lists/rust', messages: 4, unread: 2 },
  ],
};

async function routeMail(page) {
  await page.route('**/api/mail/**', (route) => {
    const p = new URL(route.request().url()).pathname;
    const body = p === '/api/mail/mailboxes' ? fxBoxes
      : p === '/api/mail/search' ? { messages: fxRows, page: { offset: 0, limit: 30 }, mode: 'browse' }
      : /\/thread$/.test(p) ? fxThread
      : /^\/api\/mail\/messages\/\d+$/.test(p) ? { ...fxMessage, id: Number(p.split('/').pop()) }
      : undefined;
    if (!body) return route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"code":"not_found","message":"no such mail route"}}' });
    return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
  });
}

export async function runMailShots(browser) {
  const fx = await startFixtures();
  try {
    for (const mode of [
      { name: 'desktop', viewport: viewports.desktop },
      { name: 'dark', viewport: viewports.desktop, dark: true },
      { name: 'phone', viewport: viewports.phone, mobile: true },
    ]) {
      await test(`fixtures: mail page renders (${mode.name})`, async () => {
        const { ctx, page, errors } = await newPage(browser, { ...mode, token: 'fixture-token' });
        try {
          await routeMail(page);
          await page.goto(fx.url + '/mail');
          await page.getByText('Book club: next title').waitFor();
          assert(await page.getByText('2,184 messages in 1,311 conversations', { exact: false }).isVisible(), 'mailbox totals missing');
          await shot(page, `${mode.name}-mail`);
          await page.goto(fx.url + '/mail/41');
          await page.getByText('Casa do Bairro', { exact: false }).waitFor();
          await page.getByText('Conversation · 4 messages').waitFor();
          await shot(page, `${mode.name}-mail-read`);
          if (mode.mobile) {
            assert(!(await page.getByRole('listbox', { name: 'Conversations' }).isVisible()), 'list and reader both shown on a phone');
            const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
            assert(!overflow, 'mail page scrolls horizontally on a phone');
            await page.getByLabel('Close message').click();
            await page.getByText('Book club: next title').waitFor();
          }
          assert(errors.length === 0, 'console errors: ' + errors.join('; '));
        } finally {
          await ctx.close();
        }
      });
    }
  } finally {
    await fx.close();
  }
}

const eml = (headers, body) => Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n') + '\r\n\r\n' + body.replace(/\n/g, '\r\n');

/** A Maildir with a two-message thread (one unread) and a message with a PDF. */
function writeMaildir(root) {
  for (const d of ['cur', 'new', 'tmp']) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, 'new', '1.e2e.host'), eml({ 'Message-ID': '<lisbon-1@e2e>', From: 'Ana Lima <ana@example.org>', To: 'me@example.org', Subject: 'Lisbon dates', Date: 'Mon, 5 Jan 2026 10:00:00 +0000' }, 'Shall we go 14 to 17 March? The flights are cheap then.\n'));
  writeFileSync(join(root, 'cur', '2.e2e.host:2,S'), eml({ 'Message-ID': '<lisbon-2@e2e>', 'In-Reply-To': '<lisbon-1@e2e>', References: '<lisbon-1@e2e>', From: 'me@example.org', To: 'Ana Lima <ana@example.org>', Subject: 'Re: Lisbon dates', Date: 'Tue, 6 Jan 2026 10:00:00 +0000' }, 'Yes, book it. I will find a hotel.\n'));
  const pdf = Buffer.from('%PDF-1.4 statement for e2e\n').toString('base64');
  writeFileSync(join(root, 'cur', '3.e2e.host:2,S'), eml({ 'Message-ID': '<bank-1@e2e>', From: 'Northbank <statements@northbank.example>', To: 'me@example.org', Subject: 'Your statement', Date: 'Wed, 7 Jan 2026 10:00:00 +0000', 'MIME-Version': '1.0', 'Content-Type': 'multipart/mixed; boundary="BB"' },
    `--BB\nContent-Type: text/plain\n\nYour statement is attached.\n--BB\nContent-Type: application/pdf\nContent-Disposition: attachment; filename="statement.pdf"\nContent-Transfer-Encoding: base64\n\n${pdf}\n--BB--\n`));
}

/**
 * The real flow, run inside runDaemon with its page and daemon. It opens
 * and leaves chats, so it runs after the tests that count chats.
 */
export async function runMailFlow({ page, daemon, push, send, waitFor }) {
  await test('daemon: mail imported with the CLI shows on the Mail page, by thread', async () => {
    const maildir = join(daemon.dir, 'maildir');
    writeMaildir(maildir);
    execFileSync(daemon.bin, ['mail', 'import', maildir], {
      env: { PATH: process.env.PATH, HOME: daemon.home, HESTIA_HOME: join(daemon.dir, 'hestia-home') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await page.getByRole('link', { name: 'Mail' }).click();
    await page.getByText('3 messages in 2 conversations', { exact: false }).waitFor();
    const rows = page.locator('.mail-row');
    await waitFor(async () => (await rows.count()) === 2, 'two conversations');
    assert((await rows.nth(0).textContent()).includes('Your statement'), 'newest conversation is not first');
    assert((await rows.nth(1).locator('.mail-count').textContent()) === '2', 'the Lisbon thread does not say 2 messages');
    assert((await page.getByTitle('local · INBOX').textContent()).includes('1'), 'INBOX unread count missing');
    await shot(page, 'e2e-mail');
  }, page);

  await test('daemon: mail keyboard navigation reads a thread and Esc closes it', async () => {
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('j');
    await page.keyboard.press('Enter');
    await page.getByText('Conversation · 2 messages').waitFor();
    assert(/\/mail\/\d+$/.test(page.url()), `URL did not name the message: ${page.url()}`);
    await page.getByRole('region', { name: 'Reading pane' }).getByText(/Yes, book it|Shall we go 14 to 17 March/).first().waitFor();
    await shot(page, 'e2e-mail-read');
    await page.keyboard.press('Escape');
    await page.getByText('Select a conversation to read it.', { exact: false }).waitFor();
  }, page);

  await test('daemon: mail search, filters, a bad filter and an attachment download', async () => {
    await page.keyboard.press('/');
    await page.keyboard.type('statement');
    await page.keyboard.press('Enter');
    // One word match; once the messages are embedded, hybrid search may add
    // others below it, marked related and not counted.
    await page.getByText('1 message matches').waitFor();
    await waitFor(async () => (await page.locator('.mail-row').first().textContent()).includes('Your statement'), 'the search to find the statement first');
    const rows = page.locator('.mail-row');
    for (let i = 1; i < (await rows.count()); i++) {
      assert((await rows.nth(i).locator('.mail-related').count()) === 1, `row ${i} is neither the match nor marked related`);
    }
    await page.keyboard.press('Escape');
    await page.keyboard.press('Enter');
    const dl = page.waitForEvent('download');
    await page.getByLabel('Download statement.pdf').click();
    const file = await (await dl).path();
    assert(readFileSync(file, 'utf8').startsWith('%PDF-1.4 statement for e2e'), 'downloaded attachment has other bytes');
    await page.getByLabel('Close message').click();

    await page.getByLabel('Search mail').fill('');
    await page.getByRole('button', { name: /^Filters/ }).click();
    await page.getByLabel('Only unread').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await waitFor(async () => (await page.locator('.mail-row').count()) === 1 && (await page.locator('.mail-row').first().textContent()).includes('Lisbon'), 'the unread filter');
    await page.getByText('1 message matches').waitFor();
    await page.getByLabel('On or after').fill('2026-02-01');
    await page.getByLabel('Before', { exact: true }).fill('2026-01-01');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText(/before 2026-01-01 is not after after 2026-02-01/).waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await waitFor(async () => (await page.locator('.mail-row').count()) === 2, 'clearing the filters');
  }, page);

  await test('daemon: "ask about this thread" starts a chat and the mail tool card lists the thread', async () => {
    await page.locator('.mail-row', { hasText: 'Lisbon' }).click();
    await page.getByRole('button', { name: /Ask about this thread/ }).click();
    const box = page.getByLabel('Message');
    await waitFor(async () => (await box.inputValue()).includes('mail message id'), 'the composer to name the thread');
    const id = Number(/mail message id (\d+)/.exec(await box.inputValue())[1]);
    await push(
      { tool_calls: [{ id: 'call_mt1', name: 'mail_thread', arguments: JSON.stringify({ id }) }] },
      { text: ['Ana proposed 14 to 17 March, and you agreed.'] },
    );
    await box.press('End');
    await box.type('what did we agree?');
    await box.press('Enter');
    await page.getByText('Ana proposed 14 to 17 March, and you agreed.').waitFor();
    const card = page.locator('.tool-card[data-tool="mail_thread"]');
    await card.getByRole('link', { name: /Lisbon dates/ }).first().waitFor();
    assert((await card.locator('.mail-tool li').count()) === 2, 'the tool card does not list both messages');
    const sent = await page.locator('.msg.user .bubble').last().textContent();
    assert(sent.includes(`mail message id ${id}`) && sent.includes('what did we agree?'), `first message: ${sent}`);
    await shot(page, 'e2e-mail-toolcard');
    await card.getByRole('link', { name: /Lisbon dates/ }).first().click();
    await page.getByText('Conversation · 2 messages').waitFor();
  }, page);
}
