// Browser tests of the Jobs and Action Center pages against the fixture
// daemon (their routes answered here with page.route): lists render, an
// Action Center step shows its full arguments, Run now and Dismiss call the API, a malformed cron shows the daemon's error
// naming the field, and nothing scrolls sideways on a phone.
import { startFixtures } from './fixtures.mjs';
import { assert, newPage, shot, test, viewports } from './lib.mjs';

const now = Date.parse('2026-03-09T07:55:00Z');
const iso = (ms) => new Date(ms).toISOString();
const jobs = [
  { name: 'mail.ops', builtin: true, schedule: { every: '2m0s' }, timeout: '10m0s', enabled: true, next_run: iso(now + 60e3), running: false,
    last_run: { id: 41, job: 'mail.ops', trigger: 'schedule', started_at: iso(now - 60e3), ended_at: iso(now - 59e3), status: 'ok', duration_ms: 840 } },
  { name: 'morning-briefing', builtin: false, schedule: { cron: '0 8 * * 1-5' }, timeout: '10m0s', prompt: "Give me a briefing of today's mail", enabled: true,
    next_run: iso(now + 5 * 60e3), running: false,
    last_run: { id: 40, job: 'morning-briefing', trigger: 'missed', started_at: iso(now - 86400e3), status: 'error', error: 'budget_exceeded: the daily cap is reached', duration_ms: 1200 } },
];
const actions = [
  { id: 3, kind: 'scheduling', priority: 'high', deadline: '2026-03-10T17:00:00Z', summary: 'Ann asks whether Tuesday or Wednesday works for the installer.', confidence: 0.9,
    context: { subject: 'Re: Solar installer', from: 'Ann <ann@example.org>', messages: 2 }, state: 'new', updated_at: iso(now),
    steps: [{ title: 'Reply that Tuesday works', tool: 'mail_reply', state: 'awaiting_approval',
      args: { message_id: 41, body: 'Hi Ann,\nTuesday works. The booking page is https://installer.example.org/bookings/confirm?ref=ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz', cc: ['bob@example.org'] } },
      { title: 'Add the visit to the calendar', manual: true, state: 'pending' }] },
  { id: 2, kind: 'review', priority: 'normal', summary: 'The contract draft from Bob needs a read before Friday.', confidence: 0.7, state: 'read', updated_at: iso(now - 3600e3),
    steps: [{ title: 'Read the draft', manual: true }] },
];

const notices = [
  { id: 9, kind: 'watch', title: 'Watch: train.delay_changed', body: 'Your 8:12 to Milano is now 15 minutes late.', url: '/c/c_1', chat_id: 'c_1', created_at: iso(now - 60e3), push_state: 'delivered', attempts: 1 },
  { id: 8, kind: 'job', title: 'Job morning-briefing error', body: 'budget_exceeded: the daily cap is reached', url: '/jobs', created_at: iso(now - 3600e3), push_state: 'pending', push_reason: 'quiet_hours', attempts: 0 },
  { id: 7, kind: 'approval', title: 'Approval needed: mail_send', url: '/c/c_2', created_at: iso(now - 7200e3), read_at: iso(now - 7000e3), push_state: 'delivered', attempts: 1 },
];
const watches = [
  { id: 'w_1', source: 'train', ref: 'S01700/9544/1767571200000', instruction: 'When my train arrives in Milano, mail Ann that I have arrived', state: 'active',
    expires_at: iso(now + 6 * 3600e3), created_at: iso(now - 3600e3), last_poll: iso(now - 30e3), last_event_at: iso(now - 60e3), events: 2,
    rules: [{ id: 'delay', event: 'train.delay_changed' }, { id: 'arr', event: 'train.arrived', once: true,
      grants: [{ tool: 'mail_send', args: { to: { exact: ['ann@example.org'] }, subject: { template: 'Train {{event.train}} arrived' }, body: { set: ['I have arrived.', 'Arrived, see you soon.'] } }, max: 1 }] }] },
  { id: 'w_2', source: 'url', ref: 'https://status.example.org/api/v1/incidents/very/long/path/that/should/wrap.json', instruction: 'Tell me when the status page changes', state: 'paused',
    expires_at: iso(now + 6 * 86400e3), created_at: iso(now - 86400e3), last_poll: iso(now - 86400e3), events: 0, last_error: 'GET https://status.example.org/…: 503 Service Unavailable',
    rules: [{ id: 'r1', event: 'url.changed' }] },
];

