// The pieces every Settings section is built from: the section frame, the
// save button with its error, the saver that reports the daemon's refusal
// in place, and the note that the environment overrides a key.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { SettingsChange, SettingsView } from '../../lib/settings';

/** Saves changes; resolves to the daemon's error text, or null when saved. */
export type Save = (changes: SettingsChange[]) => Promise<string | null>;

export function Section({ title, hint, children, id }: { title: string; hint?: string; children: ComponentChildren; id: string }) {
  return (
    <section class="panel settings-section" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {hint && <p class="muted small section-hint">{hint}</p>}
      {children}
    </section>
  );
}

export function SaveRow({ onSave, error, busy, label = 'Save' }: { onSave: () => void; error: string | null; busy: boolean; label?: string }) {
  return (
    <div class="save-row">
      {error && (
        <div class="callout error" role="alert">
          <span>{error}</span>
        </div>
      )}
      <button class="btn primary" disabled={busy} onClick={onSave}>
        {busy ? 'Saving…' : label}
      </button>
    </div>
  );
}

export function useSaver(save: Save) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (changes: SettingsChange[] | { error: string }) => {
    if (!Array.isArray(changes)) {
      setError(changes.error);
      return false;
    }
    setBusy(true);
    const e = await save(changes);
    setBusy(false);
    setError(e);
    return e === null;
  };
  return { error, busy, run, setError };
}

export function EnvNote({ view, keys }: { view: SettingsView; keys: string[] }) {
  const set = keys.filter((k) => view.env_overrides[k]);
  if (!set.length) return null;
  return (
    <p class="env-note small">
      Set by the environment ({set.map((k) => view.env_overrides[k]).join(', ')}), which wins over config.toml.
    </p>
  );
}
