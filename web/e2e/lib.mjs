// Shared helpers for the browser tests: launch Debian's chromium through
// playwright-core (never a downloaded browser), serve files, wait for things.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const webRoot = fileURLToPath(new URL('..', import.meta.url));
export const repoRoot = join(webRoot, '..');
export const shotsDir = join(webRoot, 'test-results');
export const CHROMIUM = process.env.HESTIA_CHROMIUM || '/usr/bin/chromium';

export function requireServices() {
  return process.env.HESTIA_REQUIRE_SERVICES === '1';
}

export async function launch() {
  if (!existsSync(CHROMIUM)) {
    const msg = `chromium not found at ${CHROMIUM} (apt-get install chromium)`;
    if (requireServices()) throw new Error(msg);
    console.log(`SKIP browser tests: ${msg}`);
    return null;
  }
  // playwright starts chromium with its own fresh --user-data-dir in a temp
  // directory (and refuses one passed in args), so every run has a clean
  // profile: no cached service worker, no stored token.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // A fake microphone (a tone) with the permission granted: the voice
      // recorder test records from it.
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

export const viewports = {
  desktop: { width: 1320, height: 860 },
  phone: { width: 390, height: 844 },
};

// token, when given, is stored as the browser's credential before any page
// loads (a test that reads the home's token file, or the fixture token),
// for tests that are not about pairing.
export async function newPage(browser, { viewport = viewports.desktop, dark = false, mobile = false, token = '' } = {}) {
  const ctx = await browser.newContext({
    viewport,
    deviceScaleFactor: mobile ? 2 : 1,
    isMobile: mobile,
    hasTouch: mobile,
    colorScheme: dark ? 'dark' : 'light',
    reducedMotion: 'reduce',
  });
  if (token) {
    await ctx.addInitScript((t) => {
      if (!localStorage.getItem('hestia.token')) localStorage.setItem('hestia.token', t);
    }, token);
  }
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text());
  });
  return { ctx, page, errors };
}

export async function shot(page, name) {
  mkdirSync(shotsDir, { recursive: true });
  const path = join(shotsDir, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

let failures = 0;
let passes = 0;
/** Runs one test; on failure a screenshot of page (if given) is saved. */
export async function test(name, fn, page) {
  const t0 = Date.now();
  try {
    await fn();
    passes++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e?.stack ?? e}`);
    if (page) {
      const p = await shot(page, 'FAIL-' + name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()).catch(() => '');
      if (p) console.log(`     screenshot: ${p}`);
    }
  }
}
export function summary() {
  console.log(`${passes} passed, ${failures} failed`);
  return failures;
}

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
