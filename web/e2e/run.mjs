// npm run e2e: browser tests with Debian's chromium. First the visual pass
// against fixtures, then the real flow against a daemon built from this
// repository with the scripted model server.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { launch, summary, webRoot } from './lib.mjs';
import { runShots } from './shots.mjs';

if (!existsSync(join(webRoot, 'dist', 'index.html'))) {
  console.error('web/dist is not built: run `npm run build` first');
  process.exit(1);
}
const b = await launch();
if (!b) process.exit(0);
try {
  const only = process.argv[2];
  if (!only || only === 'shots') await runShots(b.browser);
  if (!only || only === 'shots' || only === 'mail') await (await import('./mail.mjs')).runMailShots(b.browser);
  if (!only || only === 'shots' || only === 'settings') await (await import('./settings.mjs')).runSettingsShots(b.browser);
  if (!only || only === 'shots' || only === 'background') await (await import('./background.mjs')).runBackgroundShots(b.browser);
  if (!only || only === 'remote') await (await import('./remote.mjs')).runRemote(b.browser);
  if (!only || only === 'daemon') {
    const { runDaemon } = await import('./daemon.mjs');
    await runDaemon(b.browser);
  }
  // The Agenda page's inline task edit and delete against a local task list.
  if (!only || only === 'tasks') await (await import('./tasks.mjs')).runTasks(b.browser);
  // Connecting an OAuth account against the fake provider's consent page.
  if (!only || only === 'oauth') await (await import('./oauth.mjs')).runOAuth(b.browser);
  // Voice mode needs a browser whose fake microphone plays its own WAV.
  if (!only || only === 'voice') await (await import('./voice.mjs')).runVoice();
} finally {
  await b.close();
}
process.exit(summary() ? 1 : 0);
