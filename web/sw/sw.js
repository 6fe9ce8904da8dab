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
