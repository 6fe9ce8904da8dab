// Notifications: the inbox the daemon fills (approvals waiting, actions,
// fired watches, failed jobs, budget warnings), how and when they reach
// this device (quiet hours, rate limit, Web Push devices), and the watches
// that produce "tell me when…" notifications.
import { useEffect, useState } from 'preact/hooks';
import { pushApi, urlB64ToBytes } from '../api/background';
import {
  constraintText,
  noticeHref,
  notifyApi,
  ruleText,
  watchApi,
  type Notice,
  type NotifySettings,
  type PushDevice,
  type Watch,
  type WatchList,
} from '../api/notify';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { when } from '../lib/format';
import { navigate } from '../router';
import type { UIState } from '../state/app';
import { useSelect } from '../state/store';
import { Failure, PageHeader } from './common';
import '../styles/background.css';

export function NotificationsPage() {
  return (
    <div class="page bg-page notify-page">
      <PageHeader title="Notifications" subtitle="What Hestia told you, when it may reach this device, and what it watches for you." />
      <InboxSection />
      <SettingsSection />
      <WatchesSection />
    </div>
  );
}

const kindLabel: Record<string, string> = {
  approval: 'approval',
  action: 'action',
  watch: 'watch',
  job: 'job',
  budget: 'budget',
};

