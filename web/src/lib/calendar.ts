// Calendar and contacts: the daemon's answer shapes and the pure helpers the
// Agenda page uses to lay instances out by day in the viewer's zone.

export interface Attendee {
  name?: string;
  email: string;
  status?: string;
}

export interface Instance {
  id: number;
  calendar: string;
  uid: string;
  summary: string;
  location?: string;
  description?: string;
  /** RFC 3339 with the offset of the event's own zone. */
  start: string;
  end: string;
  all_day?: boolean;
  /** The event's IANA zone (absent for floating and all-day events). */
  zone?: string;
  recurring?: boolean;
  recurrence_id?: string;
  status?: string;
  transp?: string;
  organizer?: string;
  attendees?: Attendee[];
  rrule?: string;
  warnings?: string[];
}

export interface Agenda {
  from: string;
  to: string;
  instances: Instance[];
  truncated?: boolean;
}

export interface Interval {
  start: string;
  end: string;
}

export interface FreeResult {
  free: Interval[] | null;
  busy: Interval[] | null;
  truncated?: boolean;
}

export interface Person {
  name: string;
  other_names?: string[];
  emails?: string[];
  phones?: string[];
  org?: string;
  title?: string;
  nicknames?: string[];
  books: string[];
  cards: number;
  /** Known only from mail headers (no address-book card). */
  seen_in_mail?: boolean;
  /** How often and how recently the person's addresses were mailed. */
  mail?: { sent: number; received: number; last_contact?: string };
}

export interface Candidate {
  name: string;
  email: string;
  other_emails?: string[];
  org?: string;
  score: number;
  evidence: { card: boolean; books?: string[]; mailed: number; received: number; last_contact?: string; matched: string };
}

export interface Resolution {
  query: string;
  status: string;
  candidates: Candidate[] | null;
  note: string;
}

/** The viewer's zone (the browser's). */
export function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** YYYY-MM-DD of an instant in a zone. */
export function dateIn(t: Date, zone: string): string {
  const p = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(t);
  const get = (k: string) => p.find((x) => x.type === k)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')}`;
}

/** HH:MM of an instant in a zone (24-hour, so columns line up). */
export function timeIn(t: Date, zone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(t);
}

/** Adds days to a YYYY-MM-DD date (calendar arithmetic, no zone). */
export function addDays(day: string, n: number): string {
  const [y, m, d] = day.split('-').map(Number);
  const t = new Date(Date.UTC(y, m - 1, d + n));
  return t.toISOString().slice(0, 10);
}

/** The Monday of the week holding day. */
export function weekStart(day: string): string {
  const [y, m, d] = day.split('-').map(Number);
  const wd = new Date(Date.UTC(y, m - 1, d)).getUTCDay();
  return addDays(day, -((wd + 6) % 7));
}

/** A long label for a YYYY-MM-DD date: "Thursday 5 March". */
export function dayLabel(day: string): string {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d)).toLocaleDateString(undefined, { weekday: 'long', day: 'numeric', month: 'long', timeZone: 'UTC' });
}

/** One line of a day: an instance as it falls on that day. */
export interface DayItem {
  inst: Instance;
  /** "All day", "09:30–10:00", "from 22:00", "until 01:00" or "all day (continues)". */
  time: string;
  /** The time in the event's own zone when that differs from the viewer's, e.g. "15:00 America/New_York". */
  own?: string;
  allDay: boolean;
  sort: number;
}

function shortZone(z: string): string {
  return z.includes('/') ? z.slice(z.lastIndexOf('/') + 1).replace(/_/g, ' ') : z;
}

/**
 * Lays instances out on the days [from, from+days) of the viewer's zone.
 * All-day events are dates, not instants: they land on their own dates
 * whatever the viewer's zone. Timed events are placed by the viewer's
 * local date and shown on every day they touch.
 */
export function layoutDays(instances: Instance[], from: string, days: number, zone: string): { day: string; items: DayItem[] }[] {
  const out: { day: string; items: DayItem[] }[] = [];
  const index = new Map<string, DayItem[]>();
  for (let i = 0; i < days; i++) {
    const day = addDays(from, i);
    const items: DayItem[] = [];
    out.push({ day, items });
    index.set(day, items);
  }
  for (const inst of instances) {
    if (inst.all_day) {
      const first = inst.start.slice(0, 10);
      // The end is exclusive; an all-day event with no length is one day.
      let last = addDays(inst.end.slice(0, 10), -1);
      if (last < first) last = first;
      for (let d = first; d <= last; d = addDays(d, 1)) {
        index.get(d)?.push({ inst, time: 'All day', allDay: true, sort: -1 });
      }
      continue;
    }
    const s = new Date(inst.start);
    const e = new Date(inst.end);
    if (Number.isNaN(s.getTime()) || Number.isNaN(e.getTime())) continue;
    const sd = dateIn(s, zone);
    // An event ending exactly at midnight does not touch the next day.
    const ed = e > s ? dateIn(new Date(e.getTime() - 1), zone) : sd;
    let own: string | undefined;
    if (inst.zone && inst.zone !== zone) {
      try {
        const a = timeIn(s, inst.zone);
        if (a !== timeIn(s, zone) || dateIn(s, inst.zone) !== sd) own = `${a} ${shortZone(inst.zone)}`;
      } catch {
        own = undefined; // a zone this browser does not know
      }
    }
    for (let d = sd; d <= ed; d = addDays(d, 1)) {
      const items = index.get(d);
      if (!items) continue;
      let time: string;
      if (sd === ed) time = e > s ? `${timeIn(s, zone)}–${timeIn(e, zone)}` : timeIn(s, zone);
      else if (d === sd) time = `from ${timeIn(s, zone)}`;
      else if (d === ed) time = `until ${timeIn(e, zone)}`;
      else time = 'all day (continues)';
      items.push({ inst, time, own, allDay: false, sort: d === sd ? s.getTime() : 0 });
    }
  }
  for (const d of out) d.items.sort((a, b) => a.sort - b.sort || a.inst.summary.localeCompare(b.inst.summary));
  return out;
}

/** Plain words for an RRULE's frequency, for the "repeats" badge. */
export function repeatText(rule?: string): string {
  const f = /FREQ=([A-Z]+)/.exec(rule ?? '')?.[1];
  const words: Record<string, string> = { DAILY: 'daily', WEEKLY: 'weekly', MONTHLY: 'monthly', YEARLY: 'yearly', HOURLY: 'hourly', MINUTELY: 'every few minutes', SECONDLY: 'every few seconds' };
  return f ? `repeats ${words[f] ?? f.toLowerCase()}` : 'repeats';
}
