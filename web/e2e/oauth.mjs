// Connecting an OAuth account from Settings in real Chromium: a daemon
// built from this repository names two provider = "custom" accounts at the
// fake authorization server (internal/oauth/oauthtest/cmd/fakeoauth, with
// its Allow/Deny consent page). Connect opens the provider in a new tab;
// Allow sends that tab to the daemon's loopback listener and the account
// turns ok in Settings, with its token file owner-only and no token on any
// page; Deny on the second account shows the provider's error; Disconnect
// revokes and deletes the tokens.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { assert, newPage, repoRoot, requireServices, shot, test, viewports } from './lib.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function hasGo() {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

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

/** The fake provider as a process; its first stdout line says where it is. */
function startFakeOAuth(bin) {
  const p = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    createInterface({ input: p.stdout }).once('line', (line) => resolve({ proc: p, ...JSON.parse(line) }));
    p.once('exit', (code) => reject(new Error(`fakeoauth exited with ${code}`)));
  });
}

function accountTOML(name, fake) {
  return `[[oauth.accounts]]
name = "${name}"
provider = "custom"
client_id = "${fake.client_id}"
scopes = ["mail", "calendar"]
auth_url = "${fake.auth_url}"
token_url = "${fake.token_url}"
revoke_url = "${fake.revoke_url}"
`;
}

/** Every secret a token file holds: the refresh token and access tokens. */
function tokensIn(file) {
  const out = [];
  const walk = (v, key) => {
    if (typeof v === 'string') {
      if (/token/i.test(key ?? '') && v.length >= 16) out.push(v);
    } else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, /token/i.test(k) ? k : key ?? k);
  };
  walk(JSON.parse(readFileSync(file, 'utf8')));
  return out;
}

