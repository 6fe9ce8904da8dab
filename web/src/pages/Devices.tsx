// The Devices section of the System page: every paired phone, browser, CLI
// or channel with its scopes and last use, revocation, and pairing a new
// device with a QR code for the one-time link. Self-contained: it talks to
// /api/devices and /api/pair/codes itself and renders nothing else.
import { useEffect, useState } from 'preact/hooks';
import { renderSVG } from 'uqr';
import { ApiError } from '../api/client';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { when } from '../lib/format';
import { Failure } from './common';

export type Device = {
  id: string;
  name: string;
  kind: string;
  scopes: string[];
  created_at: string;
  last_seen_at?: string;
  revoked_at?: string;
  /** Where a device without a token is allowed ("config" for Telegram users). */
  managed?: string;
};

export const SCOPES: { id: string; label: string }[] = [
  { id: 'chat', label: 'Chat' },
  { id: 'approve', label: 'Approve actions' },
  { id: 'read', label: 'Read' },
  { id: 'admin', label: 'Administer' },
];

/** The link a scanned code opens: the one-time pairing page of this
 * daemon — at its LAN address with the certificate's fingerprint when
 * remote access is on (the daemon sends them), else at this page's origin. */
export function pairLink(origin: string, code: string, remote?: { url?: string; fingerprint?: string }): string {
  const base = (remote?.url || origin).replace(/\/$/, '');
  const fp = remote?.url && remote.fingerprint ? `&fp=${remote.fingerprint.replace(/:/g, '')}` : '';
  return `${base}/pair#code=${encodeURIComponent(code)}${fp}`;
}

/** The QR code of a link as an SVG string (uqr, error correction M). */
export function qrSVG(link: string): string {
  return renderSVG(link, { ecc: 'M', border: 2 });
}

export function DevicesPanel() {
  const app = useApp();
  const [devices, setDevices] = useState<Device[] | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [pairing, setPairing] = useState(false);
  const load = () => {
    setErr(null);
    app.client.get<{ devices: Device[] }>('/api/devices').then((r) => setDevices(r.devices ?? []), setErr);
  };
  useEffect(load, []);
  const forbidden = err instanceof ApiError && err.status === 403;

  const revoke = async (d: Device) => {
    if (!confirm(`Revoke “${d.name}”? It loses access at once and has to be paired again.`)) return;
    try {
      await app.client.request('DELETE', `/api/devices/${encodeURIComponent(d.id)}`);
      load();
    } catch (e) {
      setErr(e);
    }
  };

  return (
    <div class="panel devices">
      <div class="page-header">
        <h2>Devices</h2>
        {!forbidden && (
          <button class="btn" onClick={() => setPairing(!pairing)} aria-expanded={pairing}>
            {pairing ? 'Close' : 'Pair a device'}
          </button>
        )}
      </div>
      {pairing && <PairForm onPaired={load} />}
      {forbidden ? (
        <div class="muted small">This device may not manage devices (it needs the admin scope).</div>
      ) : err ? (
        <Failure err={err} retry={load} />
      ) : !devices ? (
        <div class="skeleton" />
      ) : devices.length === 0 ? (
        <div class="muted small">No paired devices yet. This browser uses the machine's own admin token.</div>
      ) : (
        <div class="table-wrap">
          <table class="table devices-table">
            <thead>
              <tr>
                <th>Device</th>
                <th>Scopes</th>
                <th class="hide-phone">Last seen</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {devices.map((d) => (
                <tr class={d.revoked_at ? 'unavailable' : ''} data-device={d.id}>
                  <td>
                    <div>{d.name}</div>
                    <div class="muted small">{d.kind}</div>
                  </td>
                  <td class="small">{d.scopes.join(', ')}</td>
                  <td class="hide-phone small">{when(d.last_seen_at, 'never')}</td>
                  <td>
                    {d.revoked_at ? (
                      <span class="muted small">Revoked {when(d.revoked_at, 'never')}</span>
                    ) : d.managed ? (
                      <span class="muted small" title="Remove it from [telegram] in config.toml to revoke it">
                        Allowed in config.toml
                      </span>
                    ) : (
                      <button class="btn small" onClick={() => revoke(d)} aria-label={`Revoke ${d.name}`}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function PairForm({ onPaired }: { onPaired: () => void }) {
  const app = useApp();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['chat', 'approve', 'read']);
  const [code, setCode] = useState<{ code: string; expires_at: string; url?: string; fingerprint?: string } | null>(null);
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);

  // Refresh the list while a code is shown, so the new device appears
  // once the phone has used it.
  useEffect(() => {
    if (!code) return;
    const t = setInterval(onPaired, 3000);
    return () => clearInterval(t);
  }, [code]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr('');
    try {
      setCode(await app.client.request<{ code: string; expires_at: string; url?: string; fingerprint?: string }>('POST', '/api/pair/codes', { name: name.trim(), scopes }));
    } catch (e) {
      setErr(errText(e));
    } finally {
      setBusy(false);
    }
  };

  if (code) {
    const link = pairLink(location.origin, code.code, code);
    return (
      <div class="pair-qr">
        <div class="qr" role="img" aria-label="QR code of the pairing link" dangerouslySetInnerHTML={{ __html: qrSVG(link) }} />
        <div>
          <p>Scan this code with the phone's camera, or open the link on the device. It works once, until {new Date(code.expires_at).toLocaleTimeString()}.</p>
          <p class="mono small pair-link">{link}</p>
          <p>
            Code: <strong class="mono pair-code">{code.code}</strong>
          </p>
          <button class="btn small" onClick={() => setCode(null)}>
            Pair another
          </button>
        </div>
      </div>
    );
  }
  return (
    <form class="pair-form" onSubmit={submit}>
      <label class="field">
        <span>Name</span>
        <input value={name} placeholder="My phone" maxLength={80} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </label>
      <fieldset class="field">
        <legend>What it may do</legend>
        {SCOPES.map((s) => (
          <label class="check">
            <input
              type="checkbox"
              checked={scopes.includes(s.id)}
              onChange={(e) => {
                const on = (e.target as HTMLInputElement).checked;
                setScopes(on ? [...scopes, s.id] : scopes.filter((x) => x !== s.id));
              }}
            />{' '}
            {s.label}
          </label>
        ))}
      </fieldset>
      {err && (
        <div class="field-err" role="alert">
          {err}
        </div>
      )}
      <button class="btn" type="submit" disabled={busy || scopes.length === 0}>
        Show pairing code
      </button>
    </form>
  );
}
