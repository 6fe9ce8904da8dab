// First-run setup end to end: a daemon on a fresh home with no model, the
// browser sent to /setup on first open, the model step tested against the
// scripted model server (an unlisted model refused, naming it), a calendar
// folder that does not exist refused, then calendar and file roots saved,
// and config.toml on disk holding what the steps wrote.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, newPage, shot, test } from './lib.mjs';

export async function runSetupFlow({ browser, Daemon, bin, dir, port, llmURL }) {
  await test('daemon: first-run setup walks model, calendar and file roots on a fresh home and writes config.toml', async () => {
    const home = join(dir, 'firstrun');
    const d = new Daemon(bin, home, port, llmURL, '');
    d.noModel = true;
    await d.start();
    const docs = join(home, 'Documents');
    const cal = join(home, 'calendars');
    mkdirSync(docs, { recursive: true });
    mkdirSync(cal, { recursive: true });
    const p = await newPage(browser, { token: d.token() });
    const page = p.page;
    try {
      await page.goto(d.url + '/');
      await page.waitForURL('**/setup');
      const model = page.getByRole('region', { name: 'Model' });
      await model.waitFor();
      await model.getByLabel('API base URL').fill(llmURL);
      await model.getByLabel('Model').fill('no-such-model');
      await model.getByRole('button', { name: 'Test and save' }).click();
      const refusal = await model.getByRole('alert').textContent();
      assert(refusal.includes('model:') && refusal.includes('no-such-model'), `refusal: ${refusal}`);
      await model.getByLabel('Model').fill('llmtest-model');
      await model.getByRole('button', { name: 'Test', exact: true }).click();
      await model.getByText(/Connected: 1 model/).waitFor();
      await model.getByRole('button', { name: 'Test and save' }).click();

      const mail = page.getByRole('region', { name: 'Mail' });
      await mail.getByLabel('Provider').selectOption('fastmail');
      await mail.getByText(/Manage app passwords/).waitFor();
      assert((await mail.getByLabel('IMAP host').inputValue()) === 'imap.fastmail.com', 'the Fastmail preset did not fill the IMAP host');
      await shot(page, 'e2e-setup-mail');
      await mail.getByRole('button', { name: 'Skip this step' }).click();

      const calendar = page.getByRole('region', { name: 'Calendar' });
      await calendar.getByLabel('CalDAV URL or local vdir folder').fill(join(home, 'missing'));
      await calendar.getByRole('button', { name: 'Test and save' }).click();
      const calErr = await calendar.getByRole('alert').textContent();
      assert(calErr.includes('calendar folder') && calErr.includes('does not exist'), `calendar refusal: ${calErr}`);
      await calendar.getByLabel('CalDAV URL or local vdir folder').fill(cal);
      await calendar.getByLabel('Name', { exact: true }).fill('personal');
      await calendar.getByRole('button', { name: 'Test and save' }).click();

      await page.getByRole('region', { name: 'Contacts' }).getByRole('button', { name: 'Skip this step' }).click();
      const files = page.getByRole('region', { name: 'Documents and file roots' });
      await files.getByLabel(/Folders Hestia may read and write/).fill(docs);
      await files.getByRole('button', { name: 'Test and save' }).click();
      await page.getByRole('region', { name: 'Telegram' }).getByRole('button', { name: 'Skip this step' }).click();
      await page.waitForURL((u) => new URL(u).pathname === '/');

      const toml = readFileSync(join(home, 'hestia-home', 'config.toml'), 'utf8');
      for (const want of ['main/llmtest-model', `path = "${cal}"`, `file_roots = ["${docs}"]`]) {
        assert(toml.includes(want), `config.toml lacks ${want}:\n${toml}`);
      }
      // The model is configured now: opening again does not send to setup.
      await page.goto(d.url + '/');
      await page.waitForTimeout(500);
      assert(new URL(page.url()).pathname === '/', `sent to ${page.url()} after setup`);
    } finally {
      await p.ctx.close();
      await d.stop();
    }
  });
}
