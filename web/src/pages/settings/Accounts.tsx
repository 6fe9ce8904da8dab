// The Accounts section of Settings: each OAuth sign-in of
// [[oauth.accounts]] with its state, and Connect / Reconnect / Disconnect.
// Connect asks the daemon to start the same loopback sign-in as
// `hestia accounts connect NAME` (POST /api/accounts/NAME/connect), opens
// the provider's page it answers in a new tab, and polls the account until
// the sign-in is connected or failed. The provider sends that tab back to
// the daemon at 127.0.0.1, so this works only in a browser on the daemon's
// machine; the section says so and names the --device command for a
// machine without a browser. No token ever reaches the page.
import { useEffect, useState } from 'preact/hooks';
import { useApp } from '../../context';
import { errText } from '../../lib/errors';
import type { AccountAttempt, AccountConnectAnswer, AccountDisconnectAnswer, AccountStatus, AccountView, SourcesView } from '../../lib/settings';
import { Section } from './parts';

/** How often a waiting sign-in is asked about. */
const POLL_MS = 1000;

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

export function Accounts({ s, pollMs = POLL_MS }: { s: SourcesView; pollMs?: number }) {
  const list = s.accounts ?? [];
  const remote = typeof location !== 'undefined' && !loopbackHosts.has(location.hostname);
  return (
    <Section
      id="s-accounts"
      title="Accounts"
      hint="Google and Microsoft sign-ins (OAuth) that mail, calendars and contacts use. Tokens stay in files only you can read and are never shown."
    >
      {s.accounts_error && (
        <p class="error small" role="alert">
          {s.accounts_error}
        </p>
      )}
      {list.length === 0 ? (
        <p class="muted small source-empty">
          No accounts. Add an [[oauth.accounts]] entry to config.toml with your OAuth client id (docs/oauth.md shows the few clicks at
          Google or Microsoft), restart Hestia, then connect it here or run hestia accounts connect NAME in a terminal.
        </p>
      ) : (
        <>
          <ul class="source-list" aria-label="Accounts">
            {list.map((a) => (
              <AccountRow key={a.name} a={a} pollMs={pollMs} />
            ))}
          </ul>
          <p class="muted small account-loopback">
            Connect opens the provider's sign-in page in a new tab. When you allow access, the provider sends that tab back to Hestia at
            127.0.0.1, so this works only in a browser on the machine Hestia runs on. On a machine without a browser, run{' '}
            <code>hestia accounts connect NAME --device</code> in a terminal there (docs/oauth.md also shows an SSH tunnel).
          </p>
          {remote && (
            <div class="callout warn account-remote" role="note">
              <span>
                This page is not open at 127.0.0.1 or localhost. If this browser runs on another device, the sign-in cannot come back to Hestia:
                use <code>hestia accounts connect NAME --device</code> on Hestia's machine instead.
              </span>
            </div>
          )}
        </>
      )}
    </Section>
  );
}

/** What the row shows of the account: its state and the page's sign-in. */
interface Live {
  state: string;
  detail?: string;
  connect?: AccountAttempt;
}

function fromStatus(st: AccountStatus): Live {
  return { state: st.state, detail: st.detail, connect: st.connect };
}

/** The outcome of the last action of this row (start refused, disconnected). */
interface Note {
  ok: boolean;
  text: string;
  manageURL?: string;
}