async function routeBackground(page, calls) {
  await page.route((url) => /^\/api\/(jobs|actions|push|notifications|watches)(\/|$)/.test(url.pathname), (route) => {
    const req = route.request();
    const u = new URL(req.url());
    const p = u.pathname;
    calls.push(`${req.method()} ${p}`);
    const json = (status, body) => route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) });
    if (p === '/api/jobs' && req.method() === 'GET') return json(200, { jobs });
    if (p === '/api/jobs' && req.method() === 'POST') {
      const b = JSON.parse(req.postData() || '{}');
      if (b.cron && b.cron.trim().split(/\s+/).length !== 5) return json(400, { error: { code: 'bad_job', message: `cron: "${b.cron}" is not a cron expression (minute hour day-of-month month day-of-week)` } });
      return json(201, { ...jobs[1], name: b.name });
    }
    if (/^\/api\/jobs\/[^/]+\/runs$/.test(p)) return json(200, { runs: [jobs[1].last_run] });
    if (/^\/api\/jobs\/[^/]+\/run$/.test(p)) return json(202, { run_id: 42 });
    if (p === '/api/actions') {
      const st = u.searchParams.get('state');
      return json(200, { actions: st === 'dismissed' ? [] : actions, counts: { new: 1, read: 1, done: 4, dismissed: 0 } });
    }
    if (p === '/api/actions/settings') return json(200, { enabled: true, language: 'en', activated_at: iso(now - 7 * 86400e3) });
    if (/^\/api\/actions\/\d+\/(state|execute)$/.test(p)) return json(p.endsWith('execute') ? 202 : 200, actions[0]);
    if (p === '/api/notifications') return json(200, { notifications: notices, unread: 2 });
    if (p === '/api/notifications/settings') return json(200, { quiet_start: '22:00', quiet_end: '07:00', rate_limit: 10 });
    if (p === '/api/push/subscriptions') return json(200, { subscriptions: [{ id: 1, endpoint: 'https://push.example/1', device: 'Pixel 8 (Chrome)', created_at: iso(now - 86400e3), last_ok: iso(now - 60e3), failures: 0 }] });
    if (p === '/api/watches' && req.method() === 'GET')
      return json(200, { watches, sources: ['file', 'train', 'url'], events: { file: ['file.changed', 'file.deleted'], train: ['train.arrived', 'train.delay_changed'], url: ['url.changed'] } });
    if (p === '/api/watches' && req.method() === 'POST') return json(400, { error: { code: 'bad_request', message: 'expires_at: is required for file watches (when should watching stop?)' } });
    if (/^\/api\/watches\/w_\d+\/(pause|resume)$/.test(p)) return json(200, { ...watches[0], state: p.endsWith('pause') ? 'paused' : 'active' });
    if (p === '/api/push/key') return json(200, { public_key: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM' });
    return json(404, { error: { code: 'not_found', message: 'no such route' } });
  });
}

