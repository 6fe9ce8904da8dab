// Client-side routes. Paths, not hashes, so links are shareable; the daemon
// answers every non-asset path with index.html.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { name: 'home' }
  | { name: 'chat'; id: string }
  | { name: 'usage' }
  | { name: 'audit' }
  | { name: 'system' }
  | { name: 'mail'; id?: number }
  | { name: 'settings' }
  | { name: 'jobs' }
  | { name: 'actions' }
  | { name: 'memory' }
  | { name: 'agenda' }
  | { name: 'contacts' }
  | { name: 'notifications' }
  | { name: 'setup' }
  | { name: 'pair'; code?: string };

export function parseRoute(pathname: string, hash = ''): Route {
  const parts = pathname.replace(/\/+$/, '').split('/').filter(Boolean);
  switch (parts[0]) {
    case 'c':
      if (parts[1]) return { name: 'chat', id: decodeURIComponent(parts[1]) };
      return { name: 'home' };
    case 'usage':
      return { name: 'usage' };
    case 'audit':
      return { name: 'audit' };
    case 'system':
      return { name: 'system' };
    case 'settings':
      return { name: 'settings' };
    case 'jobs':
      return { name: 'jobs' };
    case 'actions':
      return { name: 'actions' };
    case 'memory':
      return { name: 'memory' };
    case 'agenda':
      return { name: 'agenda' };
    case 'contacts':
      return { name: 'contacts' };
    case 'notifications':
      return { name: 'notifications' };
    case 'setup':
      return { name: 'setup' };
    case 'mail': {
      const id = Number(parts[1]);
      return parts[1] && Number.isSafeInteger(id) && id > 0 ? { name: 'mail', id } : { name: 'mail' };
    }
    case 'pair': {
      const m = /(?:^|[#&])code=([^&]+)/.exec(hash);
      return m ? { name: 'pair', code: decodeURIComponent(m[1]) } : { name: 'pair' };
    }
    default:
      return { name: 'home' };
  }
}

export function hrefFor(r: Route): string {
  switch (r.name) {
    case 'chat':
      return `/c/${encodeURIComponent(r.id)}`;
    case 'home':
      return '/';
    case 'mail':
      return r.id ? `/mail/${r.id}` : '/mail';
    default:
      return `/${r.name}`;
  }
}

export function navigate(to: string, replace = false) {
  if (to === location.pathname + location.hash) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function useRoute(): Route {
  const [r, setR] = useState(() => parseRoute(location.pathname, location.hash));
  useEffect(() => {
    const on = () => setR(parseRoute(location.pathname, location.hash));
    addEventListener('popstate', on);
    return () => removeEventListener('popstate', on);
  }, []);
  return r;
}

/** Makes <a href="/..."> clicks navigate without a page load. */
export function onLinkClick(e: MouseEvent) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a');
  if (!a || a.target || a.hasAttribute('download')) return;
  const href = a.getAttribute('href');
  if (!href || !href.startsWith('/') || href.startsWith('//')) return;
  e.preventDefault();
  navigate(href);
}
