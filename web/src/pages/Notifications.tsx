// Notifications: the inbox the daemon fills (approvals waiting, actions,
// fired watches, failed jobs, budget warnings), how and when they reach
// this device (quiet hours, rate limit, Web Push devices), and the watches
// that produce "tell me when…" notifications.
import { useEffect, useState } from 'preact/hooks';
import { pushApi, urlB64ToBytes } from '../api/background';
import { noticeHref, notifyApi, type Notice, type NotifySettings, type PushDevice } from '../api/notify';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { when } from '../lib/format';
import { navigate } from '../router';
import type { UIState } from '../state/app';
import { useSelect } from '../state/store';
import { Failure, PageHeader } from './common';
import { WatchesSection } from './notifications/Watches';
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
