// Voice mode in real Chromium: its fake microphone plays a WAV that
// espeak-ng spoke at test time ("Please save my note." … "Approve."), the
// daemon (built from this repository) cuts the utterances with its VAD,
// sends them to a fake speech-to-text server here, runs the turn against
// the scripted model (a gated write_file), reads the approval out through
// a fake text-to-speech server, takes the spoken "Approve." as the answer,
// and speaks the reply. Checked: what the user sees, the file on disk, and
// what the speech servers were asked.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import { CHROMIUM, assert, newPage, repoRoot, requireServices, shot, test, viewports } from './lib.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function have(cmd, args = ['--version']) {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function skip(why) {
  if (requireServices()) throw new Error(`voice e2e: ${why}`);
  console.log(`SKIP voice e2e: ${why}`);
}

async function waitFor(fn, what, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}${last ? ': ' + last.message : ''}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = netServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** The 16-bit PCM samples and rate of a WAV file. */
function readWAV(buf) {
  let off = 12;
  let rate = 0;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    if (id === 'fmt ') rate = buf.readUInt32LE(off + 12);
    if (id === 'data') return { rate, pcm: buf.subarray(off + 8, Math.min(buf.length, off + 8 + size)) };
    off += 8 + size + (size & 1);
  }
  throw new Error('no data chunk in the WAV');
}

function writeWAV(rate, pcm) {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + pcm.length, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([h, pcm]);
}

/** The microphone's script: silence, an utterance, silence, … as one WAV. */
function speakScript(dir, parts) {
  let rate = 0;
  const chunks = [];
  for (const p of parts) {
    if (typeof p === 'number') {
      chunks.push({ silence: p });
      continue;
    }
    const f = join(dir, `utt-${chunks.length}.wav`);
    execFileSync('espeak-ng', ['-v', 'en', '-s', '160', '-w', f, p]);
    const w = readWAV(readFileSync(f));
    rate = w.rate;
    chunks.push({ pcm: w.pcm });
  }
  const bufs = chunks.map((c) => c.pcm ?? Buffer.alloc(2 * Math.round(rate * c.silence)));
  const out = join(dir, 'microphone.wav');
  writeFileSync(out, writeWAV(rate, Buffer.concat(bufs)));
  return out;
}

/** A short tone as WAV: what the fake text-to-speech answers. */
function toneWAV() {
  const rate = 16000;
  const pcm = Buffer.alloc(2 * rate * 0.3);
  for (let i = 0; i < pcm.length / 2; i++) pcm.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 2 * i);
  return writeWAV(rate, pcm);
}

/** The fake speech server: transcriptions in order, speech as a tone. */
function startSpeech(texts) {
  const heard = [];
  const spoken = [];
  const tone = toneWAV();
  const srv = createServer((req, res) => {
    const body = [];
    req.on('data', (b) => body.push(b));
    req.on('end', () => {
      const buf = Buffer.concat(body);
      if (req.url === '/v1/audio/transcriptions') {
        heard.push(buf.length);
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ text: texts.shift() ?? '' }));
      } else if (req.url === '/v1/audio/speech') {
        spoken.push(JSON.parse(buf.toString()).input);
        res.setHeader('Content-Type', 'audio/wav');
        res.end(tone);
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({ srv, heard, spoken, url: `http://127.0.0.1:${srv.address().port}` })));
}

