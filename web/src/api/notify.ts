// The notification inbox, its settings, Web Push subscriptions and the
// watches API (internal/notify and internal/watch routes). Kept apart from
// client.ts and background.ts so other pages' edits do not collide.
import type { Client } from './client';

export interface Notice {
  id: number;
  kind: 'approval' | 'action' | 'watch' | 'job' | 'budget' | string;
  title: string;
  body?: string;
  url?: string;
  chat_id?: string;
  created_at: string;
  read_at?: string;
  push_state: 'pending' | 'delivered' | 'failed' | 'suppressed' | 'no_device' | string;
  push_reason?: string;
  attempts: number;
  delivered_at?: string;
  last_error?: string;
}

export interface Inbox {
  notifications: Notice[];
  unread: number;
}

export interface NotifySettings {
  quiet_start: string;
  quiet_end: string;
  rate_limit: number;
}

export interface PushDevice {
  id: number;
  endpoint: string;
  device?: string;
  created_at: string;
  last_ok?: string;
  failures: number;
}

export interface Constraint {
  exact?: unknown;
  set?: unknown[];
  min?: number;
  max?: number;
  template?: string;
}

export interface Grant {
  tool: string;
  args: Record<string, Constraint>;
  max?: number;
}

export interface WatchRule {
  id: string;
  event?: string;
  trigger?: { field?: string; before_minutes?: number; after_minutes?: number; at?: string };
  where?: Record<string, unknown>;
  once?: boolean;
  grants?: Grant[];
}

export type WatchState = 'active' | 'paused' | 'stopped' | 'expired' | 'completed';

export interface Watch {
  id: string;
  source: string;
  ref: string;
  instruction: string;
  chat_id?: string;
  rules: WatchRule[];
  state: WatchState;
  expires_at: string;
  created_at: string;
  ended_at?: string;
  last_poll?: string;
  last_error?: string;
  last_event_at?: string;
  events: number;
}

export interface WatchList {
  watches: Watch[];
  sources: string[];
  /** Event types per source (daemons before pause/resume lack it). */
  events?: Record<string, string[]>;
}

export interface NewWatch {
  source: string;
  ref: string;
  instruction: string;
  expires_at?: string;
  rules: Partial<WatchRule>[];
}

const enc = encodeURIComponent;

export const notifyApi = (c: Client) => ({
  list: (unread: boolean) => c.get<Inbox>(`/api/notifications?limit=100${unread ? '&unread=1' : ''}`),
  read: (id: number) => c.request<unknown>('POST', `/api/notifications/${id}/read`),
  readAll: () => c.request<unknown>('POST', '/api/notifications/read-all'),
  settings: () => c.get<NotifySettings>('/api/notifications/settings'),
  setSettings: (s: NotifySettings) => c.request<NotifySettings>('PUT', '/api/notifications/settings', s),
  devices: () => c.get<{ subscriptions: PushDevice[] }>('/api/push/subscriptions').then((r) => r.subscriptions ?? []),
  unsubscribe: (endpoint: string) => c.request<unknown>('DELETE', '/api/push/subscriptions', { endpoint }),
});

/** One message a mail watch's search matches now (POST /api/watches/preview). */
export interface MailHit {
  id: number;
  thread_id: number;
  subject: string;
  from: string;
  date: string;
  account?: string;
  mailbox?: string;
  has_attachments?: boolean;
  snippet?: string;
}

/** What a watch's reference matches at this moment; only mail has one. */
export interface WatchPreview {
  source: string;
  ref: string;
  matches: MailHit[];
  /** Every current match; matches holds the newest few. */
  total: number;
  note?: string;
}

export const watchApi = (c: Client) => ({
  list: () => c.get<WatchList>('/api/watches'),
  create: (w: NewWatch) => c.request<Watch>('POST', '/api/watches', w),
  pause: (id: string, paused: boolean) => c.request<Watch>('POST', `/api/watches/${enc(id)}/${paused ? 'pause' : 'resume'}`),
  stop: (id: string) => c.request<Watch>('POST', `/api/watches/${enc(id)}/stop`),
  remove: (id: string) => c.request<unknown>('DELETE', `/api/watches/${enc(id)}`),
  preview: (source: string, ref: string, limit = 5) => c.request<WatchPreview>('POST', '/api/watches/preview', { source, ref, limit }),
});

/** One constraint in words: "exact "ann@…"", "one of […]", "1..5", "template …". */
export function constraintText(c: Constraint): string {
  if (c.exact !== undefined) return JSON.stringify(c.exact);
  if (c.set) return 'one of ' + JSON.stringify(c.set);
  if (c.template !== undefined) return 'from template ' + JSON.stringify(c.template);
  const lo = c.min ?? '−∞';
  const hi = c.max ?? '∞';
  return `${lo}..${hi}`;
}

/** What a rule listens for, in words. */
export function ruleText(r: WatchRule): string {
  if (r.event) {
    const where = r.where && Object.keys(r.where).length ? ` where ${Object.entries(r.where).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join(', ')}` : '';
    return r.event + where + (r.once ? ' (once)' : '');
  }
  const t = r.trigger;
  if (!t) return '—';
  if (t.at) return `at ${new Date(t.at).toLocaleString()}`;
  if (t.before_minutes) return `${t.before_minutes} min before ${t.field}`;
  if (t.after_minutes) return `${t.after_minutes} min after ${t.field}`;
  return `at ${t.field}`;
}

/** A notification's link, kept on this origin (never an outside URL). */
export function noticeHref(n: Notice): string | undefined {
  const u = n.url;
  if (u && u.startsWith('/') && !u.startsWith('//')) return u;
  if (n.chat_id) return `/c/${enc(n.chat_id)}`;
  return undefined;
}