function InboxSection() {
  const app = useApp();
  const api = notifyApi(app.client);
  const rev = useSelect(app.ui, (u: UIState) => u.notifyRev ?? 0);
  const [unreadOnly, setUnreadOnly] = useState(false);
  const [items, setItems] = useState<Notice[] | null>(null);
  const [unread, setUnread] = useState(0);
  const [err, setErr] = useState<unknown>(null);
  const [note, setNote] = useState('');
  const load = () => {
    setErr(null);
    api.list(unreadOnly).then((r) => {
      setItems(r.notifications ?? []);
      setUnread(r.unread ?? 0);
    }, setErr);
  };
  useEffect(load, [unreadOnly, rev]);
  const markRead = (n: Notice) => api.read(n.id).then(load, (e) => setNote(errText(e)));
  const open = (n: Notice, href: string) => {
    const go = () => navigate(href);
    if (n.read_at) go();
    else api.read(n.id).then(go, go);
  };
  return (
    <section class="bg-card" aria-label="Inbox">
      <div class="bg-row bg-head">
        <h2>Inbox {unread > 0 && <span class="bg-badge bad">{unread} unread</span>}</h2>
        <div class="segmented" role="tablist" aria-label="Show">
          <button role="tab" aria-selected={!unreadOnly} class={!unreadOnly ? 'on' : ''} onClick={() => setUnreadOnly(false)}>
            All
          </button>
          <button role="tab" aria-selected={unreadOnly} class={unreadOnly ? 'on' : ''} onClick={() => setUnreadOnly(true)}>
            Unread
          </button>
        </div>
        <button class="btn small" onClick={load}>
          Refresh
        </button>
        <button class="btn small" disabled={unread === 0} onClick={() => api.readAll().then(load, (e) => setNote(errText(e)))}>
          Mark all read
        </button>
      </div>
      {note && (
        <p class="muted" role="status">
          {note}
        </p>
      )}
      {err ? (
        <Failure err={err} retry={load} />
      ) : !items ? (
        <div class="skeleton tall" />
      ) : items.length === 0 ? (
        <p class="muted">{unreadOnly ? 'Nothing unread.' : 'No notifications yet. Approvals waiting, fired watches and failed jobs show up here.'}</p>
      ) : (
        <ul class="bg-list" aria-label="Notifications">
          {items.map((n) => {
            const href = noticeHref(n);
            return (
              <li key={n.id} class={'notice' + (n.read_at ? '' : ' unread')} aria-label={n.title}>
                <div class="bg-row">
                  {!n.read_at && <span class="bg-badge ok">new</span>}
                  <span class="bg-badge">{kindLabel[n.kind] ?? n.kind}</span>
                  <strong>{n.title}</strong>
                </div>
                {n.body && <p class="notice-body">{n.body}</p>}
                <div class="bg-row muted small">
                  <span>{when(n.created_at)}</span>
                  <span title={n.last_error || undefined}>
                    · push {n.push_state.replace('_', ' ')}
                    {n.push_reason ? ` (${n.push_reason.replace('_', ' ')})` : ''}
                  </span>
                </div>
                <div class="bg-row">
                  {href && (
                    <a
                      class="btn small"
                      href={href}
                      onClick={(e) => {
                        e.preventDefault();
                        open(n, href);
                      }}
                    >
                      Open
                    </a>
                  )}
                  {!n.read_at && (
                    <button class="btn small" onClick={() => markRead(n)} aria-label={`Mark read: ${n.title}`}>
                      Mark read
                    </button>
                  )}
                </div>
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}

function SettingsSection() {
  const app = useApp();
  const api = notifyApi(app.client);
  const [s, setS] = useState<NotifySettings | null>(null);
  const [quiet, setQuiet] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  const [saveErr, setSaveErr] = useState('');
  const [saved, setSaved] = useState(false);
  const load = () => {
    setErr(null);
    api.settings().then((x) => {
      setS(x);
      setQuiet(!!x.quiet_start);
    }, setErr);
  };
  useEffect(load, []);
  const save = (e: Event) => {
    e.preventDefault();
    if (!s) return;
    setSaveErr('');
    setSaved(false);
    const body = quiet ? s : { ...s, quiet_start: '', quiet_end: '' };
    api.setSettings(body).then(
      (x) => {
        setS(x);
        setQuiet(!!x.quiet_start);
        setSaved(true);
      },
      (e) => setSaveErr(errText(e)),
    );
  };
  const set = (k: keyof NotifySettings, v: string | number) => {
    setSaved(false);
    setS((x) => (x ? { ...x, [k]: v } : x));
  };
  return (
    <section class="bg-card" aria-label="Notification settings">
      <h2>Delivery</h2>
      {err ? (
        <Failure err={err} retry={load} />
      ) : !s ? (
        <div class="skeleton" />
      ) : (
        <form onSubmit={save} aria-label="Delivery settings">
          <label class="bg-check">
            <input type="checkbox" aria-label="Quiet hours" checked={quiet} onChange={(e) => setQuiet((e.target as HTMLInputElement).checked)} />
            Quiet hours: hold pushes back, deliver them when the quiet time ends
          </label>
          {quiet && (
            <div class="bg-row">
              <label>
                From
                <input type="time" aria-label="Quiet from" value={s.quiet_start || '22:00'} onInput={(e) => set('quiet_start', (e.target as HTMLInputElement).value)} />
              </label>
              <label>
                Until
                <input type="time" aria-label="Quiet until" value={s.quiet_end || '07:00'} onInput={(e) => set('quiet_end', (e.target as HTMLInputElement).value)} />
              </label>
            </div>
          )}
          <label>
            At most this many pushes per 10 minutes (0: no limit); the rest stay in the inbox
            <input
              type="number"
              min={0}
              max={1000}
              aria-label="Rate limit"
              value={s.rate_limit}
              onInput={(e) => set('rate_limit', Number((e.target as HTMLInputElement).value))}
            />
          </label>
          {saveErr && (
            <div class="callout error" role="alert">
              {saveErr}
            </div>
          )}
          <div class="bg-row">
            <button class="btn" type="submit">
              Save
            </button>
            {saved && (
              <span class="muted" role="status">
                Saved.
              </span>
            )}
          </div>
        </form>
      )}
      <Devices />
    </section>
  );
}

function pushSupported() {
  return typeof navigator !== 'undefined' && 'serviceWorker' in navigator && typeof window !== 'undefined' && 'PushManager' in window;
}

/** Web Push: this browser's subscription and every subscribed device. */
function Devices() {
  const app = useApp();
  const api = notifyApi(app.client);
  const [devs, setDevs] = useState<PushDevice[] | null>(null);
  const [mine, setMine] = useState<string | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [msg, setMsg] = useState('');
  const supported = pushSupported();
  const load = () => {
    setErr(null);
    api.devices().then(setDevs, setErr);
    if (supported)
      navigator.serviceWorker.ready
        .then((r) => r.pushManager.getSubscription())
        .then((s) => setMine(s?.endpoint ?? null))
        .catch(() => setMine(null));
  };
  useEffect(load, []);
  const subscribe = async () => {
    setMsg('');
    try {
      if ((await Notification.requestPermission()) !== 'granted') {
        setMsg('Notifications are blocked in this browser: allow them in the site settings.');
        return;
      }
      const key = await pushApi(app.client).key();
      const reg = await navigator.serviceWorker.ready;
      const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: urlB64ToBytes(key) });
      await pushApi(app.client).subscribe(sub.toJSON(), navigator.userAgent.slice(0, 100));
      setMsg('Notifications are on for this device.');
    } catch (e) {
      setMsg(errText(e));
    }
    load();
  };
  const remove = async (endpoint: string) => {
    setMsg('');
    try {
      await api.unsubscribe(endpoint);
      if (endpoint === mine) {
        const reg = await navigator.serviceWorker.ready;
        await (await reg.pushManager.getSubscription())?.unsubscribe();
      }
      setMsg('Removed.');
    } catch (e) {
      setMsg(errText(e));
    }
    load();
  };
  const listed = devs?.some((d) => d.endpoint === mine);
  return (
    <div class="notify-devices">
      <h3>Web Push devices</h3>
      <div class="bg-row">
        {!supported ? (
          <span class="muted small">This browser cannot receive Web Push.</span>
        ) : listed ? (
          <button class="btn small" onClick={() => mine && remove(mine)}>
            Stop notifying this device
          </button>
        ) : (
          <button class="btn small" onClick={subscribe}>
            Notify this device
          </button>
        )}
        {msg && (
          <span class="muted small" role="status">
            {msg}
          </span>
        )}
      </div>
      {err ? (
        <Failure err={err} retry={load} />
      ) : !devs ? null : devs.length === 0 ? (
        <p class="muted small">No device receives pushes; notifications stay in the inbox.</p>
      ) : (
        <ul class="bg-list" aria-label="Push devices">
          {devs.map((d) => (
            <li key={d.id} class="bg-row">
              <span>
                {d.device || 'Unnamed device'}
                {d.endpoint === mine && <span class="bg-badge ok"> this device</span>}
              </span>
              <span class="muted small">
                since {when(d.created_at)}
                {d.last_ok ? ` · last delivered ${when(d.last_ok)}` : ''}
                {d.failures ? ` · ${d.failures} failures` : ''}
              </span>
              <button class="btn small" onClick={() => remove(d.endpoint)} aria-label={`Remove ${d.device || 'device'}`}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

const watchTabs = [
  ['', 'All'],
  ['active', 'Active'],
  ['paused', 'Paused'],
  ['ended', 'Ended'],
] as const;

function WatchesSection() {
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
        <button class="btn small danger" onClick={onDelete}>
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
  mail: 'a saved mail search',
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
  const ev = evs.includes(event) ? event : evs[0] ?? '';
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
          <select aria-label="Source" value={source} onChange={(e) => setSource((e.target as HTMLSelectElement).value)}>
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
        <input aria-label="Resource" value={ref} placeholder={refHints[source] ?? ''} onInput={(e) => setRef((e.target as HTMLInputElement).value)} />
      </label>
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
