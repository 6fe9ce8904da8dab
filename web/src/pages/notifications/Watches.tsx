// The Watches part of Notifications: every watch with its state, rules,
// grants and last check, the actions on it (pause, resume, stop, delete),
// and the form that adds one ("tell me when…"), which for mail previews what
// the search matches before the watch is saved.
import { useEffect, useRef, useState } from 'preact/hooks';
import { constraintText, ruleText, watchApi, type Watch, type WatchList, type WatchPreview } from '../../api/notify';
import { useApp } from '../../context';
import { errText } from '../../lib/errors';
import { when } from '../../lib/format';
import { Failure } from '../common';

const watchTabs = [
  ['', 'All'],
  ['active', 'Active'],
  ['paused', 'Paused'],
  ['ended', 'Ended'],
] as const;

export function WatchesSection() {
  const app = useApp();
  const api = watchApi(app.client);
  const [list, setList] = useState<WatchList | null>(null);
  const [tab, setTab] = useState<string>('');
  const [err, setErr] = useState<unknown>(null);
  const [note, setNote] = useState('');
  const load = () => {
    setErr(null);
    api.list().then(setList, setErr);
  };
  useEffect(load, []);
  const act = (p: Promise<unknown>, msg: string) =>
    p.then(
      () => {
        setNote(msg);
        load();
      },
      (e) => setNote(errText(e)),
    );
  const shown = (list?.watches ?? []).filter((w) =>
    tab === '' ? true : tab === 'ended' ? !['active', 'paused'].includes(w.state) : w.state === tab,
  );
  return (
    <section class="bg-card" aria-label="Watches">
      <div class="bg-row bg-head">
        <h2>Watches</h2>
        <div class="segmented" role="tablist" aria-label="Watch state">
          {watchTabs.map(([k, label]) => (
            <button role="tab" key={k} aria-selected={tab === k} class={tab === k ? 'on' : ''} onClick={() => setTab(k)}>
              {label}
            </button>
          ))}
        </div>
        <button class="btn small" onClick={load}>
          Refresh
        </button>
      </div>
      {note && (
        <p class="muted" role="status">
          {note}
        </p>
      )}
      {err ? (
        <Failure err={err} retry={load} />
      ) : !list ? (
        <div class="skeleton tall" />
      ) : shown.length === 0 ? (
        <p class="muted">{list.watches.length === 0 ? 'No watches yet. Ask in a chat ("tell me when…") or add one below.' : 'No watch in this state.'}</p>
      ) : (
        <ul class="bg-list" aria-label="Watch list">
          {shown.map((w) => (
            <WatchItem
              key={w.id}
              w={w}
              onPause={(p) => act(api.pause(w.id, p), p ? 'Paused.' : 'Resumed.')}
              onStop={() => act(api.stop(w.id), 'Stopped.')}
              onDelete={() => {
                if (confirm(`Delete the watch on ${w.source} ${w.ref}? Its history goes too.`)) act(api.remove(w.id), 'Deleted.');
              }}
            />
          ))}
        </ul>
      )}
      {list && <NewWatchForm list={list} onAdded={(w) => act(Promise.resolve(w), `Watching ${w.source} ${w.ref}.`)} />}
    </section>
  );
}

