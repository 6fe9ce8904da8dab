// Hestia service worker. It keeps the app shell (index.html and the hashed
// build assets) so the UI opens offline and installs as an app. It NEVER
// caches or answers API traffic: /api, /v1 and /health always go to the
// network, so no token-bearing response is ever stored on disk by us.
const VERSION = '__HESTIA_BUILD__';
const SHELL = __HESTIA_PRECACHE__;
const CACHE = 'hestia-shell-' + VERSION;

function isApi(url) {
  return url.pathname.startsWith('/api/') || url.pathname === '/api' || url.pathname.startsWith('/v1/') || url.pathname === '/v1' || url.pathname === '/health';
}

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE).then((c) => c.addAll(SHELL)).then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('hestia-shell-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || url.origin !== self.location.origin || isApi(url)) return; // network only
  if (req.mode === 'navigate') {
    // Fresh index.html when the daemon is up (a new build must win); the
    // cached shell only when it is not.
    event.respondWith(
      fetch(req).catch(() => caches.match('/index.html').then((r) => r || Response.error())),
    );
    return;
  }
  if (url.pathname.startsWith('/assets/')) {
    event.respondWith(caches.match(req).then((hit) => hit || fetch(req)));
  }
});

// Web Push: the daemon sends {id, kind, title, body, url}, encrypted for
// this browser's subscription (RFC 8291). Show it; a click opens the chat
// or page it is about, reusing an open Hestia tab.
self.addEventListener('push', (event) => {
  let n = {};
  try {
    n = event.data ? event.data.json() : {};
  } catch {
    n = { title: 'Hestia', body: event.data ? event.data.text() : '' };
  }
  const url = typeof n.url === 'string' && n.url.startsWith('/') && !n.url.startsWith('//') ? n.url : '/';
  event.waitUntil(
    self.registration.showNotification(n.title || 'Hestia', {
      body: n.body || '',
      tag: n.id ? 'hestia-' + n.id : undefined,
      data: { url },
      icon: '/icon-192.png',
    }),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || '/';
  event.waitUntil(
    self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((wins) => {
      for (const w of wins) {
        if (new URL(w.url).origin === self.location.origin && 'navigate' in w) {
          return w.focus().then(() => w.navigate(url));
        }
      }
      return self.clients.openWindow(url);
    }),
  );
});