export async function runVoice() {
  if (!existsSync(CHROMIUM)) return skip(`chromium not found at ${CHROMIUM}`);
  if (!have('go', ['version'])) return skip('go not found');
  if (!have('espeak-ng')) return skip('espeak-ng is not installed (apt-get install espeak-ng); it speaks the test utterances');
  const dir = mkdtempSync(join(tmpdir(), 'hestia-voice-e2e-'));
  const home = join(dir, 'home');
  const hestiaHome = join(dir, 'hestia-home');
  mkdirSync(home, { recursive: true });
  mkdirSync(hestiaHome, { recursive: true });
  let fake, daemon, speech, browser;
  let log = '';
  try {
    const bin = join(dir, 'hestia');
    const fakeBin = join(dir, 'fakellm');
    execFileSync('go', ['build', '-o', bin, './cmd/hestia'], { cwd: repoRoot, stdio: 'inherit' });
    execFileSync('go', ['build', '-o', fakeBin, './web/e2e/fakellm'], { cwd: repoRoot, stdio: 'inherit' });
    fake = spawn(fakeBin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    const llm = await new Promise((resolve, reject) => {
      createInterface({ input: fake.stdout }).once('line', (l) => resolve(JSON.parse(l)));
      fake.once('exit', (c) => reject(new Error(`fakellm exited with ${c}`)));
    });
    const push = async (...turns) => {
      const r = await fetch(llm.control + '/push', { method: 'POST', body: JSON.stringify(turns) });
      assert(r.ok, `pushing turns: ${await r.text()}`);
    };
    speech = await startSpeech(['Please save my note.', 'Approve.']);
    writeFileSync(
      join(hestiaHome, 'config.toml'),
      `[llm.providers.speech]\nbase_url = "${speech.url}/v1"\n\n[llm.tiers]\nstt = ["speech/whisper-1"]\ntts = ["speech/tts-1"]\n`,
    );
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    daemon = spawn(bin, ['serve', '--addr', `127.0.0.1:${port}`], {
      env: { PATH: process.env.PATH, HOME: home, HESTIA_HOME: hestiaHome, HESTIA_LLM_BASE_URL: llm.url, HESTIA_LLM_API_KEY: 'k', HESTIA_LLM_MODEL: 'llmtest-model' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (b) => (log = (log + b.toString()).slice(-20_000));
    daemon.stdout.on('data', keep);
    daemon.stderr.on('data', keep);
    await waitFor(async () => (await fetch(url + '/health')).ok, 'the daemon to answer /health', 30_000);
    const token = readFileSync(join(hestiaHome, 'auth-token'), 'utf8').trim();
    const auth = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };

    // The microphone: a pause, the request, time for the approval to be
    // read out, the spoken answer, then quiet.
    const wav = speakScript(dir, [2.0, 'Please save my note.', 6.0, 'Approve.', 4.0]);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--autoplay-policy=no-user-gesture-required',
        '--use-fake-ui-for-media-stream',
        '--use-fake-device-for-media-stream',
        `--use-file-for-fake-audio-capture=${wav}%noloop`,
      ],
    });

    await test('voice: a spoken request runs a turn, its approval is read out and answered by voice, the reply is spoken', async () => {
      await push(
        { tool_calls: [{ id: 'call_v1', name: 'write_file', arguments: JSON.stringify({ path: '~/voice-note.txt', content: 'from voice mode' }) }] },
        { text: ['Saved your note. ', 'Anything else?'] },
      );
      const chat = await (await fetch(url + '/api/chats', { method: 'POST', headers: auth, body: JSON.stringify({ title: 'Voice' }) })).json();
      const { ctx, page, errors } = await newPage(browser, { viewport: viewports.phone, mobile: true, token });
      try {
        await page.goto(`${url}/c/${chat.id ?? chat.chat?.id}`);
        await page.getByLabel('Message').waitFor();
        await page.getByRole('button', { name: 'Start voice mode' }).click();
        await page.locator('.voice-panel', { hasText: 'Listening' }).waitFor({ timeout: 15_000 });
        await shot(page, 'e2e-voice-listening');
        await page.locator('.msg.user', { hasText: 'Please save my note.' }).waitFor({ timeout: 20_000 });
        await page.locator('.voice-prompt', { hasText: 'Approve or deny?' }).waitFor({ timeout: 15_000 });
        await page.getByText('Approval needed').first().waitFor();
        await shot(page, 'e2e-voice-approval');
        await waitFor(() => existsSync(join(home, 'voice-note.txt')), 'the spoken approval to let the write run', 25_000);
        assert(readFileSync(join(home, 'voice-note.txt'), 'utf8') === 'from voice mode', 'the file has other content');
        await page.getByText('Saved your note.').first().waitFor({ timeout: 15_000 });
        await waitFor(() => speech.spoken.some((s) => s.startsWith('Saved your note.')), 'the reply to be spoken');
        assert(speech.heard.length >= 2 && speech.heard.every((n) => n > 16_000), `the stt server heard ${JSON.stringify(speech.heard)}`);
        assert(speech.spoken.some((s) => s.startsWith('I need your approval to write file') && s.endsWith('Approve or deny?')), `spoken: ${JSON.stringify(speech.spoken)}`);
        // "Approve." was the answer, not a message of its own.
        const users = await page.locator('.msg.user').allTextContents();
        assert(!users.some((u) => u.includes('Approve.')), `the answer became a message: ${JSON.stringify(users)}`);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
        assert(!overflow, 'horizontal scrolling on a phone with the voice panel open');
        await shot(page, 'e2e-voice-reply');
        await page.getByRole('button', { name: 'End voice mode' }).click();
        await page.locator('.voice-panel').waitFor({ state: 'detached' });
        const real = errors.filter((e) => !/net::ERR_|Failed to fetch/i.test(e));
        assert(real.length === 0, real.join('\n'));
      } finally {
        await ctx.close();
      }
    });
    if (process.env.HESTIA_E2E_LOG) console.log(`daemon log tail:\n${log.slice(-4000)}`);
  } catch (e) {
    console.log(`voice e2e failed: ${e?.stack ?? e}\n--- daemon log ---\n${log.slice(-4000)}`);
    throw e;
  } finally {
    await browser?.close();
    if (daemon && daemon.exitCode === null) {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
    }
    fake?.kill();
    speech?.srv.close();
    if (process.env.HESTIA_E2E_KEEP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
