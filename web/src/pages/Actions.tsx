import { useEffect, useState } from 'preact/hooks';
import { actionsApi, pushApi, urlB64ToBytes, type ActionItem, type ActionSettings } from '../api/background';
import { ArgList } from '../components/ArgList';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { Failure, PageHeader } from './common';
import '../styles/background.css';

const tabs = [
  ['', 'Open'],
  ['done', 'Done'],
  ['dismissed', 'Dismissed'],
  ['all', 'All'],
] as const;

export function ActionsPage() {
  const app = useApp();
  const api = actionsApi(app.client);
  const [state, setState] = useState('');
  const [items, setItems] = useState<ActionItem[] | null>(null);
  const [counts, setCounts] = useState<Record<string, number>>({});
  const [settings, setSettings] = useState<ActionSettings | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [note, setNote] = useState('');
  const load = () => {
    setErr(null);
    api.list(state).then((r) => {
      setItems(r.actions ?? []);
      setCounts(r.counts ?? {});
    }, setErr);
  };
  useEffect(load, [state]);
  useEffect(() => {
    api.settings().then(setSettings, () => setSettings(null));
  }, []);
  const act = (p: Promise<unknown>, msg: string) =>
    p.then(
      () => {
        setNote(msg);
        load();
      },
      (e) => setNote(errText(e)),
    );

  return (
    <div class="page bg-page">
      <PageHeader title="Action Center" subtitle="Work found in new mail, waiting for you.">
        <PushButton />
      </PageHeader>
      {settings && !settings.enabled && (
        <div class="callout" role="note">
          <span>The Action Center is off. Turning it on marks today's mail as seen; only new mail is looked at.</span>
          <button class="btn small" onClick={() => act(api.setSettings({ ...settings, enabled: true }).then(setSettings), 'The Action Center is on.')}>
            Turn on
          </button>
        </div>
      )}
      <div class="segmented bg-tabs" role="tablist" aria-label="Filter">
        {tabs.map(([k, label]) => (
          <button role="tab" aria-selected={state === k} class={state === k ? 'on' : ''} onClick={() => setState(k)}>
            {label}
            {k === '' ? ` (${(counts.new ?? 0) + (counts.read ?? 0)})` : k !== 'all' ? ` (${counts[k] ?? 0})` : ''}
          </button>
        ))}
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
        <p class="muted">Nothing here.</p>
      ) : (
        <ul class="bg-list" aria-label="Actions">
          {items.map((it) => (
            <li class="bg-card" key={it.id} aria-label={it.summary}>
              <div class="bg-row">
                <span class={'bg-badge ' + (it.priority === 'high' ? 'bad' : '')}>{it.priority}</span>
                <span class="bg-badge">{it.kind.replace('_', ' ')}</span>
                {it.state === 'new' && <span class="bg-badge ok">new</span>}
                {it.deadline && <span class="muted small">due {new Date(it.deadline).toLocaleString()}</span>}
              </div>
              <p>{it.summary}</p>
              {it.context?.subject && (
                <p class="muted small">
                  {it.context.from} · {it.context.subject}
                </p>
              )}
              <ol class="bg-steps">
                {it.steps.map((s, i) => (
                  <li key={i}>
                    {s.title} {s.tool && <code>{s.tool}</code>} {s.manual && <span class="muted small">(you)</span>}
                    {s.state && s.state !== 'pending' && <span class="bg-badge">{s.state.replace('_', ' ')}</span>}
                    {s.tool && <ArgList args={s.args ?? {}} label={`Arguments of step ${i + 1}: ${s.tool}`} />}
                  </li>
                ))}
              </ol>
              {it.steps.some((s) => s.tool) && (
                <p class="muted small">
                  Planned from mail, which anyone can send: check each step's arguments. A step that sends or writes still asks you
                  before it runs.
                </p>
              )}
              {(it.state === 'new' || it.state === 'read') && (
                <div class="bg-row">
                  {it.steps.some((s) => s.tool) && (
                    <button class="btn small" onClick={() => act(api.execute(it.id), 'Running the steps; approvals wait for you.')}>
                      Execute
                    </button>
                  )}
                  <button class="btn small" onClick={() => act(api.setState(it.id, 'done'), 'Marked done.')}>
                    Done
                  </button>
                  <button class="btn small" onClick={() => act(api.setState(it.id, 'dismissed'), 'Dismissed.')}>
                    Dismiss
                  </button>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** Subscribes this browser to Web Push through the service worker. */
function PushButton() {
  const app = useApp();
  const [msg, setMsg] = useState('');
  const supported = typeof navigator !== 'undefined' && 'serviceWorker' in navigator && typeof window !== 'undefined' && 'PushManager' in window;
  if (!supported) return null;
  const enable = async () => {
    try {
      if ((await Notification.requestPermission()) !== 'granted') {
        setMsg('Notifications are blocked in this browser.');
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
  };
  return (
    <span>
      <button class="btn small" onClick={enable}>
        Notify this device
      </button>
      {msg && <span class="muted small"> {msg}</span>}
    </span>
  );
}