function WatchItem({ w, onPause, onStop, onDelete }: { w: Watch; onPause: (p: boolean) => void; onStop: () => void; onDelete: () => void }) {
  const live = w.state === 'active' || w.state === 'paused';
  const grants = w.rules.flatMap((r) => (r.grants ?? []).map((g) => ({ r, g })));
  return (
    <li class="watch" aria-label={`Watch ${w.source} ${w.ref}`}>
      <div class="bg-row">
        <span class={'bg-badge ' + (w.state === 'active' ? 'ok' : w.state === 'paused' ? '' : 'bad')}>{w.state}</span>
        <span class="bg-badge">{w.source}</span>
        <code class="watch-ref">{w.ref}</code>
      </div>
      <p>{w.instruction}</p>
      <dl class="watch-facts">
        <div>
          <dt>Rules</dt>
          <dd>{w.rules.map(ruleText).join('; ')}</dd>
        </div>
        <div>
          <dt>Last fired</dt>
          <dd>
            {w.last_event_at ? when(w.last_event_at) : 'never'} ({w.events} event{w.events === 1 ? '' : 's'})
          </dd>
        </div>
        <div>
          <dt>Last checked</dt>
          <dd>{when(w.last_poll)}</dd>
        </div>
        <div>
          <dt>{live ? 'Expires' : 'Ended'}</dt>
          <dd>{live ? when(w.expires_at) : when(w.ended_at)}</dd>
        </div>
      </dl>
      {w.last_error && (
        <p class="callout warn small" role="note">
          Last check failed: {w.last_error}
        </p>
      )}
      <div class="watch-grants">
        <strong class="small">Allowed without asking:</strong>{' '}
        {grants.length === 0 ? (
          <span class="muted small">nothing (it only notifies)</span>
        ) : (
          <ul aria-label="Grants">
            {grants.map(({ r, g }, i) => (
              <li key={i}>
                on {ruleText(r)}: <code>{g.tool}</code>{' '}
                {Object.entries(g.args ?? {})
                  .map(([k, c]) => `${k} = ${constraintText(c)}`)
                  .join(', ')}{' '}
                <span class="muted small">(at most {g.max || 1}×)</span>
              </li>
            ))}
          </ul>
        )}
      </div>
      <div class="bg-row">
        {w.state === 'active' && (
          <button class="btn small" onClick={() => onPause(true)}>
            Pause
          </button>
        )}
        {w.state === 'paused' && (
          <button class="btn small" onClick={() => onPause(false)}>
            Resume
          </button>
        )}
        {live && (
          <button class="btn small" onClick={onStop}>
            Stop
          </button>
        )}
        <button class="btn small danger-ghost" onClick={onDelete}>
          Delete
        </button>
      </div>
    </li>
  );
}

const refHints: Record<string, string> = {
  file: '/home/you/notes/todo.md',
  url: 'https://example.org/status.json',
  train: 'S01700/9544/1767571200000 (origin/number/service day)',
  mail: 'from:anna@example.org subject:invoice (as in hestia mail search)',
};

function inDays(d: number) {
  return new Date(Date.now() + d * 86400e3).toISOString().replace(/\.\d+Z$/, 'Z');
}

