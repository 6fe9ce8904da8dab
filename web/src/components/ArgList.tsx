// A tool call's full arguments as a key/value list: long values wrap,
// multi-line text keeps its lines, and on a phone each value sits under
// its key. Anything that is not an object is shown as pretty JSON.
import { argEntries, argText } from '../lib/args';

export function ArgList({ args, label }: { args: unknown; label: string }) {
  const entries = argEntries(args);
  if (entries === null) {
    return (
      <pre class="arg-list-raw mono" aria-label={label}>
        {argText(args)}
      </pre>
    );
  }
  if (entries.length === 0) {
    return (
      <p class="arg-list-empty muted small" aria-label={label}>
        No arguments.
      </p>
    );
  }
  return (
    <dl class="arg-list" aria-label={label}>
      {entries.map((e) => (
        <div key={e.key}>
          <dt class="mono">{e.key}</dt>
          <dd class={e.str ? 'arg-str' : 'arg-json mono'}>{e.text}</dd>
        </div>
      ))}
    </dl>
  );
}
