// A phone pairs over the LAN listener: `hestia remote enable` on a fresh
// home, the daemon restarted with it, `hestia pair` prints the link, and a
// phone-sized chromium opens that link over TLS (the self-signed
// certificate accepted, as the user does after comparing its fingerprint
// with the one in the link) and ends in the app with its own token.
// 127.0.0.2 stands in for the LAN address: any host but 127.0.0.1 proves
// the link does not point at the loopback listener.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, repoRoot, requireServices, shot, test, viewports } from './lib.mjs';

function freePort(host) {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, host, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The SHA-256 fingerprint of the certificate served at host:port, as node
 * formats it (uppercase hex pairs and colons, the format hestia prints). */
function servedFingerprint(host, port) {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, rejectUnauthorized: false }, () => {
      resolve(s.getPeerCertificate().fingerprint256);
      s.end();
    });
    s.on('error', reject);
  });
}

export async function runRemote(browser) {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    if (requireServices()) throw new Error('go is required for the remote pairing e2e test');
    console.log('SKIP remote e2e: go not found');
    return;
  }
  // 127.0.0.2 is loopback on Linux; elsewhere (macOS) it may need an alias.
  let lanPort;
  try {
    lanPort = await freePort('127.0.0.2');
  } catch (e) {
    console.log(`SKIP remote e2e: cannot bind 127.0.0.2 (${e.message})`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'hestia-e2e-remote-'));
  const bin = join(dir, 'hestia');
  const home = join(dir, 'hestia-home');
  mkdirSync(join(dir, 'home'), { recursive: true });
  const env = {
    PATH: process.env.PATH,
    HOME: join(dir, 'home'),
    HESTIA_HOME: home,
    // A model is configured (never called) so the app opens on the chat, not on setup.
    HESTIA_LLM_BASE_URL: 'http://127.0.0.1:9/v1',
    HESTIA_LLM_API_KEY: 'k',
    HESTIA_LLM_MODEL: 'llmtest-model',
  };
  const hestia = (...args) => execFileSync(bin, args, { env, encoding: 'utf8' });
  let proc;
  let log = '';
  try {
    execFileSync('go', ['build', '-o', bin, './cmd/hestia'], { cwd: repoRoot, stdio: 'inherit' });
    const enabled = hestia('remote', 'enable', '--host', '127.0.0.2', '--addr', `127.0.0.2:${lanPort}`);
    const fp = /\n {2}([0-9A-F]{2}(?::[0-9A-F]{2}){31})\n/.exec(enabled)?.[1];
    assert(fp, `no fingerprint in: ${enabled}`);
    assert((statSync(join(home, 'tls', 'remote-key.pem')).mode & 0o777) === 0o600, 'the key is not owner-only');

    const mainPort = await freePort('127.0.0.1');
    proc = spawn(bin, ['serve', '--addr', `127.0.0.1:${mainPort}`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b) => (log = (log + b.toString()).slice(-20_000));
    proc.stdout.on('data', keep);
    proc.stderr.on('data', keep);
    const end = Date.now() + 30_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`the daemon exited\n${log}`);
      const st = JSON.parse(hestia('remote', 'status', '--json'));
      if (st.listening) break;
      if (Date.now() > end) throw new Error(`the remote listener never answered: ${st.problem}\n${log}`);
      await sleep(200);
    }

    await test('remote: a phone pairs over the TLS listener with the code from `hestia pair`', async () => {
      const pair = JSON.parse(hestia('pair', '--name', 'E2E phone', '--json'));
      const want = `https://127.0.0.2:${lanPort}/pair#code=${pair.code}&fp=${fp.replaceAll(':', '')}`;
      assert(pair.link === want, `link ${pair.link}, want ${want}`);
      assert((await servedFingerprint('127.0.0.2', lanPort)) === fp, 'the listener serves another certificate than the one in the link');

      // The self-signed certificate accepted, as the user does after checking it.
      const ctx = await browser.newContext({ viewport: viewports.phone, deviceScaleFactor: 2, isMobile: true, hasTouch: true, ignoreHTTPSErrors: true, reducedMotion: 'reduce' });
      const page = await ctx.newPage();
      try {
        await page.goto(pair.link);
        await page.getByText('What can I do for you?').waitFor({ timeout: 20_000 });
        const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
        assert(token && token.length >= 32, 'no token stored after pairing');
        assert(token !== readFileSync(join(home, 'auth-token'), 'utf8').trim(), 'the phone got the admin token, not its own');
        assert(!page.url().includes(pair.code), `the used code stays in the address bar: ${page.url()}`);
        assert(page.url().startsWith(`https://127.0.0.2:${lanPort}/`), `left the LAN listener: ${page.url()}`);
        await shot(page, 'e2e-remote-paired-phone');
        const devices = JSON.parse(hestia('devices', 'list', '--json')).devices;
        assert(devices.some((d) => d.name === 'E2E phone' && d.last_seen_at), `device not listed as used: ${JSON.stringify(devices)}`);
        // The code was single-use: opening the link again does not pair.
        const r = await page.request.post(`https://127.0.0.2:${lanPort}/api/pair/exchange`, { data: { code: pair.code } });
        assert(r.status() === 401, `reused code answered ${r.status()}`);
      } catch (e) {
        await shot(page, 'FAIL-remote-pair').catch(() => {});
        throw e;
      } finally {
        await ctx.close();
      }
    });
  } finally {
    if (proc && proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
