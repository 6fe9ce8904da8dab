// @vitest-environment node
// The service worker must never answer or cache API traffic. We run the
// real sw/sw.js against fake worker globals and record what it does.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

function loadWorker() {
  const listeners: Record<string, (e: any) => void> = {};
  const cached: string[][] = [];
  const self = {
    location: { origin: 'http://127.0.0.1:4317' },
    addEventListener: (t: string, fn: (e: any) => void) => (listeners[t] = fn),
    skipWaiting: () => Promise.resolve(),
    clients: { claim: () => Promise.resolve() },
  };
  const caches = {
    open: async () => ({ addAll: async (l: string[]) => cached.push(l) }),
    keys: async () => ['hestia-shell-old', 'hestia-shell-v1', 'other'],
    delete: async (k: string) => cached.push(['deleted', k]),
    match: async () => undefined,
  };
  const src = readFileSync(new URL('../sw/sw.js', import.meta.url), 'utf8')
    .replace("'__HESTIA_BUILD__'", '"v1"')
    .replace('__HESTIA_PRECACHE__', '["/index.html","/assets/app-1.js"]');
  new Function('self', 'caches', 'fetch', 'Response', src)(self, caches, async () => new Response('net'), Response);
  const fetchEvent = (url: string, init: { method?: string; mode?: string } = {}) => {
    let responded = false;
    listeners.fetch({
      request: { url, method: init.method ?? 'GET', mode: init.mode ?? 'cors' },
      respondWith: () => (responded = true),
    });
    return responded;
  };
  return { listeners, cached, fetchEvent };
}

describe('service worker', () => {
  it('leaves every API, gateway and health request to the network', () => {
    const w = loadWorker();
    for (const u of ['/api/chats', '/api/events', '/api/pair/local', '/v1/chat/completions', '/health', '/api']) {
      expect(w.fetchEvent('http://127.0.0.1:4317' + u), u).toBe(false);
      expect(w.fetchEvent('http://127.0.0.1:4317' + u, { mode: 'navigate' }), u).toBe(false);
    }
    expect(w.fetchEvent('http://127.0.0.1:4317/api/chats', { method: 'POST' })).toBe(false);
  });

  it('serves the shell and hashed assets, and ignores other origins', () => {
    const w = loadWorker();
    expect(w.fetchEvent('http://127.0.0.1:4317/c/12', { mode: 'navigate' })).toBe(true);
    expect(w.fetchEvent('http://127.0.0.1:4317/assets/app-1.js')).toBe(true);
    expect(w.fetchEvent('https://cdn.example/x.js')).toBe(false);
  });

  it('precaches the shell and deletes old shell caches only', async () => {
    const w = loadWorker();
    let done: Promise<unknown> = Promise.resolve();
    w.listeners.install({ waitUntil: (p: Promise<unknown>) => (done = p) });
    await done;
    w.listeners.activate({ waitUntil: (p: Promise<unknown>) => (done = p) });
    await done;
    expect(w.cached).toEqual([['/index.html', '/assets/app-1.js'], ['deleted', 'hestia-shell-old']]);
  });
});
