// Renders public/icon.svg into the PNG icons the manifest lists, using the
// system chromium. Run by hand after changing the icon (the PNGs are
// committed so a build needs no browser): node scripts/icons.mjs
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const pub = fileURLToPath(new URL('../public/', import.meta.url));
const svg = readFileSync(join(pub, 'icon.svg'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'hestia-icons-'));
const ctx = await chromium.launchPersistentContext(dir, {
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
});
const page = await ctx.newPage();
const uri = 'data:image/svg+xml;base64,' + Buffer.from(svg).toString('base64');
for (const [name, size, pad] of [
  ['icon-192.png', 192, 0],
  ['icon-512.png', 512, 0],
  // Maskable: full-bleed background, the flame inside the 80% safe zone.
  ['icon-maskable-512.png', 512, 0.12],
]) {
  await page.setViewportSize({ width: size, height: size });
  const inner = Math.round(size * (1 - 2 * pad));
  await page.setContent(
    `<body style="margin:0;background:${pad ? '#d4572a' : 'transparent'};display:grid;place-items:center;width:${size}px;height:${size}px">` +
      `<img src="${uri}" width="${inner}" height="${inner}" style="${pad ? 'border-radius:0' : ''}"></body>`,
  );
  await page.screenshot({ path: join(pub, name), omitBackground: !pad });
}
await ctx.close();
rmSync(dir, { recursive: true, force: true });
console.log('icons written to public/');
