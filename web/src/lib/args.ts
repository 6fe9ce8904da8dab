// Showing a tool call's arguments so that what the user reads is what will
// run: every key, every value in full, and characters that would otherwise
// be invisible (controls, zero-width and bidirectional marks, which can
// make one address look like another) spelled out.

// Controls other than tab and newline, C1 controls, zero-width and
// direction marks, bidi embeddings/overrides/isolates, word joiners, BOM.
const hidden = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;

/** s with each invisible or direction-changing character shown as ⟨U+XXXX⟩. */
export function visible(s: string): string {
  return s.replace(hidden, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`);
}

/** A value as the user should read it: strings verbatim, the rest as pretty JSON. */
export function argText(v: unknown): string {
  if (v === '') return '""';
  if (typeof v === 'string') return visible(v);
  if (v === undefined) return '(none)';
  return visible(JSON.stringify(v, null, 2) ?? String(v));
}

export interface ArgEntry {
  key: string;
  text: string;
  /** A string value (shown as text) rather than JSON. */
  str: boolean;
}

/**
 * The entries of an arguments object in its own order, or null when args is
 * not a plain object (then show argText(args) whole).
 */
export function argEntries(args: unknown): ArgEntry[] | null {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return null;
  return Object.entries(args as Record<string, unknown>).map(([k, v]) => ({ key: visible(k), text: argText(v), str: typeof v === 'string' }));
}