export async function runBackgroundShots(browser) {
  const fx = await startFixtures();
  try {
    for (const mode of [
      { name: 'desktop', viewport: viewports.desktop },
      { name: 'dark', viewport: viewports.desktop, dark: true },
      { name: 'phone', viewport: viewports.phone, mobile: true },
    ]) {
      await test(`fixtures: jobs page lists, runs and refuses a bad cron (${mode.name})`, async () => {
        const { ctx, page, errors } = await newPage(browser, { ...mode, token: 'fixture-token' });
        const calls = [];
        try {
          await routeBackground(page, calls);
          await page.goto(fx.url + '/jobs');
          await page.getByRole('button', { name: 'morning-briefing' }).waitFor();
          await page.getByText('cron 0 8 * * 1-5').waitFor();
          await shot(page, `${mode.name}-jobs`);
          await page.getByRole('button', { name: 'Run now' }).nth(1).click();
          await page.getByText('Started run 42 of morning-briefing.').waitFor();
          assert(calls.includes('POST /api/jobs/morning-briefing/run'), 'Run now did not call the API: ' + calls.join(', '));
          await page.getByText('budget_exceeded: the daily cap is reached').waitFor();
          await page.getByPlaceholder('morning-briefing').fill('weekly');
          await page.getByLabel('Schedule').fill('0 8 * *');
          await page.getByPlaceholder("Give me a briefing of today's mail").fill('Summarise the week');
          await page.getByRole('button', { name: 'Add job' }).click();
          const alert = page.getByRole('alert');
          await alert.waitFor();
          assert((await alert.textContent()).includes('cron:'), 'the cron error does not name the field');
          if (mode.mobile) {
            const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
            assert(!overflow, 'jobs page scrolls horizontally on a phone');
          }
          assert(errors.filter((e) => !e.includes('400')).length === 0, 'console errors: ' + errors.join('; '));
        } finally {
          await ctx.close();
        }
      });
      await test(`fixtures: notifications page shows the inbox, delivery settings and watches with grants (${mode.name})`, async () => {
        const { ctx, page, errors } = await newPage(browser, { ...mode, token: 'fixture-token' });
        const calls = [];
        try {
          await routeBackground(page, calls);
          await page.goto(fx.url + '/notifications');
          const inbox = page.getByRole('region', { name: 'Inbox' });
          await inbox.getByText('Your 8:12 to Milano is now 15 minutes late.').waitFor();
          await inbox.getByText('2 unread').waitFor();
          await page.getByText('Pixel 8 (Chrome)').waitFor();
          const w = page.getByRole('listitem', { name: 'Watch train S01700/9544/1767571200000' });
          await w.getByText('mail_send').waitFor();
          await page.getByText(/503 Service Unavailable/).waitFor();
          await shot(page, `${mode.name}-notifications`);
          await w.getByRole('button', { name: 'Pause' }).click();
          await page.getByText('Paused.').waitFor();
          assert(calls.includes('POST /api/watches/w_1/pause'), 'Pause did not call the API: ' + calls.join(', '));
          if (mode.mobile) {
            const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
            assert(!overflow, 'notifications page scrolls horizontally on a phone');
          }
          assert(errors.length === 0, 'console errors: ' + errors.join('; '));
        } finally {
          await ctx.close();
        }
      });
      await test(`fixtures: action center lists items with counts and dismisses (${mode.name})`, async () => {
        const { ctx, page, errors } = await newPage(browser, { ...mode, token: 'fixture-token' });
        const calls = [];
        try {
          await routeBackground(page, calls);
          await page.goto(fx.url + '/actions');
          await page.getByText('Ann asks whether Tuesday or Wednesday works for the installer.').waitFor();
          await page.getByRole('tab', { name: 'Open (2)' }).waitFor();
          await page.getByText('awaiting approval').waitFor();
          // Each tool step shows its full arguments before Execute.
          const args = page.getByLabel('Arguments of step 1: mail_reply');
          await args.getByText(/ref=ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz/).waitFor();
          assert((await args.textContent()).includes('bob@example.org'), 'the cc argument is not shown');
          await shot(page, `${mode.name}-actions`);
          await page.getByRole('button', { name: 'Dismiss' }).first().click();
          await page.getByText('Dismissed.').waitFor();
          assert(calls.includes('POST /api/actions/3/state'), 'Dismiss did not call the API: ' + calls.join(', '));
          await page.getByRole('tab', { name: 'Dismissed (0)' }).click();
          await page.getByText('Nothing here.').waitFor();
          if (mode.mobile) {
            const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
            assert(!overflow, 'action center scrolls horizontally on a phone');
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
