// Mail shapes (GET /api/mail/…, internal/app/mailhttp.go) and the helpers the
// Mail page and the mail tool cards share: search filters to query strings,
// and reading a mail tool's stored output back into rows.

export interface MailSummary {
  id: number;
  thread_id: number;
  subject: string;
  from: string;
  date: string;
  account?: string;
  mailbox?: string;
  snippet?: string;
  unread?: boolean;
  has_attachments?: boolean;
  size?: number;
  thread_count?: number;
  /** A free-text hit matching only some of the words. */
  partial_match?: boolean;
  /** An entry of MailSearchResult.related: found by meaning alone. */
  related?: boolean;
}

export interface MailSearchResult {
  messages: MailSummary[];
  page: { offset: number; limit: number; next?: number };
  mode?: string;
  degraded?: string;
  /** Exact number of matching messages, when the search asked for it. */
  total?: number;
  /** Messages close in meaning that hold none of the words (first page only):
   * never matches, never counted in total, shown apart. */
  related?: MailSummary[];
}

export interface MailAttachment {
  index: number;
  filename?: string;
  content_type: string;
  size: number;
  stored: boolean;
}

export interface MailMessage {
  id: number;
  thread_id: number;
  account: string;
  mailbox: string;
  subject: string;
  from: string;
  to?: string;
  cc?: string;
  date: string;
  unread: boolean;
  body_state: string;
  body: string;
  body_length: number;
  next_offset?: number;
  attachments: MailAttachment[];
}

export interface MailThread {
  thread_id: number;
  subject: string;
  count: number;
  messages: MailSummary[];
}

export interface MailboxCount {
  account: string;
  name: string;
  role?: string;
  messages: number;
  unread: number;
}

/** The Mail page's search form; every field mirrors a `hestia mail search` flag. */
export interface MailFilters {
  q: string;
  account: string;
  mailbox: string;
  from: string;
  to: string;
  subject: string;
  body: string;
  attachment_name: string;
  after: string;
  before: string;
  unread: boolean;
  attachments: boolean;
}

export const emptyFilters: MailFilters = {
  q: '',
  account: '',
  mailbox: '',
  from: '',
  to: '',
  subject: '',
  body: '',
  attachment_name: '',
  after: '',
  before: '',
  unread: false,
  attachments: false,
};

/** Query string for GET /api/mail/search; empty fields are left out. */
export function searchParams(f: MailFilters, offset = 0, limit = 30): string {
  const p = new URLSearchParams();
  for (const k of ['q', 'account', 'mailbox', 'from', 'to', 'subject', 'body', 'attachment_name', 'after', 'before'] as const) {
    const v = f[k].trim();
    if (v) p.set(k, v);
  }
  if (f.unread) p.set('unread', 'true');
  if (f.attachments) p.set('attachments', 'true');
  // An exact total is worth its cost only when narrowing, not browsing.
  if (f.q.trim() || activeFilters(f)) p.set('count', 'true');
  if (offset) p.set('offset', String(offset));
  p.set('limit', String(limit));
  return p.toString();
}

/** How many of the advanced filters are set (for the "Filters (2)" label). */
export function activeFilters(f: MailFilters): number {
  return (['from', 'to', 'subject', 'body', 'attachment_name', 'after', 'before'] as const).filter((k) => f[k].trim()).length + (f.unread ? 1 : 0) + (f.attachments ? 1 : 0);
}

/** "Ana Lima <ana@example.org>" → "Ana Lima"; a bare address stays. */
export function senderName(from: string): string {
  const m = /^\s*"?([^"<]*?)"?\s*<[^>]+>/.exec(from);
  return (m && m[1].trim()) || from.trim() || '(no sender)';
}

/** A short date: time today, "Mar 3" this year, "3 Mar 2024" before. */
export function mailDate(iso: string, now = new Date()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (d.getFullYear() === now.getFullYear()) return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
  return d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
}

export { bytes } from './format';

/**
 * Reads a mail tool's output as JSON. The stored result of a tool with
 * untrusted output is wrapped in `<untrusted_content …>` markers (and may
 * start with a note about edited arguments); live output is a bounded
 * snippet that may be cut short, in which case there is nothing to parse.
 */
export function parseToolJSON(output: string | undefined): unknown {
  if (!output) return undefined;
  let s = output;
  const open = s.indexOf('<untrusted_content');
  if (open >= 0) {
    const start = s.indexOf('>', open);
    const close = s.lastIndexOf('</untrusted_content');
    if (start < 0) return undefined;
    s = s.slice(start + 1, close > start ? close : undefined);
  }
  s = s.trim();
  if (!s.startsWith('{') && !s.startsWith('[')) return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

export type MailToolView =
  | { kind: 'list'; rows: MailSummary[]; more: boolean; total?: number }
  | { kind: 'message'; message: MailMessage };

/** What a mail tool card shows compactly, or undefined for other tools. */
export function mailToolView(tool: string, output: string | undefined): MailToolView | undefined {
  if (tool !== 'mail_search' && tool !== 'mail_thread' && tool !== 'mail_read') return undefined;
  const v = parseToolJSON(output) as Record<string, any> | undefined;
  if (!v || typeof v !== 'object') return undefined;
  if (tool === 'mail_read') {
    if (typeof v.id !== 'number' || typeof v.subject !== 'string') return undefined;
    return { kind: 'message', message: v as MailMessage };
  }
  if (!Array.isArray(v.messages)) return undefined;
  const rows = (v.messages as MailSummary[]).filter((m) => m && typeof m.id === 'number');
  return { kind: 'list', rows, more: !!v.page?.next, total: typeof v.count === 'number' ? v.count : undefined };
}

/** The first message of "ask about this thread": names the thread so the assistant can open it. */
export function askAboutDraft(t: { id: number; subject: string; from?: string; count?: number }): string {
  const who = t.from ? ` from ${senderName(t.from)}` : '';
  const n = t.count && t.count > 1 ? `, ${t.count} messages` : '';
  return `About the mail thread “${t.subject || '(no subject)'}”${who} (mail message id ${t.id}${n}): `;
}
