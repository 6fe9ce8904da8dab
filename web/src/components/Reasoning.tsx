// The model's reasoning for one step, collapsed above the reply: the same
// block while the step streams and, after the turn or a reload, with the
// stored assistant message. It is plain text (never Markdown or HTML): the
// model wrote it for itself, and it may quote whatever it read.

/** The summary line: "Thinking…" while nothing else has streamed,
 * "Thought" once the reply started, and for a stored message the time it
 * took when the daemon knows it, else "Reasoning". */
export function reasoningLabel(o: { live?: boolean; answered?: boolean; ms?: number }): string {
  if (o.live) return o.answered ? 'Thought' : 'Thinking…';
  const ms = o.ms ?? 0;
  if (ms <= 0) return 'Reasoning';
  if (ms < 1000) return 'Thought for under 1 s';
  return `Thought for ${Math.round(ms / 1000)} s`;
}

export function Reasoning({ text, ms, live, answered }: { text: string; ms?: number; live?: boolean; answered?: boolean }) {
  return (
    <details class="reasoning">
      <summary>{reasoningLabel({ live, answered, ms })}</summary>
      <div class="reasoning-text">{text}</div>
    </details>
  );
}
