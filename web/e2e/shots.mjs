// Visual pass: renders every screen against the fixture daemon in light,
// dark and phone layouts, asserts the essentials are on screen, and saves
// screenshots to web/test-results/ for a person to look at.
import { FIXTURE_PAIR_CODE, startFixtures } from './fixtures.mjs';
import { assert, newPage, shot, test, viewports } from './lib.mjs';

export async function runShots(browser) {
  const fx = await startFixtures();
  try {
    for (const mode of [
      { name: 'desktop', viewport: viewports.desktop },
      { name: 'dark', viewport: viewports.desktop, dark: true },
      { name: 'phone', viewport: viewports.phone, mobile: true },
    ]) {
      await test(`fixtures: screens render (${mode.name})`, async () => {
        const { ctx, page, errors } = await newPage(browser, mode);
        try {
          await page.goto(fx.url + '/');
          // A browser on the same machine types the code the daemon printed.
          await page.getByLabel('Pairing code').waitFor();
          await shot(page, `${mode.name}-pair-local`);
          await page.getByLabel('Pairing code').fill('wrong');
          await page.getByRole('button', { name: 'Pair this browser' }).click();
          await page.getByText('2 attempts left').waitFor();
          await page.getByLabel('Pairing code').fill(FIXTURE_PAIR_CODE);
          await page.getByRole('button', { name: 'Pair this browser' }).click();
          await page.getByText('What can I do for you?').waitFor();
          await shot(page, `${mode.name}-welcome`);

          await page.goto(fx.url + '/c/c_trip');
          await page.getByText('Approval needed').first().waitFor();
          fx.emit('turn.started', { turn_id: 't_1' }, 'c_trip');
          await page.getByText('Working…').first().waitFor({ state: 'attached' });
          assert(await page.locator('.tainted').getByText('mail_read (id 42)').isVisible(), 'taint warning missing on the approval card');
          await shot(page, `${mode.name}-approval`);

          await page.getByRole('button', { name: 'Edit', exact: true }).click();
          await page.getByText('Run with these changes').waitFor();
          await page.locator('.approval').scrollIntoViewIfNeeded();
          await shot(page, `${mode.name}-edit`);

          await page.goto(fx.url + '/c/c_mail');
          await page.getByText('NOT DONE').first().waitFor();
          await shot(page, `${mode.name}-denied`);

          await page.goto(fx.url + '/c/c_tax');
          await page.getByText('Say something to start.').waitFor();
          fx.emit('turn.finished', { result: { turn_id: 't_7', chat_id: 'c_tax', ok: false, error: { code: 'budget_exceeded', message: 'model budget reached: the daily cap of $2.00 (spent $2.04)' } } }, 'c_tax');
          await page.getByRole('button', { name: 'Continue over budget' }).waitFor();
          await shot(page, `${mode.name}-budget`);

          await page.goto(fx.url + '/usage');
          await page.getByText('Cost by day').waitFor();
          assert(await page.getByText(/did not say which/).isVisible(), 'unlabelled spend callout missing');
          assert(await page.getByText('$1.70 of $2.00 · 85 %').isVisible(), 'budget caps missing');
          await shot(page, `${mode.name}-usage`);

          await page.goto(fx.url + '/audit');
          await page.locator('.tl-item').first().click();
          await page.getByText('Payload (redacted)').waitFor();
          await shot(page, `${mode.name}-audit`);

          await page.goto(fx.url + '/system');
          await page.getByText('connection refused').waitFor();
          // The tool table starts closed below the devices: open it.
          await page.locator('details.diagnostics summary', { hasText: 'Tools' }).click();
          await page.getByText('Asks you').first().waitFor();
          await shot(page, `${mode.name}-system`);

          if (mode.mobile) {
            await page.getByLabel('Open menu').click();
            await page.getByText('Lisbon trip planning').waitFor();
            await shot(page, `${mode.name}-drawer`);
            const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
            assert(!overflow, 'page scrolls horizontally on a phone');
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
