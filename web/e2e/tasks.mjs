// The Agenda page's task editing in real Chromium against a daemon built
// from this repository: a local task list (a vdir of .ics files named in
// config.toml) holds a few VTODOs, one of them repeating, and one file
// holding two. Through the page's inline form a task's title, due date and
// priority change, a due time is moved in the viewer's zone (the browser
// runs in New York, the daemon in UTC), a due date is cleared; the bin
// asks first, then deletes a task (its file goes), one of two tasks in a
// file (the file keeps the other) and a repeating task as its whole
// series. A task with subtasks (RELATED-TO, as Nextcloud Tasks writes them)
// shows them nested under it; "Add subtask" writes a VTODO with
// RELATED-TO;RELTYPE=PARENT, and ticking the parent asks, then completes it
// with its subtasks. Each step checks what the page shows and what the
// VTODO in the file on disk says. Last, a phone-sized viewport: the row, the form and
// the confirmation fit the screen with no horizontal scrolling, and a
// change saved from there reaches the file.
//
//	npm run e2e -- tasks
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { assert, repoRoot, requireServices, shot, test, viewports } from './lib.mjs';

/** The viewer's zone, away from the daemon's (UTC): a due time must travel with its offset. */
const ZONE = 'America/New_York';
const LIST = 'home';
/** Locator waits: generous, for a loaded machine. */
const WAIT_MS = 45_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function hasGo() {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function waitFor(fn, what, timeoutMs = WAIT_MS) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      if (e.fatal) throw e;
      last = e;
    }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}${last ? ': ' + last.message : ''}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function startFakeLLM(bin) {
  const p = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    createInterface({ input: p.stdout }).once('line', (line) => resolve({ proc: p, ...JSON.parse(line) }));
    p.once('exit', (code) => reject(new Error(`fakellm exited with ${code}`)));
  });
}

// Days as YYYY-MM-DD, counted from today in the viewer's zone.
const todayIn = (zone) => new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
const addDays = (day, n) => {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
};
const compact = (day) => day.replace(/-/g, '');
/** How the Tasks section names a day: "25 Mar" is in "Wed 25 Mar". */
const dayMonth = (day) => new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' }).format(new Date(day + 'T12:00:00Z'));

function vtodo(uid, lines) {
  return ['BEGIN:VTODO', `UID:${uid}`, 'DTSTAMP:20260101T000000Z', ...lines, 'END:VTODO'];
}
function ics(...todos) {
  return ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//hestia e2e//EN', ...todos.flat(), 'END:VCALENDAR', ''].join('\r\n');
}

/**
 * The properties of the VTODO with uid in an .ics file, unfolded:
 * name → [{ params, value }]. null when the file is gone or has no such
 * VTODO (a recurring task's overrides share its UID: the master, the
 * one without RECURRENCE-ID, is the one returned).
 */
function readTodo(file, uid) {
  if (!existsSync(file)) return null;
  const lines = readFileSync(file, 'utf8').replace(/\r?\n[ \t]/g, '').split(/\r?\n/);
  let cur = null;
  const found = [];
  for (const line of lines) {
    if (line === 'BEGIN:VTODO') cur = {};
    else if (line === 'END:VTODO') {
      if (cur) found.push(cur);
      cur = null;
    } else if (cur) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const [name, ...params] = line.slice(0, colon).split(';');
      (cur[name.toUpperCase()] ??= []).push({ params, value: line.slice(colon + 1) });
    }
  }
  return found.find((t) => t.UID?.[0]?.value === uid && !t['RECURRENCE-ID']) ?? null;
}
const prop = (todo, name) => todo?.[name]?.[0];

/** A DUE with a time as an instant (ms), for the forms a UTC daemon writes. */
function dueInstant(due) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$/.exec(due.value);
  assert(m, `DUE is not a date-time: ${JSON.stringify(due)}`);
  const tzid = due.params.find((p) => p.startsWith('TZID='))?.slice(5);
  assert(m[7] === 'Z' || tzid === 'UTC' || tzid === 'Etc/UTC', `DUE in a zone this test does not resolve: ${JSON.stringify(due)}`);
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
}