function NewWatchForm({ list, onAdded }: { list: WatchList; onAdded: (w: Watch) => void }) {
  const app = useApp();
  const sources = list.sources ?? [];
  const [source, setSource] = useState(sources.includes('file') ? 'file' : sources[0] ?? '');
  const evs = list.events?.[source] ?? [];
  const [event, setEvent] = useState('');
  const [ref, setRef] = useState('');
  const [instruction, setInstruction] = useState('');
  const [days, setDays] = useState(7);
  const [rulesJSON, setRulesJSON] = useState('');
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  const [pv, setPv] = useState<PreviewState | null>(null);
  // Numbers preview requests so an answer for an older query never
  // replaces the one for what is typed now.
  const pvSeq = useRef(0);
  const ev = evs.includes(event) ? event : evs[0] ?? '';
  const clearPreview = () => {
    pvSeq.current++;
    setPv(null);
  };
  const preview = () => {
    const n = ++pvSeq.current;
    const q = ref;
    setPv({ ref: q, busy: true });
    watchApi(app.client)
      .preview(source, q, previewLimit)
      .then(
        (result) => n === pvSeq.current && setPv({ ref: q, result }),
        (x) => n === pvSeq.current && setPv({ ref: q, err: errText(x) }),
      );
  };
  const submit = (e: Event) => {
    e.preventDefault();
    setErr('');
    let rules;
    if (rulesJSON.trim()) {
      try {
        rules = JSON.parse(rulesJSON);
      } catch (x) {
        setErr(`rules: not valid JSON (${(x as Error).message})`);
        return;
      }
    } else {
      rules = [{ event: ev }];
    }
    setBusy(true);
    watchApi(app.client)
      .create({ source, ref, instruction, expires_at: days > 0 ? inDays(days) : undefined, rules })
      .then(
        (w) => {
          setRef('');
          setInstruction('');
          setRulesJSON('');
          clearPreview();
          onAdded(w);
        },
        (x) => setErr(errText(x)),
      )
      .finally(() => setBusy(false));
  };
  if (sources.length === 0) return null;
  return (
    <form class="bg-card" onSubmit={submit} aria-label="New watch">
      <h2>New watch</h2>
      <div class="bg-row">
        <label>
          Source
          <select
            aria-label="Source"
            value={source}
            onChange={(e) => {
              setSource((e.target as HTMLSelectElement).value);
              clearPreview();
            }}
          >
            {sources.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        {evs.length > 0 && (
          <label>
            Tell me on
            <select aria-label="Event" value={ev} onChange={(e) => setEvent((e.target as HTMLSelectElement).value)}>
              {evs.map((x) => (
                <option key={x} value={x}>
                  {x}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Stop after (days)
          <input type="number" min={1} max={90} aria-label="Days" value={days} onInput={(e) => setDays(Number((e.target as HTMLInputElement).value))} />
        </label>
      </div>
      <label>
        What to watch
        <input
          aria-label="Resource"
          value={ref}
          placeholder={refHints[source] ?? ''}
          onInput={(e) => {
            setRef((e.target as HTMLInputElement).value);
            clearPreview();
          }}
        />
      </label>
      {source === 'mail' && (
        <>
          <div class="bg-row">
            <button class="btn small" type="button" onClick={preview} disabled={pv?.busy || !ref.trim()}>
              Preview
            </button>
            <span class="muted small">See which messages the search matches now, before saving.</span>
          </div>
          {pv && <PreviewBox pv={pv} />}
        </>
      )}
      <label>
        Your instruction
        <input
          aria-label="Instruction"
          value={instruction}
          placeholder="Tell me when it changes"
          onInput={(e) => setInstruction((e.target as HTMLInputElement).value)}
        />
      </label>
      <details>
        <summary>Advanced: rules as JSON (filters, time triggers, grants)</summary>
        <textarea
          aria-label="Rules JSON"
          rows={4}
          value={rulesJSON}
          placeholder='[{"event": "train.arrived", "once": true, "grants": [{"tool": "mail_send", "args": {"to": {"exact": ["ann@example.org"]}}}]}]'
          onInput={(e) => setRulesJSON((e.target as HTMLTextAreaElement).value)}
        />
      </details>
      {err && (
        <div class="callout error" role="alert">
          {err}
        </div>
      )}
      <button class="btn" type="submit" disabled={busy || !source}>
        Add watch
      </button>
    </form>
  );
}

/** How many matches a preview lists (the count covers them all). */
const previewLimit = 5;

interface PreviewState {
  ref: string;
  busy?: boolean;
  result?: WatchPreview;
  err?: string;
}

/** What a mail watch's search matches now: the count and the newest few, "nothing
 * matches yet", or the daemon's error naming what is wrong with the query. */
function PreviewBox({ pv }: { pv: PreviewState }) {
  const r = pv.result;
  return (
    <div class="watch-preview" role="region" aria-label="Preview" aria-live="polite" aria-busy={pv.busy ? 'true' : 'false'}>
      {pv.busy ? (
        <p class="muted small">Searching the mail mirror…</p>
      ) : pv.err !== undefined ? (
        <div class="callout error" role="alert">
          The search cannot be watched: {pv.err}
        </div>
      ) : !r || r.matches.length === 0 ? (
        <p>Nothing matches yet. The watch fires when matching mail arrives after it is saved.</p>
      ) : (
        <>
          <p>
            {r.total} message{r.total === 1 ? '' : 's'} match{r.total === 1 ? 'es' : ''} now
            {r.total > r.matches.length ? `; the newest ${r.matches.length}:` : ':'}
          </p>
          <ul class="watch-hits" aria-label="Matching messages">
            {r.matches.map((m) => (
              <li key={m.id}>
                <span class="watch-hit-subject">{m.subject || '(no subject)'}</span>
                <span class="muted small">
                  {m.from} · {when(m.date)}
                </span>
              </li>
            ))}
          </ul>
          {r.note && <p class="muted small">{r.note}</p>}
        </>
      )}
    </div>
  );
}