export async function runOAuth(browser) {
  if (!hasGo()) {
    if (requireServices()) throw new Error('go is required for the OAuth e2e test');
    console.log('SKIP oauth e2e: go not found');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'hestia-oauth-e2e-'));
  const home = join(dir, 'home');
  const hestiaHome = join(dir, 'hestia-home');
  mkdirSync(home, { recursive: true });
  mkdirSync(hestiaHome, { recursive: true });
  let fake, daemon;
  let log = '';
  try {
    const t0 = Date.now();
    const bin = join(dir, 'hestia');
    const fakeBin = join(dir, 'fakeoauth');
    execFileSync('go', ['build', '-o', bin, './cmd/hestia'], { cwd: repoRoot, stdio: 'inherit' });
    execFileSync('go', ['build', '-o', fakeBin, './internal/oauth/oauthtest/cmd/fakeoauth'], { cwd: repoRoot, stdio: 'inherit' });
    console.log(`built daemon and fakeoauth in ${Date.now() - t0} ms`);
    fake = await startFakeOAuth(fakeBin);
    writeFileSync(join(hestiaHome, 'config.toml'), `[oauth]\n\n${accountTOML('work', fake)}\n${accountTOML('other', fake)}`);
    // Not a first run: no model is needed here, and setup stays out of the way.
    writeFileSync(join(hestiaHome, 'setup-dismissed'), 'dismissed\n', { mode: 0o600 });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    daemon = spawn(bin, ['serve', '--addr', `127.0.0.1:${port}`], {
      env: { PATH: process.env.PATH, HOME: home, HESTIA_HOME: hestiaHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (b) => (log = (log + b.toString()).slice(-40_000));
    daemon.stdout.on('data', keep);
    daemon.stderr.on('data', keep);
    await waitFor(async () => {
      if (daemon.exitCode !== null) throw Object.assign(new Error('the daemon exited'), { fatal: true });
      return (await fetch(url + '/health')).ok;
    }, 'the daemon to answer /health', 30_000);
    const token = readFileSync(join(hestiaHome, 'auth-token'), 'utf8').trim();
    const tokenFile = (name) => join(hestiaHome, 'oauth', `${name}.json`);

    const { ctx, page, errors } = await newPage(browser, { token });
    try {
      const accounts = page.getByRole('region', { name: 'Accounts', exact: true });
      const row = (name) => accounts.locator('li', { has: page.locator('strong', { hasText: new RegExp(`^${name}$`) }) });

      await test('oauth: Connect in Settings, Allow at the provider, the account turns ok', async () => {
        await page.goto(url + '/settings');
        await row('work').locator('.tag', { hasText: /^not connected$/ }).waitFor();
        assert(
          (await accounts.textContent()).includes('works only in a browser on the machine Hestia runs on'),
          'the section does not say the sign-in needs a browser on this machine',
        );
        const [first] = await Promise.all([ctx.waitForEvent('page'), row('work').getByRole('button', { name: 'Connect work' }).click()]);
        await first.getByRole('heading', { name: 'Allow Hestia?' }).waitFor();
        // A closed tab is not the end: the same sign-in opens again.
        const firstURL = first.url();
        await first.close();
        const [tab] = await Promise.all([ctx.waitForEvent('page'), row('work').getByRole('button', { name: 'Open the sign-in page for work again' }).click()]);
        await tab.getByRole('heading', { name: 'Allow Hestia?' }).waitFor();
        assert(tab.url() === firstURL, 'opening the sign-in again started another one');
        assert(tab.url().startsWith(fake.auth_url + '?'), `the tab went to ${tab.url()}`);
        assert((await tab.locator('#scope').textContent()) === 'mail calendar', 'the consent page asks for other scopes');
        assert((await tab.evaluate(() => window.opener)) === null, 'the provider tab can reach the Hestia page through window.opener');
        const status = row('work').getByRole('status');
        await status.getByText('Waiting for you to sign in to work in the new tab').waitFor();
        await shot(page, 'e2e-oauth-waiting');
        await tab.getByRole('button', { name: 'Allow' }).click();
        await tab.getByRole('heading', { name: 'Connected' }).waitFor();
        const back = new URL(tab.url());
        assert(back.hostname === '127.0.0.1' && back.port !== String(port), `the provider sent the tab to ${back.origin}, not a loopback listener`);
        await tab.close();
        await waitFor(async () => (await status.textContent()) === 'Connected work.', 'Settings to say the account is connected');
        await row('work').locator('.tag', { hasText: /^ok$/ }).waitFor();
        await row('work').getByRole('button', { name: 'Reconnect work' }).waitFor();
        await shot(page, 'e2e-oauth-connected');

        const file = tokenFile('work');
        assert(existsSync(file), 'no token file after connecting');
        const mode = statSync(file).mode & 0o777;
        assert(mode === 0o600, `token file mode ${mode.toString(8)}, want 600`);
        const secrets = tokensIn(file);
        assert(secrets.length >= 2, `the token file holds ${secrets.length} tokens`);
        await page.reload();
        await row('work').locator('.tag', { hasText: /^ok$/ }).waitFor();
        const html = await page.content();
        const api = await Promise.all(
          ['/api/settings', '/api/accounts', '/api/accounts/work'].map(async (p) => (await fetch(url + p, { headers: { Authorization: `Bearer ${token}` } })).text()),
        );
        for (const s of secrets) {
          assert(!html.includes(s), 'a token is in the Settings page');
          assert(!api.some((b) => b.includes(s)), 'a token is in an API answer');
          assert(!log.includes(s), "a token is in the daemon's log");
        }
      }, page);

      await test("oauth: Deny at the provider shows the provider's error in Settings", async () => {
        const [tab] = await Promise.all([ctx.waitForEvent('page'), row('other').getByRole('button', { name: 'Connect other' }).click()]);
        await tab.getByRole('button', { name: 'Deny' }).click();
        await tab.getByRole('heading', { name: 'Sign-in failed' }).waitFor();
        assert((await tab.textContent('body')).includes('access_denied'), 'the loopback page does not name the refusal');
        await tab.close();
        const status = row('other').getByRole('status');
        await waitFor(async () => /^Sign-in failed: .*denied.*access_denied \(the user said no\)$/.test(await status.textContent()), "Settings to show the provider's refusal");
        assert((await row('other').locator('.tag').first().textContent()) === 'not connected', 'a refused account is not shown as not connected');
        assert(!existsSync(tokenFile('other')), 'a token file was written for a refused sign-in');
        await shot(page, 'e2e-oauth-denied');
      }, page);

      await test('oauth: Disconnect revokes and deletes the tokens', async () => {
        page.once('dialog', (d) => d.accept());
        await row('work').getByRole('button', { name: 'Disconnect work' }).click();
        await row('work').getByRole('status').getByText("Disconnected: the provider revoked Hestia's access and the tokens are deleted.").waitFor();
        await row('work').getByRole('button', { name: 'Connect work' }).waitFor();
        assert(!existsSync(tokenFile('work')), 'the token file is still there');
        assert(errors.length === 0, 'console errors: ' + errors.join('; '));
      }, page);
    } finally {
      await ctx.close();
    }

    await test('oauth: the Accounts section on a phone', async () => {
      const phone = await newPage(browser, { viewport: viewports.phone, mobile: true, token });
      try {
        await phone.page.goto(url + '/settings');
        const acc = phone.page.getByRole('region', { name: 'Accounts', exact: true });
        await acc.getByRole('button', { name: 'Connect work' }).scrollIntoViewIfNeeded();
        const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
        assert(!overflow, 'Settings scrolls horizontally on a phone');
        const box = await acc.getByRole('button', { name: 'Connect work' }).boundingBox();
        assert(box && box.height >= 43, `the Connect button is ${box?.height}px tall on a phone`);
        // Inside the account's own box, not beside it off the screen.
        const li = await acc.locator('li', { hasText: 'work' }).last().boundingBox();
        assert(box.x >= li.x && box.x + box.width <= li.x + li.width + 1 && box.x + box.width <= viewports.phone.width, `the Connect button sits outside its account (${JSON.stringify({ box, li })})`);
        const st = await acc.locator('li', { hasText: 'other' }).getByRole('status').boundingBox();
        assert(st && st.x + st.width <= viewports.phone.width, 'the sign-in status runs off the screen');
        await shot(phone.page, 'e2e-oauth-phone');
      } finally {
        await phone.ctx.close();
      }
    });
    if (process.env.HESTIA_E2E_LOG) console.log(`daemon log tail:\n${log.slice(-4000)}`);
  } catch (e) {
    console.log(`oauth e2e failed: ${e?.stack ?? e}\n--- daemon log ---\n${log.slice(-4000)}`);
    throw e;
  } finally {
    if (daemon && daemon.exitCode === null) {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
    }
    fake?.proc.kill();
    if (process.env.HESTIA_E2E_KEEP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