export async function runTasks(browser) {
  if (!hasGo()) {
    if (requireServices()) throw new Error('go is required for the tasks e2e test');
    console.log('SKIP tasks e2e: go not found');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'hestia-e2e-tasks-'));
  const bin = join(dir, 'hestia');
  const fakeBin = join(dir, 'fakellm');
  const hestiaHome = join(dir, 'hestia-home');
  const listDir = join(dir, 'tasks', LIST);
  const file = (name) => join(listDir, name);
  let fake;
  let proc;
  let log = '';
  try {
    const t0 = Date.now();
    execFileSync('go', ['build', '-o', bin, './cmd/hestia'], { cwd: repoRoot, stdio: 'inherit' });
    execFileSync('go', ['build', '-o', fakeBin, './web/e2e/fakellm'], { cwd: repoRoot, stdio: 'inherit' });
    console.log(`built daemon and fakellm in ${Date.now() - t0} ms`);
    fake = await startFakeLLM(fakeBin);

    // Dates from the viewer's today, far enough from it that the daemon's
    // UTC day and New York's never put a task in another group.
    const today = todayIn(ZONE);
    const day = (n) => addDays(today, n);
    mkdirSync(listDir, { recursive: true });
    writeFileSync(file('rent.ics'), ics(vtodo('e2e-rent', ['SUMMARY:Pay the rent', `DUE;VALUE=DATE:${compact(day(12))}`, 'PRIORITY:5'])));
    writeFileSync(file('plants.ics'), ics(vtodo('e2e-plants', ['SUMMARY:Water the plants', `DUE:${compact(day(3))}T170000Z`])));
    writeFileSync(file('milk.ics'), ics(vtodo('e2e-milk', ['SUMMARY:Buy milk'])));
    writeFileSync(file('bins.ics'), ics(vtodo('e2e-bins', ['SUMMARY:Take the bins out', `DUE;VALUE=DATE:${compact(day(2))}`, 'RRULE:FREQ=WEEKLY'])));
    writeFileSync(
      file('errands.ics'),
      ics(vtodo('e2e-letter', ['SUMMARY:Post the letter']), vtodo('e2e-books', ['SUMMARY:Return the library books', `DUE;VALUE=DATE:${compact(day(4))}`])),
    );
    // A task with subtasks, as another client writes them.
    writeFileSync(file('move.ics'), ics(vtodo('e2e-move', ['SUMMARY:Move house'])));
    writeFileSync(file('van.ics'), ics(vtodo('e2e-van', ['SUMMARY:Book the van', 'RELATED-TO;RELTYPE=PARENT:e2e-move', `DUE;VALUE=DATE:${compact(day(5))}`])));
    writeFileSync(file('kitchen.ics'), ics(vtodo('e2e-kitchen', ['SUMMARY:Pack the kitchen', 'RELATED-TO:e2e-move'])));
    mkdirSync(hestiaHome, { recursive: true });
    writeFileSync(
      join(hestiaHome, 'config.toml'),
      `[calendar]\ntimezone = "UTC"\n\n[[calendar.sources]]\nname = ${JSON.stringify(LIST)}\npath = ${JSON.stringify(listDir)}\n`,
    );

    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true });
    const url = `http://127.0.0.1:${await freePort()}`;
    proc = spawn(bin, ['serve', '--addr', url.slice('http://'.length)], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        HESTIA_HOME: hestiaHome,
        HESTIA_LLM_BASE_URL: fake.url,
        HESTIA_LLM_API_KEY: 'test-key',
        HESTIA_LLM_MODEL: 'llmtest-model',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (b) => {
      log = (log + b.toString()).slice(-20_000);
    };
    proc.stdout.on('data', keep);
    proc.stderr.on('data', keep);
    await waitFor(async () => {
      if (proc.exitCode !== null) throw Object.assign(new Error(`the daemon exited (${proc.exitCode})`), { fatal: true });
      return (await fetch(url + '/health')).ok;
    }, 'the daemon to answer /health').catch((e) => {
      throw new Error(`${e.message}\n--- daemon log ---\n${log}`);
    });
    const token = readFileSync(join(hestiaHome, 'auth-token'), 'utf8').trim();

    /** A browser context in the viewer's zone with the home's token stored. */
    const open = async (opts) => {
      const ctx = await browser.newContext({ timezoneId: ZONE, colorScheme: 'light', reducedMotion: 'reduce', ...opts });
      ctx.setDefaultTimeout(WAIT_MS);
      await ctx.addInitScript((t) => {
        if (!localStorage.getItem('hestia.token')) localStorage.setItem('hestia.token', t);
      }, token);
      const page = await ctx.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('console', (m) => {
        if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text());
      });
      return { ctx, page, errors };
    };

    const { ctx, page, errors } = await open({ viewport: viewports.desktop });
    const tasks = page.getByRole('region', { name: 'Tasks' });
    const row = (title) => tasks.locator('.tasks-item', { has: page.locator('.tasks-summary', { hasText: title }) });
    const group = (name) => tasks.getByRole('group', { name, exact: true });
    const gone = (title) => waitFor(async () => (await row(title).count()) === 0, `“${title}” to leave the page`);
    /** The section's note after a write, saying what was done. */
    const said = (text) => tasks.getByRole('status').filter({ hasText: text }).waitFor();
    try {
      await test('tasks: the Agenda page lists the local task list, the repeating task marked', async () => {
        await page.goto(url + '/');
        await page.getByRole('link', { name: 'Agenda' }).click();
        // The list is indexed by the daemon's calendar worker after start.
        await row('Pay the rent').waitFor({ timeout: 60_000 });
        for (const t of ['Water the plants', 'Buy milk', 'Take the bins out', 'Post the letter', 'Return the library books', 'Move house']) await row(t).waitFor();
        await group('Later').locator('.tasks-summary', { hasText: 'Pay the rent' }).waitFor();
        await group('No due date').locator('.tasks-summary', { hasText: 'Buy milk' }).waitFor();
        assert((await row('Take the bins out').locator('.cal-badge', { hasText: 'repeats' }).count()) === 1, 'the repeating task has no repeats badge');
        // Priority 5 is not flagged; 1 to 4 are.
        assert((await row('Pay the rent').locator('.tasks-prio').count()) === 0, 'priority 5 shown as a flag');
        await shot(page, 'e2e-tasks');
      }, page);

      await test('tasks: subtasks nest under their parent; Add subtask writes RELATED-TO; ticking the parent completes it with them', async () => {
        // A row by its own title (a parent's row holds its subtasks' rows).
        const own = (title) => tasks.getByRole('listitem').filter({ has: page.locator('xpath=./label/span[@class="tasks-summary"]', { hasText: title }) });
        const move = own('Move house');
        // The tree stands in the group of its most urgent task, the van.
        await group('Next 7 days').getByRole('list', { name: 'Subtasks of “Move house”' }).waitFor();
        const subs = move.getByRole('list', { name: 'Subtasks of “Move house”' });
        for (const t of ['Book the van', 'Pack the kitchen']) await subs.locator('.tasks-summary', { hasText: t }).waitFor();
        assert((await move.locator('.tasks-progress').first().textContent()) === '0 of 2 done', `progress: ${await move.locator('.tasks-meta').first().textContent()}`);

        await move.getByRole('button', { name: 'Add subtask to “Move house”' }).first().click();
        const form = tasks.getByRole('form', { name: 'Add a subtask to “Move house”' });
        await form.getByLabel('Subtask').fill('Label the boxes');
        await form.getByRole('button', { name: 'Add' }).click();
        await said('Added: Label the boxes — in Move house');
        await subs.locator('.tasks-summary', { hasText: 'Label the boxes' }).waitFor();
        const added = readdirSync(listDir).find((f) => readFileSync(join(listDir, f), 'utf8').includes('SUMMARY:Label the boxes'));
        assert(added, 'no file holds the new subtask');
        const boxes = readFileSync(join(listDir, added), 'utf8').replace(/\r?\n[ \t]/g, '');
        assert(/\r?\nRELATED-TO;RELTYPE=PARENT:e2e-move\r?\n/.test(boxes), `the new subtask's file:\n${boxes}`);

        await page.getByLabel('Mark “Move house” done').click();
        const ask = tasks.getByRole('alertdialog', { name: 'Complete “Move house” and its subtasks?' });
        assert((await ask.textContent()).includes('Move house has 3 open subtasks. Complete them too?'), `confirmation: ${await ask.textContent()}`);
        await ask.getByRole('button', { name: 'Complete all' }).click();
        await said('Done, with its subtasks: Move house');
        for (const t of ['Move house', 'Book the van', 'Pack the kitchen', 'Label the boxes']) await gone(t);
        for (const [f, uid] of [['move.ics', 'e2e-move'], ['van.ics', 'e2e-van'], ['kitchen.ics', 'e2e-kitchen']]) {
          assert(prop(readTodo(file(f), uid), 'STATUS')?.value === 'COMPLETED', `${f} is not completed:\n${readFileSync(file(f), 'utf8')}`);
        }
        assert(/STATUS:COMPLETED/.test(readFileSync(join(listDir, added), 'utf8')), 'the added subtask is not completed');
      }, page);

      await test('tasks: editing a title, due date and priority inline changes the row and the VTODO on disk', async () => {
        const before = readFileSync(file('rent.ics'), 'utf8');
        await row('Pay the rent').getByRole('button', { name: 'Edit “Pay the rent”' }).click();
        const form = tasks.getByRole('form', { name: 'Edit “Pay the rent”' });
        await form.waitFor();
        const save = form.getByRole('button', { name: 'Save' });
        // Nothing changed yet: nothing to save.
        assert(await save.isDisabled(), 'Save is enabled before any change');
        assert((await form.getByLabel('Due date').inputValue()) === day(12), `the form's due date: ${await form.getByLabel('Due date').inputValue()}`);
        // A due date without a time: the time is empty, and can be added.
        assert((await form.getByLabel('Time').inputValue()) === '', `the form's time: ${await form.getByLabel('Time').inputValue()}`);
        assert((await form.getByLabel('Priority').inputValue()) === '5', `the form's priority: ${await form.getByLabel('Priority').inputValue()}`);
        // An emptied title is refused in the form.
        await form.getByLabel('Title').fill('   ');
        await form.getByText('A task needs a title.').waitFor();
        assert(await save.isDisabled(), 'Save is enabled with an empty title');

        await form.getByLabel('Title').fill('Pay the flat rent');
        await form.getByLabel('Due date').fill(day(5));
        await form.getByLabel('Priority').selectOption('1');
        await waitFor(() => save.isEnabled(), 'Save to be enabled');
        await save.click();
        await form.waitFor({ state: 'detached' });
        await said(/^Saved: /);
        const edited = row('Pay the flat rent');
        await group('Next 7 days').locator('.tasks-summary', { hasText: 'Pay the flat rent' }).waitFor();
        await gone('Pay the rent');
        await waitFor(async () => (await edited.locator('.tasks-due').textContent()).includes(dayMonth(day(5))), `the due label to show ${dayMonth(day(5))}`);
        assert((await edited.locator('.tasks-prio').textContent()).trim() === '!1', `priority badge: ${await edited.locator('.tasks-meta').textContent()}`);

        const todo = readTodo(file('rent.ics'), 'e2e-rent');
        assert(todo, `rent.ics lost the task:\n${readFileSync(file('rent.ics'), 'utf8')}`);
        assert(prop(todo, 'SUMMARY')?.value === 'Pay the flat rent', `SUMMARY: ${JSON.stringify(todo.SUMMARY)}`);
        const due = prop(todo, 'DUE');
        assert(due?.value === compact(day(5)) && due.params.includes('VALUE=DATE'), `DUE: ${JSON.stringify(due)}, want the date ${day(5)}`);
        assert(prop(todo, 'PRIORITY')?.value === '1', `PRIORITY: ${JSON.stringify(todo.PRIORITY)}`);
        assert(readFileSync(file('rent.ics'), 'utf8') !== before, 'rent.ics unchanged');
      }, page);

      await test('tasks: a due time set in the viewer’s zone reaches the file as that instant', async () => {
        const plants = row('Water the plants');
        await plants.getByRole('button', { name: 'Edit “Water the plants”' }).click();
        const form = tasks.getByRole('form', { name: 'Edit “Water the plants”' });
        // 17:00 UTC, shown in New York.
        const shown = await page.evaluate(
          (iso) => new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(iso)),
          `${day(3)}T17:00:00Z`,
        );
        assert((await form.getByLabel('Time').inputValue()) === shown, `the form's time ${await form.getByLabel('Time').inputValue()}, want ${shown} in ${ZONE}`);
        await form.getByLabel('Time').fill('08:15');
        await form.getByRole('button', { name: 'Save' }).click();
        await form.waitFor({ state: 'detached' });
        await waitFor(async () => (await plants.locator('.tasks-due').textContent()).includes('08:15'), 'the due label to show 08:15');
        // 08:15 on that day in New York, whatever its offset then.
        const want = await page.evaluate((local) => new Date(local).getTime(), `${day(3)}T08:15:00`);
        const got = dueInstant(prop(readTodo(file('plants.ics'), 'e2e-plants'), 'DUE'));
        assert(got === want, `DUE is ${new Date(got).toISOString()}, want ${new Date(want).toISOString()}`);
      }, page);

      await test('tasks: clearing a due date removes DUE and moves the task to No due date', async () => {
        const plants = row('Water the plants');
        await plants.getByRole('button', { name: 'Edit “Water the plants”' }).click();
        const form = tasks.getByRole('form', { name: 'Edit “Water the plants”' });
        await form.getByLabel('Due date').fill('');
        await waitFor(() => form.getByLabel('Time').isDisabled(), 'the time to be disabled without a date');
        await form.getByRole('button', { name: 'Save' }).click();
        await form.waitFor({ state: 'detached' });
        await group('No due date').locator('.tasks-summary', { hasText: 'Water the plants' }).waitFor();
        assert((await plants.locator('.tasks-due').count()) === 0, `a due label is left: ${await plants.textContent()}`);
        const todo = readTodo(file('plants.ics'), 'e2e-plants');
        assert(todo && !todo.DUE && prop(todo, 'SUMMARY')?.value === 'Water the plants', `plants.ics after clearing:\n${readFileSync(file('plants.ics'), 'utf8')}`);
      }, page);

      await test('tasks: delete asks inline first; Cancel keeps the task, Delete removes it and its file', async () => {
        const milk = row('Buy milk');
        await milk.getByRole('button', { name: 'Delete “Buy milk”' }).click();
        const confirm = tasks.getByRole('alertdialog', { name: 'Delete “Buy milk”?' });
        await confirm.waitFor();
        assert((await confirm.textContent()).includes(`Delete Buy milk from ${LIST}?`), `confirmation: ${await confirm.textContent()}`);
        await confirm.getByRole('button', { name: 'Cancel' }).click();
        await confirm.waitFor({ state: 'detached' });
        assert((await milk.count()) === 1 && existsSync(file('milk.ics')), 'Cancel deleted the task');

        await milk.getByRole('button', { name: 'Delete “Buy milk”' }).click();
        await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
        await said('Deleted: Buy milk');
        await gone('Buy milk');
        await waitFor(() => !existsSync(file('milk.ics')), 'milk.ics to be deleted');
      }, page);

      await test('tasks: deleting one of two tasks in a file rewrites the file without it', async () => {
        await row('Post the letter').getByRole('button', { name: 'Delete “Post the letter”' }).click();
        const confirm = tasks.getByRole('alertdialog', { name: 'Delete “Post the letter”?' });
        await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
        await said('Deleted: Post the letter');
        await gone('Post the letter');
        await row('Return the library books').waitFor();
        const f = file('errands.ics');
        const kept = existsSync(f) ? readFileSync(f, 'utf8') : '(gone)';
        assert(existsSync(f) && !readTodo(f, 'e2e-letter') && readTodo(f, 'e2e-books'), `errands.ics after the delete:\n${kept}`);
      }, page);

      await test('tasks: a repeating task is deleted as its whole series after saying so', async () => {
        assert(readTodo(file('bins.ics'), 'e2e-bins')?.RRULE, 'bins.ics has no RRULE to begin with');
        await row('Take the bins out').getByRole('button', { name: 'Delete “Take the bins out”' }).click();
        const confirm = tasks.getByRole('alertdialog', { name: 'Delete “Take the bins out”?' });
        await confirm.waitFor();
        const text = await confirm.textContent();
        assert(text.includes('Delete the repeating task Take the bins out and every occurrence of it?'), `confirmation: ${text}`);
        await shot(page, 'e2e-tasks-delete-series');
        await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
        await said('Deleted: Take the bins out');
        await gone('Take the bins out');
        await waitFor(() => !existsSync(file('bins.ics')), 'bins.ics to be deleted');
        // What is left, and nothing said as a failure.
        assert((await tasks.getByRole('alert').count()) === 0, `an error was shown: ${await tasks.getByRole('alert').allTextContents()}`);
        const left = (await tasks.locator('.tasks-summary').allTextContents()).sort();
        assert(JSON.stringify(left) === JSON.stringify(['Pay the flat rent', 'Return the library books', 'Water the plants']), `tasks left: ${left}`);
      }, page);

      await test('tasks: on a phone the row, the edit form and the confirmation fit the screen, and a change saves', async () => {
        const phone = await open({ viewport: viewports.phone, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
        const p = phone.page;
        try {
          const ptasks = p.getByRole('region', { name: 'Tasks' });
          const prow = ptasks.locator('.tasks-item', { has: p.locator('.tasks-summary', { hasText: 'Pay the flat rent' }) });
          await p.goto(url + '/agenda');
          await prow.waitFor({ timeout: 60_000 });
          const fits = async (what) => {
            const m = await p.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: innerWidth }));
            assert(m.scroll <= m.inner, `${what}: the page scrolls sideways (scrollWidth ${m.scroll} > innerWidth ${m.inner})`);
          };
          const inside = async (loc, what) => {
            const vw = await p.evaluate(() => innerWidth);
            const boxes = await loc.evaluateAll((els) =>
              els.map((e) => ({ ...e.getBoundingClientRect().toJSON(), name: e.getAttribute('aria-label') || e.textContent.trim().slice(0, 30) || e.tagName })),
            );
            for (const b of boxes) {
              assert(b.left >= -0.5 && b.right <= vw + 0.5, `${what}: ${b.name} spans ${b.left}–${b.right}, outside 0–${vw}`);
            }
          };
          await fits('the task list');
          await inside(prow, 'the task row');
          await inside(prow.locator('button'), 'the row buttons');

          await prow.getByRole('button', { name: 'Edit “Pay the flat rent”' }).tap();
          const form = ptasks.getByRole('form', { name: 'Edit “Pay the flat rent”' });
          await form.waitFor();
          await fits('the edit form');
          await inside(form.locator('input, select, textarea, button'), 'the edit form');
          for (const name of ['Save', 'Cancel']) {
            const b = await form.getByRole('button', { name }).boundingBox();
            assert(b && b.height >= 40, `${name} is not a full-size tap target: ${JSON.stringify(b)}`);
          }
          await shot(p, 'e2e-tasks-phone-edit');
          await form.getByLabel('Priority').selectOption('2');
          await form.getByRole('button', { name: 'Save' }).tap();
          await form.waitFor({ state: 'detached' });
          await waitFor(async () => (await prow.locator('.tasks-prio').textContent()).trim() === '!2', 'the priority badge to show !2');
          assert(prop(readTodo(file('rent.ics'), 'e2e-rent'), 'PRIORITY')?.value === '2', 'PRIORITY set on the phone did not reach rent.ics');
          await fits('the saved row');

          await prow.getByRole('button', { name: 'Delete “Pay the flat rent”' }).tap();
          const confirm = ptasks.getByRole('alertdialog', { name: 'Delete “Pay the flat rent”?' });
          await confirm.waitFor();
          await fits('the delete confirmation');
          await inside(confirm.locator('button'), 'the confirmation buttons');
          await confirm.getByRole('button', { name: 'Cancel' }).tap();
          await confirm.waitFor({ state: 'detached' });
          assert(existsSync(file('rent.ics')), 'Cancel on the phone deleted the task');
          assert(phone.errors.length === 0, `phone console errors:\n${phone.errors.join('\n')}`);
        } finally {
          await phone.ctx.close();
        }
      }, page);

      await test('tasks: no errors in the page console', async () => {
        assert(errors.length === 0, errors.join('\n'));
      });
    } finally {
      await ctx.close();
    }
    if (process.env.HESTIA_E2E_LOG || proc.exitCode !== null) console.log(`daemon state (exit ${proc.exitCode}); log tail:\n${log.slice(-4000)}`);
  } finally {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    if (fake) {
      fake.proc.stdin.end();
      fake.proc.kill();
    }
    if (process.env.HESTIA_E2E_KEEP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
