// @vitest-environment node
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { scheduleText, urlB64ToBytes } from '../src/api/background';
import { hrefFor, parseRoute } from '../src/router';

function loadWorker() {
  const listeners: Record<string, (e: any) => void> = {};
  const shown: { title: string; opts: any }[] = [];
  const opened: string[] = [];
  const self = {
    location: { origin: 'http://127.0.0.1:4317' },
    addEventListener: (t: string, fn: (e: any) => void) => (listeners[t] = fn),
    skipWaiting: () => Promise.resolve(),
    registration: { showNotification: async (title: string, opts: any) => shown.push({ title, opts }) },
    clients: { claim: () => Promise.resolve(), matchAll: async () => [], openWindow: async (u: string) => opened.push(u) },
  };
  const src = readFileSync(new URL('../sw/sw.js', import.meta.url), 'utf8')
    .replace("'__HESTIA_BUILD__'", '"v1"')
    .replace('__HESTIA_PRECACHE__', '["/index.html"]');
  new Function('self', 'caches', 'fetch', 'Response', src)(self, {}, async () => new Response(''), Response);
  const fire = async (type: string, ev: any) => {
    let p: Promise<unknown> = Promise.resolve();
    listeners[type]({ ...ev, waitUntil: (x: Promise<unknown>) => (p = x) });
    await p;
  };
  return { fire, shown, opened };
}

describe('service worker push', () => {
  it('shows the pushed notification and opens its page on click', async () => {
    const w = loadWorker();
    const payload = { id: 7, kind: 'approval', title: 'Approval needed: mail_send', body: 'to ann@example.org', url: '/c/c_1' };
    await w.fire('push', { data: { json: () => payload, text: () => JSON.stringify(payload) } });
    expect(w.shown).toHaveLength(1);
    expect(w.shown[0].title).toBe('Approval needed: mail_send');
    expect(w.shown[0].opts.body).toBe('to ann@example.org');
    expect(w.shown[0].opts.tag).toBe('hestia-7');
    let closed = false;
    await w.fire('notificationclick', { notification: { data: w.shown[0].opts.data, close: () => (closed = true) } });
    expect(closed).toBe(true);
    expect(w.opened).toEqual(['/c/c_1']);
  });

  it('never follows an off-site link from a push and survives a non-JSON body', async () => {
    const w = loadWorker();
    await w.fire('push', { data: { json: () => ({ title: 'x', url: '//evil.example/' }), text: () => '' } });
    await w.fire('push', { data: { json: () => { throw new Error('not json'); }, text: () => 'plain words' } });
    expect(w.shown.map((s) => s.opts.data.url)).toEqual(['/', '/']);
    expect(w.shown[1].opts.body).toBe('plain words');
  });
});

describe('background helpers', () => {
  it('routes the Jobs and Action Center pages', () => {
    expect(parseRoute('/jobs')).toEqual({ name: 'jobs' });
    expect(parseRoute('/actions/')).toEqual({ name: 'actions' });
    expect(hrefFor({ name: 'actions' })).toBe('/actions');
  });
  it('decodes VAPID keys and describes schedules', () => {
    expect(Array.from(urlB64ToBytes('AQID_w'))).toEqual([1, 2, 3, 255]);
    expect(scheduleText({ cron: '0 8 * * 1-5' })).toBe('cron 0 8 * * 1-5');
    expect(scheduleText({ every: '15m0s' })).toBe('every 15m0s');
    expect(scheduleText({})).toBe('—');
  });
});
