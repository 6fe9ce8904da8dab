// Production build: type-check, Vite build into dist/ (keeping the committed
// dist/.keep), generate the service worker with the shell file list, and
// write .br/.gz siblings that the Go handler serves when accepted.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');

for (const name of readdirSync(dist)) {
  if (name !== '.keep') rmSync(join(dist, name), { recursive: true, force: true });
}

execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', root], { stdio: 'inherit' });

await build({ root, logLevel: 'warn' });

function walk(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

const files = walk(dist).filter((p) => !p.endsWith('.keep'));
const shell = ['/index.html', ...files.map((p) => '/' + relative(dist, p)).filter((p) => p.startsWith('/assets/'))];
const hash = createHash('sha256');
for (const p of files.sort()) hash.update(relative(dist, p)).update(readFileSync(p));
const version = hash.digest('hex').slice(0, 12);
const sw = readFileSync(join(root, 'sw/sw.js'), 'utf8')
  .replace("'__HESTIA_BUILD__'", JSON.stringify(version))
  .replace('__HESTIA_PRECACHE__', JSON.stringify(shell));
writeFileSync(join(dist, 'sw.js'), sw);

const compressible = /\.(js|css|html|svg|json|webmanifest|txt)$/;
let raw = 0;
let br = 0;
for (const p of walk(dist)) {
  if (!compressible.test(p)) continue;
  const body = readFileSync(p);
  if (body.length < 1024) continue;
  const b = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  const g = gzipSync(body, { level: 9 });
  if (b.length < body.length) writeFileSync(p + '.br', b);
  if (g.length < body.length) writeFileSync(p + '.gz', g);
  raw += body.length;
  br += b.length;
}
console.log(`built dist/ (version ${version}): ${(raw / 1024).toFixed(0)} KiB text, ${(br / 1024).toFixed(0)} KiB brotli`);
