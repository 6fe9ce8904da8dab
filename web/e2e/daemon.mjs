// The real flow: a hestia daemon built from this repository, with its model
// endpoint pointed at the scripted model server (fakellm), driven through
// the built UI in chromium. Every scenario asserts what a user would see and,
// where it matters, what actually happened on disk.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { assert, newPage, repoRoot, requireServices, shot, test, viewports } from './lib.mjs';

function hasGo() {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(fn, what, timeoutMs = 15_000) {
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

function startFakeLLM(bin) {
  const p = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: p.stdout });
    rl.once('line', (line) => resolve({ proc: p, ...JSON.parse(line) }));
    p.once('exit', (code) => reject(new Error(`fakellm exited with ${code}`)));
  });
}

class Daemon {
  constructor(bin, dir, port, llmURL, sttURL) {
    Object.assign(this, { bin, dir, port, llmURL, sttURL, log: '' });
    this.url = `http://127.0.0.1:${port}`;
    this.home = join(dir, 'home');
    mkdirSync(this.home, { recursive: true });
  }
  async start() {
    if (this.sttURL) {
      // The stt tier points at fakellm's speech endpoint (voice recorder test).
      const home = join(this.dir, 'hestia-home');
      mkdirSync(home, { recursive: true });
      writeFileSync(join(home, 'config.toml'), `[llm.providers.stt]\nbase_url = "${this.sttURL}/v1"\n\n[llm.tiers]\nstt = ["stt/whisper-1"]\n`);
    }
    this.proc = spawn(this.bin, ['serve', '--addr', `127.0.0.1:${this.port}`], {
      env: {
        PATH: process.env.PATH,
        HOME: this.home,
        HESTIA_HOME: join(this.dir, 'hestia-home'),
        // noModel: a daemon as a first run sees it, with no model at all.
        ...(this.noModel ? {} : { HESTIA_LLM_BASE_URL: this.llmURL, HESTIA_LLM_API_KEY: 'test-key', HESTIA_LLM_MODEL: 'llmtest-model' }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (b) => {
      this.log = (this.log + b.toString()).slice(-20_000);
    };
    // The local pairing codes the daemon prints for the user to type.
    this.codes = [];
    createInterface({ input: this.proc.stdout }).on('line', (line) => {
      const m = /^Pairing code for the browser at .*: ([A-Z0-9]{4}-[A-Z0-9]{4})\. /.exec(line);
      if (m) this.codes.push(m[1]);
    });
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.exited = new Promise((r) => this.proc.once('exit', r));
    await waitFor(async () => {
      if (this.proc.exitCode !== null) throw Object.assign(new Error('the daemon exited'), { fatal: true });
      return (await fetch(this.url + '/health')).ok;
    }, 'the daemon to answer /health', 30_000).catch((e) => {
      throw new Error(`${e.message}\n--- daemon log ---\n${this.log}`);
    });
  }
  /** The home's token, as a program that can read the home has it. */
  token() {
    return readFileSync(join(this.dir, 'hestia-home', 'auth-token'), 'utf8').trim();
  }
  /** Pairs page the way a user on this machine does: it asks for a code,
   * the daemon prints one, the user types it. since: codes printed before. */
  async pairLocally(page, since) {
    const input = page.getByLabel('Pairing code');
    await input.waitFor();
    const code = await waitFor(() => this.codes.length > since && this.codes[this.codes.length - 1], 'the daemon to print a pairing code');
    await input.fill(code);
    await page.getByRole('button', { name: 'Pair this browser' }).click();
  }
  async stop() {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    proc.kill('SIGTERM');
    // Bound to this process: a later start() must not be killed by this timer.
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

export async function runDaemon(browser) {
  if (!hasGo()) {
    if (requireServices()) throw new Error('go is required for the daemon e2e tests');
    console.log('SKIP daemon e2e: go not found');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'hestia-e2e-'));
  const bin = join(dir, 'hestia');
  const fakeBin = join(dir, 'fakellm');
  let fake;
  let daemon;
  try {
    const t0 = Date.now();
    execFileSync('go', ['build', '-o', bin, './cmd/hestia'], { cwd: repoRoot, stdio: 'inherit' });
    execFileSync('go', ['build', '-o', fakeBin, './web/e2e/fakellm'], { cwd: repoRoot, stdio: 'inherit' });
    console.log(`built daemon and fakellm in ${Date.now() - t0} ms`);
    fake = await startFakeLLM(fakeBin);
    const push = async (...turns) => {
      const r = await fetch(fake.control + '/push', { method: 'POST', body: JSON.stringify(turns) });
      assert(r.ok, `pushing turns: ${await r.text()}`);
    };
    daemon = new Daemon(bin, dir, await freePort(), fake.url, fake.control);
    await daemon.start();

    const { ctx, page, errors } = await newPage(browser);
    const userBubbles = () => page.locator('.msg.user .bubble').allTextContents();
    const send = async (text) => {
      const box = page.getByLabel('Message');
      await box.fill(text);
      await box.press('Enter');
    };
    try {
      await test('daemon: a same-machine browser pairs with the code the daemon prints', async () => {
        const since = daemon.codes.length;
        await page.goto(daemon.url + '/');
        await page.getByLabel('Pairing code').waitFor();
        assert(!(await page.evaluate(() => localStorage.getItem('hestia.token'))), 'a token before the code was typed');
        await shot(page, 'e2e-pair-local');
        await daemon.pairLocally(page, since);
        await page.getByText('What can I do for you?').waitFor();
        const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
        assert(token && token.length >= 32, 'no token stored after local pairing');
        await page.locator('.conn-live').waitFor();
      }, page);

      await test('daemon: a message streams into a reply', async () => {
        // Chunks far enough apart that a loaded machine still renders a partial reply.
        await push({ text: ['Hello ', 'from ', 'your ', '**own** ', 'machine.'], chunk_delay_ms: 700 });
        await send('Say hello');
        await page.locator('.md-streaming').first().waitFor({ timeout: 20_000 });
        const partial = await page.locator('.md-streaming').first().textContent();
        assert(partial && !partial.includes('machine.'), `expected a partial reply while streaming, got ${partial}`);
        await shot(page, 'e2e-streaming');
        await page.locator('.msg.assistant .md strong', { hasText: 'own' }).waitFor();
        await page.getByText('machine.').waitFor();
        // The persisted message replaces the streamed text.
        await waitFor(async () => (await page.locator('.md-streaming').count()) === 0, 'the streamed text to be replaced by the saved reply', 20_000);
        assert((await page.getByText('machine.').count()) === 1, 'reply shown twice');
        assert(/\/c\/c_/.test(page.url()), `URL did not move to the new chat: ${page.url()}`);
      }, page);

      await test('daemon: approve with edit runs the edited input', async () => {
        await push(
          { tool_calls: [{ id: 'call_w1', name: 'write_file', arguments: JSON.stringify({ path: '~/notes.txt', content: 'draft from the model' }) }] },
          { text: ['Saved your note.'] },
        );
        await send('Save a note for me');
        await page.getByText('Approval needed').waitFor();
        await page.getByText(/write \d+ bytes to .*notes\.txt/).waitFor();
        await shot(page, 'e2e-approval');
        await page.getByRole('button', { name: 'Edit', exact: true }).click();
        const content = page.getByLabel('Content', { exact: true });
        assert((await content.inputValue()) === 'draft from the model', 'edit form not prefilled with the arguments');
        await content.fill('edited by the user');
        await shot(page, 'e2e-edit');
        await page.getByText('Run with these changes').click();
        await page.getByText('Done with your edits').waitFor();
        await page.getByText('Saved your note.').waitFor();
        const written = readFileSync(join(daemon.home, 'notes.txt'), 'utf8');
        assert(written === 'edited by the user', `file has ${JSON.stringify(written)}`);
        await page.getByText('Write file', { exact: true }).first().click();
        await page.getByText('"edited by the user"').first().waitFor();
        await shot(page, 'e2e-edited');
      }, page);

      await test('daemon: deny shows NOT DONE and nothing is written', async () => {
        await push(
          { tool_calls: [{ id: 'call_w2', name: 'write_file', arguments: JSON.stringify({ path: '~/secret-plan.txt', content: 'x' }) }] },
          { text: ['Understood, I did not write it.'] },
        );
        await send('Write my secret plan');
        await page.getByText('Approval needed').waitFor();
        await page.getByRole('button', { name: 'Deny', exact: true }).click();
        await page.getByLabel(/Why not/).fill('not now');
        await page.getByRole('button', { name: 'Deny', exact: true }).click();
        await page.getByText('NOT DONE').first().waitFor();
        await page.getByText('Understood, I did not write it.').waitFor();
        assert(!existsSync(join(daemon.home, 'secret-plan.txt')), 'denied file was written');
        const reqs = await (await fetch(fake.control + '/requests')).json();
        const last = reqs.at(-1).map((m) => m.Content).join('\n');
        assert(/NOT done/i.test(last) && last.includes('not now'), 'model was not told the action was NOT done with the note');
        await shot(page, 'e2e-denied');
      }, page);

      await test('daemon: ask_user shows a question card and the answer goes back', async () => {
        await push(
          { tool_calls: [{ id: 'call_q1', name: 'ask_user', arguments: JSON.stringify({ question: 'Which account should I use?', choices: ['work', 'home'] }) }] },
          { text: ['Using the work account.'] },
        );
        await send('Check my mail');
        await page.getByText('Which account should I use?').waitFor();
        await shot(page, 'e2e-question');
        await page.getByRole('button', { name: 'work', exact: true }).click();
        await page.getByText('Using the work account.').waitFor();
        const reqs = await (await fetch(fake.control + '/requests')).json();
        assert(reqs.at(-1).some((m) => m.Content.includes('work')), 'the answer did not reach the model');
      }, page);

      await test('daemon: an approval decided by another client updates the card live', async () => {
        await push(
          { tool_calls: [{ id: 'call_w3', name: 'write_file', arguments: JSON.stringify({ path: '~/from-elsewhere.txt', content: 'approved from the terminal' }) }] },
          { text: ['Written.'] },
        );
        await send('Write it, I will approve from the terminal');
        await page.getByText('Approval needed').waitFor();
        const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
        const auth = { Authorization: `Bearer ${token}` };
        const { approvals } = await (await fetch(daemon.url + '/api/approvals', { headers: auth })).json();
        assert(approvals.length === 1, `expected one pending approval, got ${approvals.length}`);
        const r = await fetch(daemon.url + '/api/approvals/' + approvals[0].id, {
          method: 'POST',
          headers: { ...auth, 'Content-Type': 'application/json' },
          body: JSON.stringify({ decision: 'approve' }),
        });
        assert(r.ok, `approving from outside: ${r.status}`);
        await page.getByText('Written.').waitFor();
        assert((await page.getByText('Approval needed').count()) === 0, 'approval card still shown after it was decided elsewhere');
        assert(readFileSync(join(daemon.home, 'from-elsewhere.txt'), 'utf8') === 'approved from the terminal', 'file not written');
      }, page);

      await test('daemon: a failed turn shows the error inline and its Retry works', async () => {
        await push({ status: 400, body: JSON.stringify({ error: { message: 'model exploded', type: 'invalid_request_error' } }) });
        await send('This will fail once');
        const inline = page.locator('.turn-error');
        await inline.waitFor();
        await shot(page, 'e2e-turn-error');
        await push({ text: ['Second time lucky.'] });
        await inline.getByRole('button', { name: 'Retry' }).click();
        await page.getByText('Second time lucky.').waitFor();
        // Retry re-runs the stored turn: the question is not sent twice.
        const copies = await page.getByText('This will fail once', { exact: true }).count();
        assert(copies === 1, `retry repeated the user's message (${copies} copies)`);
      }, page);

      await test('daemon: "allow this chat" lets the next gated call run without asking', async () => {
        await push(
          { tool_calls: [{ id: 'call_m1', name: 'write_file', arguments: JSON.stringify({ path: '~/mode-1.txt', content: 'one' }) }] },
          { tool_calls: [{ id: 'call_m2', name: 'write_file', arguments: JSON.stringify({ path: '~/mode-2.txt', content: 'two' }) }] },
          { text: ['Both files written.'] },
        );
        await send('Write two files');
        await page.getByText('Approval needed').waitFor();
        await page.getByLabel('More approve options').click();
        await page.getByRole('menuitem', { name: /in this chat/ }).click();
        await page.getByText('Both files written.').waitFor();
        assert(existsSync(join(daemon.home, 'mode-2.txt')), 'second call did not run under the temporary mode');
        await page.locator('.mode-pill').waitFor();
        await shot(page, 'e2e-mode');
        await page.getByLabel('End temporary mode').click();
        await page.locator('.mode-pill').waitFor({ state: 'detached' });
      }, page);

      await test('daemon: Stop cancels a running reply', async () => {
        await push({ text: ['This ', 'reply ', 'takes ', 'a ', 'long ', 'time ', 'to ', 'finish ', 'and ', 'is ', 'stopped.'], chunk_delay_ms: 400 });
        await send('Tell me a long story');
        await page.locator('.md-streaming').first().waitFor();
        await page.getByLabel('Stop').click();
        await page.getByLabel('Stop').waitFor({ state: 'detached', timeout: 10_000 });
        assert((await page.locator('.toast-error').count()) === 0, 'cancelling showed an error');
        assert((await page.getByText('stopped.').count()) === 0, 'the reply kept streaming after Stop');
      }, page);

      await test('daemon: a second tab on a running chat shows Working…, Stop and the pending approval', async () => {
        await push(
          { tool_calls: [{ id: 'call_tab', name: 'write_file', arguments: JSON.stringify({ path: '~/from-second-tab.txt', content: 'approved in another tab' }) }] },
          { text: ['Written from the second tab.'] },
        );
        await send('Write from-second-tab.txt');
        await page.getByText('Approval needed').waitFor();
        const second = await ctx.newPage();
        try {
          // Opened after the turn started: only GET /api/chats/{id}/status
          // and the pending approvals can tell it the turn is running.
          await second.goto(page.url());
          await second.getByText('Working…').waitFor({ timeout: 30_000 });
          await second.getByLabel('Stop').waitFor();
          await second.getByText('Approval needed').waitFor();
          await second.getByRole('button', { name: 'Approve', exact: true }).click();
          await second.getByText('Written from the second tab.').waitFor();
          await page.getByText('Written from the second tab.').waitFor();
          await second.getByText('Working…').waitFor({ state: 'detached', timeout: 30_000 });
          await waitFor(async () => existsSync(join(daemon.home, 'from-second-tab.txt')), 'the write approved in the second tab');
        } finally {
          await second.close();
        }
      }, page);

      await test('daemon: a write outside the allowed folders says why on its card, and a reply claiming success is marked', async () => {
        await push(
          { tool_calls: [{ id: 'call_out', name: 'write_file', arguments: JSON.stringify({ path: join(daemon.dir, 'outside-roots.txt'), content: 'x' }) }] },
          { text: ['Done, I saved it next to the daemon.'] },
        );
        await send('Save a note outside my folders');
        await page.getByText('Done, I saved it next to the daemon.').waitFor();
        const card = page.locator('.tool-card[data-tool="write_file"]').last();
        await waitFor(async () => /blocked by policy/.test(await card.textContent()) && /Settings/.test(await card.textContent()), 'the blocked card to give its reason');
        await page.getByText('A tool call in this turn did not run', { exact: false }).last().waitFor();
        assert(!existsSync(join(daemon.dir, 'outside-roots.txt')), 'the blocked write happened');
      }, page);

      await test('daemon: reload keeps the transcript', async () => {
        const before = await userBubbles();
        await page.reload();
        await page.getByText('Understood, I did not write it.').waitFor();
        assert(JSON.stringify(await userBubbles()) === JSON.stringify(before), `transcript changed on reload: ${before} vs ${await userBubbles()}`);
        await page.getByText('NOT DONE').first().waitFor();
        await page.getByText('Done with your edits').waitFor();
      }, page);

      await test('daemon: reconnects after a restart and catches up without duplicates', async () => {
        const before = await userBubbles();
        await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
        await daemon.stop();
        await page.getByText(/Reconnecting/).first().waitFor();
        await shot(page, 'e2e-reconnecting');
        // With the daemon down, the service worker still opens the app shell.
        await page.reload();
        await page.getByText(/Reconnecting/).first().waitFor();
        await page.getByLabel('Message').waitFor();
        await daemon.start();
        await page.locator('.conn-live').waitFor({ timeout: 20_000 });
        await push({ text: ['Back ', 'again.'] });
        await send('Are you there?');
        await page.getByText('Back again.').waitFor();
        const after = await userBubbles();
        assert(JSON.stringify(after) === JSON.stringify([...before, 'Are you there?']), `messages after restart: ${JSON.stringify(after)}`);
        const assistants = await page.locator('.msg.assistant').count();
        await sleep(500);
        assert((await page.locator('.msg.assistant').count()) === assistants, 'duplicate assistant messages appeared');
      }, page);

      await test('daemon: usage, audit and system pages show what happened', async () => {
        const chatURL = page.url();
        await page.getByRole('link', { name: 'Usage' }).click();
        await page.getByText('Cost by day').waitFor();
        const calls = await page.locator('.stat', { hasText: 'Model calls' }).locator('.stat-value').textContent();
        assert(Number(calls) > 0, `usage shows ${calls} model calls`);
        await shot(page, 'e2e-usage');
        await page.getByRole('link', { name: 'Audit' }).click();
        await page.locator('.tl-item', { hasText: 'tool.run' }).first().click();
        await page.getByText('Payload (redacted)').waitFor();
        await shot(page, 'e2e-audit');
        await page.getByLabel('Event type').selectOption('approval.resolved');
        await waitFor(async () => {
          const types = await page.locator('.tl-type').allTextContents();
          return types.length > 0 && types.every((t) => t === 'approval.resolved');
        }, 'the audit filter to apply');
        await page.getByRole('button', { name: 'Verify chain' }).click();
        await page.getByText(/Chain intact/).waitFor();
        await page.getByRole('link', { name: 'System' }).click();
        await page.getByText('Stores').waitFor();
        await page.locator('details.diagnostics summary', { hasText: 'Tools' }).click();
        await page.locator('tr', { hasText: 'write_file' }).getByText('Asks you').waitFor();
        await shot(page, 'e2e-system');
        await page.goto(chatURL);
        await page.getByText('Back again.').waitFor();
      }, page);

      await test('daemon: works in a phone-sized viewport', async () => {
        const chatURL = page.url();
        const phone = await newPage(browser, { viewport: viewports.phone, mobile: true, token: daemon.token() });
        try {
          await phone.page.goto(chatURL);
          await phone.page.getByText('Back again.').waitFor();
          const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
          assert(!overflow, 'horizontal scrolling on a phone');
          assert(await phone.page.getByLabel('Message').isVisible(), 'composer not visible on a phone');
          await shot(phone.page, 'e2e-phone');
          await phone.page.getByLabel('Open menu').click();
          await phone.page.getByRole('link', { name: 'System' }).click();
          await phone.page.getByText('Running').first().waitFor();
          await phone.page.locator('details.diagnostics summary', { hasText: 'Tools' }).click();
          await phone.page.getByText('write_file').first().waitFor();
          await shot(phone.page, 'e2e-phone-system');
        } finally {
          await phone.ctx.close();
        }
      }, page);

      await test('daemon: another browser pairs with a one-time code link', async () => {
        const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
        const r = await fetch(daemon.url + '/api/pair/codes', { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
        assert(r.ok, `creating a pairing code: ${r.status}`);
        const { code } = await r.json();
        const other = await newPage(browser);
        try {
          await other.page.goto(`${daemon.url}/pair#code=${code}`);
          await other.page.getByText('Say hello').first().waitFor();
          const got = await other.page.evaluate(() => localStorage.getItem('hestia.token'));
          // Pairing makes a device of its own, never hands out the local admin token.
          assert(got && got !== token && got.startsWith('hd_'), 'code exchange did not store a new device token');
          assert(!other.page.url().includes(code), 'pairing code left in the address bar');
          // The code is single-use.
          const again = await fetch(daemon.url + '/api/pair/exchange', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) });
          assert(again.status === 401, `reused code answered ${again.status}`);
        } finally {
          await other.ctx.close();
        }
      }, page);

      await test('daemon: a phone pairs by scanning the QR code on the System page, and revoking it ends its session', async () => {
        page.once('dialog', (d) => d.accept());
        await page.getByRole('link', { name: 'System' }).click();
        await page.getByRole('button', { name: 'Pair a device' }).click();
        await page.getByPlaceholder('My phone').fill('E2E phone');
        await page.getByRole('button', { name: 'Show pairing code' }).click();
        const qr = page.getByRole('img', { name: /QR code/ });
        await qr.waitFor();
        assert((await qr.innerHTML()).includes('<svg'), 'no QR code drawn');
        await shot(page, 'e2e-pair-qr');
        const link = (await page.locator('.pair-link').textContent()).trim();
        assert(link.startsWith(daemon.url + '/pair#code='), `pairing link ${link}`);
        const phone = await newPage(browser, { viewport: viewports.phone, mobile: true });
        try {
          // What the camera would open.
          await phone.page.goto(link);
          await phone.page.locator('.conn-live').waitFor();
          const devTok = await phone.page.evaluate(() => localStorage.getItem('hestia.token'));
          assert(devTok && devTok.startsWith('hd_'), 'the phone did not get a device token');
          const row = page.locator('tr', { hasText: 'E2E phone' });
          await row.waitFor({ timeout: 15_000 });
          await row.getByRole('button', { name: 'Revoke E2E phone' }).click();
          await row.getByText(/Revoked/).waitFor();
          const r = await fetch(daemon.url + '/api/chats', { headers: { Authorization: `Bearer ${devTok}` } });
          assert(r.status === 401, `revoked token answered ${r.status}`);
          // Its event stream was closed and the reconnect refused: the app
          // drops the revoked token and shows the pairing screen.
          await waitFor(async () => (await phone.page.evaluate(() => localStorage.getItem('hestia.token'))) !== devTok, 'the phone to drop its revoked token');
        } finally {
          await phone.ctx.close();
        }
      }, page);

      await test('daemon: a voice note is recorded, transcribed and shown in the composer', async () => {
        await page.getByRole('link', { name: 'New chat' }).click();
        await page.getByRole('button', { name: 'Record a voice note' }).click();
        await page.getByRole('button', { name: 'Stop recording' }).waitFor();
        await sleep(1200);
        await page.getByRole('button', { name: 'Stop recording' }).click();
        await waitFor(async () => /voice note of [1-9]\d* bytes \(audio\//.test(await page.getByLabel('Message').inputValue()), 'the transcript in the composer');
        await shot(page, 'e2e-voice');
        await page.getByLabel('Message').fill('');
      }, page);

      await test('daemon: a bad stored token sends the browser back to pairing', async () => {
        const other = await newPage(browser);
        try {
          await other.page.addInitScript(() => {
            if (!sessionStorage.getItem('seeded')) {
              localStorage.setItem('hestia.token', 'wrong-token');
              sessionStorage.setItem('seeded', '1');
            }
          });
          const since = daemon.codes.length;
          await other.page.goto(daemon.url + '/');
          // Back on the pairing screen; the code from the terminal recovers.
          await daemon.pairLocally(other.page, since);
          await other.page.getByText('What can I do for you?').waitFor();
          await other.page.locator('.conn-live').waitFor();
          const got = await other.page.evaluate(() => localStorage.getItem('hestia.token'));
          assert(got && got !== 'wrong-token', 'wrong token was not replaced');
        } finally {
          await other.ctx.close();
        }
      }, page);

      await test('daemon: chats can be renamed, searched and deleted', async () => {
        await page.getByRole('link', { name: 'New chat' }).click();
        await push({ text: ['Scratch reply.'] });
        await send('A scratch chat');
        await page.getByText('Scratch reply.').waitFor();
        await page.getByLabel('Rename chat').click();
        await page.getByLabel('Chat title', { exact: true }).fill('Scratchpad');
        await page.getByLabel('Chat title', { exact: true }).press('Enter');
        await page.locator('.chat-item', { hasText: 'Scratchpad' }).waitFor();
        await page.getByLabel('Search chat titles').fill('scratch');
        await waitFor(async () => (await page.locator('.chat-item').count()) === 1, 'the search to narrow the list');
        await page.getByLabel('Search chat titles').fill('');
        page.once('dialog', (d) => d.accept());
        await page.getByLabel('Delete chat').click();
        await page.getByText('What can I do for you?').waitFor();
        await page.locator('.chat-item', { hasText: 'Scratchpad' }).waitFor({ state: 'detached' });
        assert((await page.locator('.chat-item').count()) === 1, 'other chats disappeared');
      }, page);

      await (await import('./chatpolish.mjs')).runChatPolishFlow({ page, daemon, push, send, waitFor });
      await (await import('./mail.mjs')).runMailFlow({ page, daemon, push, send, waitFor });
      await (await import('./calendar.mjs')).runCalendarFlow({ page, daemon, waitFor });
      await (await import('./settings.mjs')).runSettingsFlow({ page, daemon, waitFor });
      await (await import('./mcp.mjs')).runMCPFlow({ page, daemon });
      await (await import('./bgflow.mjs')).runBackgroundFlow({ page, daemon, push, send, waitFor, fake });

      await (await import('./chatpolish.mjs')).runNoModelFlow({ browser, Daemon, bin, dir, port: await freePort() });
      await (await import('./setup.mjs')).runSetupFlow({ browser, Daemon, bin, dir, port: await freePort(), llmURL: fake.url });

      await test('daemon: no errors in the page console', async () => {
        const real = errors.filter((e) => !/net::ERR_|Failed to fetch|NetworkError|network error/i.test(e));
        assert(real.length === 0, real.join('\n'));
      });
    } finally {
      await ctx.close();
    }
    if (process.env.HESTIA_E2E_LOG || daemon.proc.exitCode !== null) console.log(`daemon state (exit ${daemon.proc.exitCode}); log tail:\n${daemon.log.slice(-4000)}`);
  } finally {
    await daemon?.stop();
    if (fake) {
      fake.proc.stdin.end();
      fake.proc.kill();
    }
    if (process.env.HESTIA_E2E_KEEP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
