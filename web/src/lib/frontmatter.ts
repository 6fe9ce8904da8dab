// Front matter: the `---` block of key: value lines at the top of a wiki
// page. Rendered as Markdown it became a rule and a heading; it is shown as
// a small key/value block instead.

export interface FrontMatter {
  /** The key/value pairs in file order; a list value is joined with ", ". */
  meta: [string, string][];
  /** The page without its front matter. */
  body: string;
}

/** Splits leading front matter off a page. Text without a closed `---`
 * block, or whose block has a line that is not `key: value` (or a `- item`
 * under a key), is returned whole: better shown raw than misread. */
export function splitFrontMatter(text: string): FrontMatter {
  const m = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!m) return { meta: [], body: text };
  const meta: [string, string][] = [];
  for (const line of m[1].split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const item = /^\s+-\s+(.*)$/.exec(line) ?? /^-\s+(.*)$/.exec(line);
    if (item && meta.length > 0) {
      const last = meta[meta.length - 1];
      last[1] = last[1] ? `${last[1]}, ${unquote(item[1])}` : unquote(item[1]);
      continue;
    }
    const kv = /^([A-Za-z0-9_.-]+):\s*(.*)$/.exec(line);
    if (!kv) return { meta: [], body: text };
    let v = kv[2].trim();
    if (v.startsWith('[') && v.endsWith(']')) v = v.slice(1, -1).split(',').map((s) => unquote(s.trim())).filter(Boolean).join(', ');
    meta.push([kv[1], unquote(v)]);
  }
  return { meta, body: text.slice(m[0].length) };
}

function unquote(s: string): string {
  return s.length >= 2 && (s[0] === '"' || s[0] === "'") && s[s.length - 1] === s[0] ? s.slice(1, -1) : s;
}
