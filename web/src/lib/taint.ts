// How the untrusted reads that tainted a turn are named on an approval card.
import type { TaintSource } from '../api/types';

/** "mail_read (id 42)", or just the tool when there is no detail. */
export function taintLabel(s: TaintSource): string {
  const d = s.detail?.trim();
  return d ? `${s.tool} (${d})` : s.tool;
}

/** Distinct labels, in the order the turn read them. */
export function taintLabels(sources: TaintSource[] | undefined): string[] {
  const out: string[] = [];
  for (const s of sources ?? []) {
    if (!s?.tool) continue;
    const l = taintLabel(s);
    if (!out.includes(l)) out.push(l);
  }
  return out;
}