function AccountRow({ a, pollMs }: { a: AccountView; pollMs: number }) {
  const app = useApp();
  const path = `/api/accounts/${encodeURIComponent(a.name)}`;
  const [live, setLive] = useState<Live | null>(null);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<Note | null>(null);
  // The provider's page, to open by hand when the new tab was blocked or closed.
  const [authURL, setAuthURL] = useState('');
  const [unreachable, setUnreachable] = useState('');
  const cur: Live = live ?? { state: a.state, detail: a.detail, connect: a.connect };
  const waiting = cur.connect?.state === 'waiting';

  // While a sign-in waits, ask the daemon how it went; a failed poll (the
  // daemon restarting) is said and retried more slowly.
  useEffect(() => {
    if (!waiting) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      try {
        const st = await app.client.get<AccountStatus>(path);
        if (stopped) return;
        setUnreachable('');
        setLive(fromStatus(st));
        if (st.connect?.state === 'waiting') timer = setTimeout(() => void poll(), pollMs);
      } catch (e) {
        if (stopped) return;
        setUnreachable(errText(e));
        timer = setTimeout(() => void poll(), pollMs * 3);
      }
    };
    timer = setTimeout(() => void poll(), pollMs);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [waiting, path, pollMs]);

  const connect = async () => {
    // The tab is opened inside the click (one opened after the request
    // would be blocked as a pop-up) and cut off from this page before it
    // goes to the provider.
    const tab = window.open('', '_blank');
    if (tab) {
      try {
        tab.opener = null;
      } catch {
        // a browser that forbids it has already cut the link
      }
    }
    setBusy(true);
    setNote(null);
    setAuthURL('');
    try {
      const r = await app.client.request<AccountConnectAnswer>('POST', `${path}/connect`);
      setLive(fromStatus(r.account));
      setAuthURL(r.auth_url);
      if (tab) tab.location.href = r.auth_url;
    } catch (e) {
      tab?.close();
      setNote({ ok: false, text: `Could not start the sign-in: ${errText(e)}` });
    } finally {
      setBusy(false);
    }
  };

  const disconnect = async () => {
    if (!waiting && !confirm(`Disconnect ${a.name}? Hestia deletes its tokens and stops reading this account's mail, calendars and contacts until you connect it again.`)) return;
    setBusy(true);
    setNote(null);
    try {
      const r = await app.client.request<AccountDisconnectAnswer>('POST', `${path}/disconnect`);
      setLive(fromStatus(r.account));
      setAuthURL('');
      let text: string;
      if (r.revoked) text = "Disconnected: the provider revoked Hestia's access and the tokens are deleted.";
      else if (r.revoke_error) text = `Disconnected: the tokens are deleted, but revoking them at the provider failed (${r.revoke_error}).`;
      else if (r.cancelled && cur.state === 'not connected') text = 'Sign-in cancelled.';
      else text = 'Disconnected: the tokens are deleted.';
      setNote({ ok: true, text, manageURL: r.manage_url });
    } catch (e) {
      setNote({ ok: false, text: `Could not disconnect: ${errText(e)}` });
    } finally {
      setBusy(false);
    }
  };

  const c = cur.connect;
  let status = '';
  let kind = 'idle';
  if (busy) {
    status = `Asking Hestia about ${a.name}…`;
    kind = 'busy';
  } else if (note) {
    status = note.text;
    kind = note.ok ? 'ok' : 'fail';
  } else if (waiting) {
    status = `Waiting for you to sign in to ${a.name} in the new tab…${unreachable ? ` (${unreachable}; trying again)` : ''}`;
    kind = 'busy';
  } else if (c?.state === 'connected' && cur.state === 'ok') {
    status = `Connected ${a.name}.`;
    kind = 'ok';
  } else if (c?.state === 'failed') {
    status = `Sign-in failed: ${c.error ?? 'no reason given'}`;
    kind = 'fail';
  }
  const connected = cur.state !== 'not connected';
  const verb = connected ? 'Reconnect' : 'Connect';

  return (
    <li class="account-row">
      <strong>{a.name}</strong>
      <span class="small muted">{a.provider}</span>
      <span class={cur.state === 'ok' ? 'tag' : 'tag warn'}>{cur.state}</span>
      {cur.state !== 'ok' && <span class="mono small">hestia accounts connect {a.name}</span>}
      {cur.detail && <span class="small muted">{cur.detail}</span>}
      <div class={`account-connect account-connect-${kind}`}>
        <div class="account-actions">
          {/* While a sign-in waits, the button opens its page again (the
              daemon answers the same address): the tab may have been closed,
              or this page reloaded. */}
          <button
            class="btn small primary"
            type="button"
            onClick={() => void connect()}
            disabled={busy}
            aria-label={waiting ? `Open the sign-in page for ${a.name} again` : `${verb} ${a.name}`}
          >
            {waiting ? 'Open sign-in page' : verb}
          </button>
          {(connected || waiting) && (
            <button
              class="btn small"
              type="button"
              onClick={() => void disconnect()}
              disabled={busy}
              aria-label={waiting && !connected ? `Cancel the sign-in of ${a.name}` : `Disconnect ${a.name}`}
            >
              {waiting && !connected ? 'Cancel' : 'Disconnect'}
            </button>
          )}
        </div>
        <span class="account-connect-result small" role="status" aria-live="polite">
          {status}
          {waiting && authURL && (
            <>
              {' '}
              <a href={authURL} target="_blank" rel="noopener noreferrer">
                Open the sign-in page
              </a>
            </>
          )}
          {!busy && note?.manageURL && (
            <>
              {' '}
              To remove Hestia's access there too, visit{' '}
              <a href={note.manageURL} target="_blank" rel="noopener noreferrer">
                {note.manageURL}
              </a>
              .
            </>
          )}
        </span>
      </div>
    </li>
  );
}
