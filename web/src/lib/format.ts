// Small formatting helpers shared by the pages.

export function relTime(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 24) return `${h} h ago`;
  const d = Math.round(h / 24);
  if (d < 7) return `${d} d ago`;
  return new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

/** A full local date and time, or empty (default "—") when there is none. */
export function when(iso: string | undefined, empty = '—'): string {
  return iso ? new Date(iso).toLocaleString() : empty;
}

export function clock(iso: string | undefined): string {
  if (!iso) return '';
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return '';
  return t.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function duration(ms: number | undefined): string {
  if (ms === undefined || ms === null) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function money(usd: number | undefined): string {
  if (usd === undefined || usd === null || Number.isNaN(usd)) return '—';
  if (usd === 0) return '$0';
  if (usd < 0.01) return '<$0.01';
  return '$' + usd.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

export function count(n: number | undefined): string {
  if (n === undefined || n === null) return '—';
  if (n >= 1e9) return (n / 1e9).toFixed(1) + 'B';
  if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
  if (n >= 1e4) return (n / 1e3).toFixed(1) + 'k';
  return n.toLocaleString();
}

/** "write_file" → "Write file", "mcp__browser_open" → "Browser open". */
export function prettyTool(name: string): string {
  const s = name.replace(/^mcp__/, '').replace(/[_-]+/g, ' ').trim();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function excerpt(s: string | undefined, max = 2000): string {
  if (!s) return '';
  return s.length > max ? s.slice(0, max) + '…' : s;
}

export function json(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2) ?? '';
  } catch {
    return String(v);
  }
}

const summaryKeys = ['path', 'query', 'q', 'to', 'url', 'command', 'name', 'title', 'id'];

/** The one argument that best says what a call is about ("~/notes.txt"). */
export function argSummary(args: Record<string, unknown> | undefined, max = 60): string {
  if (!args) return '';
  let v: unknown;
  for (const k of summaryKeys) {
    if (typeof args[k] === 'string' && args[k]) {
      v = args[k];
      break;
    }
  }
  if (v === undefined) v = Object.values(args).find((x) => typeof x === 'string' && x.length > 0 && x.length <= 200);
  if (typeof v !== 'string') return '';
  const one = v.replace(/\s+/g, ' ').trim();
  return one.length > max ? one.slice(0, max - 1) + '…' : one;
}

/** A byte count in IEC units ("5.0 MiB"); "—" for anything but a number. */
export function bytes(n: unknown): string {
  if (typeof n !== 'number' || !isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

/** A tool's output as the card shows it. Output the daemon wrapped as
 * outside content for the model (`<untrusted_content source=… boundary=…>`)
 * is unwrapped and flagged instead of shown with its delimiters; JSON is
 * pretty-printed, which also undoes Go's HTML escaping (\u003c → <). */
export function toolOutput(s: string | undefined): { text: string; outside?: string; note?: string } {
  if (!s) return { text: '' };
  let text = s;
  let outside: string | undefined;
  let note: string | undefined;
  const open = /^<untrusted_content source="([^"]*)" boundary="[^"]*">\n/.exec(text);
  const close = /\n?<\/untrusted_content boundary="[^"]*">\s*$/.exec(text);
  if (open && close && close.index >= open[0].length - 1) {
    outside = open[1];
    text = text.slice(open[0].length, close.index);
    const n = /\n?\[hestia: ([^\]\n]*)\]$/.exec(text);
    if (n) {
      note = n[1];
      text = text.slice(0, n.index);
    }
  }
  const t = text.trim();
  if ((t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'))) {
    try {
      text = JSON.stringify(JSON.parse(t), null, 2);
    } catch {
      // Not JSON after all (or cut at the excerpt limit): show as sent.
    }
  }
  return { text, outside, note };
}
