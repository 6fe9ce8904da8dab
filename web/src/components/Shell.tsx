// The frame around every page: sidebar with chats and navigation (a drawer
// on phones), connection status, and toasts.
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useApp } from '../context';
import { relTime } from '../lib/format';
import { hrefFor, type Route } from '../router';
import type { State } from '../state/reduce';
import type { UIState } from '../state/app';
import { useSelect } from '../state/store';
import { Bell, CalendarIcon, Check, Chart, Flame, Gear, List, Mail, Menu, Person, Plus, Pulse, Refresh, Search, X } from './icons';

export function Shell({ route, children }: { route: Route; children: ComponentChildren }) {
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [route]);
  useEffect(() => {
    // Pages with their own header (the chat) open the drawer with this event.
    const open = () => setOpen(true);
    addEventListener('hestia:drawer', open);
    return () => removeEventListener('hestia:drawer', open);
  }, []);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.metaKey || e.ctrlKey) && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setOpen(true);
        document.getElementById('chat-search')?.focus();
      }
      if (e.key === 'Escape') setOpen(false);
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class={'shell' + (open ? ' drawer-open' : '')}>
      <Sidebar route={route} onClose={() => setOpen(false)} />
      <div class="scrim" onClick={() => setOpen(false)} />
      <main class="main">
        {route.name !== 'chat' && <div class="topbar">
          <button class="icon-btn" aria-label="Open menu" onClick={() => setOpen(true)}>
            <Menu />
          </button>
          <a class="brand small" href="/">
            <Flame size={18} /> Hestia
          </a>
          <a class="icon-btn" href="/" aria-label="New chat">
            <Plus />
          </a>
        </div>}
        <ConnBanner />
        {children}
      </main>
      <Toasts />
    </div>
  );
}

function Sidebar({ route, onClose }: { route: Route; onClose: () => void }) {
  const app = useApp();
  const chats = useSelect(app.data, (s: State) => s.chats);
  const loaded = useSelect(app.data, (s: State) => s.chatsLoaded);
  const approvals = useSelect(app.data, (s: State) => s.approvals);
  const [q, setQ] = useState('');
  const waiting = useMemo(() => {
    const m = new Map<string, number>();
    for (const a of Object.values(approvals)) m.set(a.chat_id, (m.get(a.chat_id) ?? 0) + 1);
    return m;
  }, [approvals]);
  const shown = useMemo(() => {
    const needle = q.trim().toLowerCase();
    return needle ? chats.filter((c) => (c.title || 'New chat').toLowerCase().includes(needle)) : chats;
  }, [chats, q]);
  const current = route.name === 'chat' ? route.id : undefined;

  return (
    <aside class="sidebar" aria-label="Chats and navigation">
      <div class="side-top">
        <a class="brand" href="/">
          <span class="brand-mark">
            <Flame size={18} />
          </span>
          Hestia
        </a>
        <button class="icon-btn only-phone" aria-label="Close menu" onClick={onClose}>
          <X />
        </button>
      </div>
      <a class={'btn new-chat' + (route.name === 'home' ? ' active' : '')} href="/">
        <Plus size={16} /> New chat
      </a>
      <label class="search">
        <Search size={15} />
        <input
          id="chat-search"
          type="search"
          placeholder="Search chats"
          aria-label="Search chat titles"
          value={q}
          onInput={(e) => setQ((e.target as HTMLInputElement).value)}
        />
        <kbd class="only-desktop">⌘K</kbd>
      </label>
      <nav class="chat-list" aria-label="Chats">
        {loaded && shown.length === 0 && <div class="muted small pad">{q ? 'No chat matches.' : 'No chats yet.'}</div>}
        {shown.map((c) => (
          <a
            class={'chat-item' + (c.id === current ? ' active' : '')}
            href={hrefFor({ name: 'chat', id: c.id })}
            aria-current={c.id === current ? 'page' : undefined}
            key={c.id}
          >
            <span class="chat-item-title">{c.title || 'New chat'}</span>
            {waiting.get(c.id) ? (
              <span class="badge" title="Waiting for your approval">
                {waiting.get(c.id)}
              </span>
            ) : (
              <span class="chat-item-time">{relTime(c.updated_at)}</span>
            )}
          </a>
        ))}
      </nav>
      <nav class="side-nav" aria-label="Pages">
        <NavLink route={route} to="mail" icon={<Mail size={17} />} label="Mail" />
        <NavLink route={route} to="agenda" icon={<CalendarIcon size={17} />} label="Agenda" />
        <NavLink route={route} to="contacts" icon={<Person size={17} />} label="Contacts" />
        <NavLink route={route} to="actions" icon={<Check size={17} />} label="Actions" />
        <NavLink route={route} to="jobs" icon={<Refresh size={17} />} label="Jobs" />
        <NavLink route={route} to="memory" icon={<List size={17} />} label="Memory" />
        <NavLink route={route} to="notifications" icon={<Bell size={17} />} label="Notifications" />
        <NavLink route={route} to="usage" icon={<Chart size={17} />} label="Usage" />
        <NavLink route={route} to="audit" icon={<List size={17} />} label="Audit" />
        <NavLink route={route} to="system" icon={<Pulse size={17} />} label="System" />
        <NavLink route={route} to="settings" icon={<Gear size={17} />} label="Settings" />
      </nav>
      <ConnStatus />
    </aside>
  );
}

function NavLink({ route, to, icon, label }: { route: Route; to: string; icon: any; label: string }) {
  return (
    <a class={'nav-link' + (route.name === to ? ' active' : '')} href={`/${to}`} aria-current={route.name === to ? 'page' : undefined}>
      {icon}
      {label}
    </a>
  );
}

function ConnStatus() {
  const app = useApp();
  const conn = useSelect(app.ui, (u: UIState) => u.conn);
  const version = useSelect(app.ui, (u: UIState) => u.version);
  const label = conn === 'live' ? 'Connected' : conn === 'reconnecting' ? 'Reconnecting…' : conn === 'connecting' ? 'Connecting…' : 'Offline';
  return (
    <div class={`conn conn-${conn}`} role="status">
      <span class="dot" />
      {label}
      {version && <span class="muted small version">{/^\d/.test(version) ? 'v' + version : version}</span>}
    </div>
  );
}

function ConnBanner() {
  const app = useApp();
  const conn = useSelect(app.ui, (u: UIState) => u.conn);
  if (conn !== 'reconnecting') return null;
  return (
    <div class="banner" role="status">
      <Refresh size={15} /> Lost the connection to Hestia. Reconnecting — nothing you have sent is lost.
    </div>
  );
}

function Toasts() {
  const app = useApp();
  const toasts = useSelect(app.ui, (u: UIState) => u.toasts);
  return (
    <div class="toasts" aria-live="assertive">
      {toasts.map((t) => (
        <div class={`toast toast-${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'} key={t.id}>
          <span class="toast-text">{t.text}</span>
          {t.retry && (
            <button
              class="btn small"
              onClick={() => {
                app.dismiss(t.id);
                t.retry?.();
              }}
            >
              Retry
            </button>
          )}
          <button class="icon-btn small" aria-label="Dismiss" onClick={() => app.dismiss(t.id)}>
            <X size={14} />
          </button>
        </div>
      ))}
    </div>
  );
}
