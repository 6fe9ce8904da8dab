// Pairing: a browser on the daemon's machine pairs by itself; any other
// browser pastes the token or opens the link `hestia pair` prints.
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { Flame } from '../components/icons';
import { useApp } from '../context';
import { navigate } from '../router';

export function PairPage({ code }: { code?: string }) {
  const app = useApp();
  const [phase, setPhase] = useState<'trying' | 'manual'>('trying');
  const [token, setToken] = useState('');
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let stop = false;
    (async () => {
      try {
        if (code) {
          // Drop the code from the address bar at once: it is single-use.
          history.replaceState(null, '', '/pair');
          await app.pairWithCode(code);
          if (!stop) navigate('/', true);
          return;
        }
        if (await app.pairLocal()) {
          if (!stop) navigate(location.pathname === '/pair' ? '/' : location.pathname, true);
          return;
        }
      } catch (e) {
        if (!stop) setErr(e instanceof ApiError ? e.message : String(e));
      }
      if (!stop) setPhase('manual');
    })();
    return () => {
      stop = true;
    };
  }, [code]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr('');
    try {
      await app.pairWithToken(token);
      navigate(location.pathname === '/pair' ? '/' : location.pathname, true);
    } catch (e) {
      setErr(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="pair">
      <div class="pair-card">
        <div class="welcome-mark">
          <Flame size={30} />
        </div>
        <h1>Connect to Hestia</h1>
        {phase === 'trying' ? (
          <p class="muted" role="status">
            {code ? 'Pairing with your code…' : 'Checking whether this browser runs on the same machine…'}
          </p>
        ) : (
          <>
            <p class="muted">
              This browser is not paired yet. On the computer running Hestia, run <code>hestia pair</code> and open the link
              it shows, or paste the access token here.
            </p>
            <form onSubmit={submit} class="pair-form">
              <label for="token">Access token</label>
              <input
                id="token"
                type="password"
                autoComplete="off"
                spellcheck={false}
                placeholder="Paste the token"
                value={token}
                onInput={(e) => setToken((e.target as HTMLInputElement).value)}
              />
              {err && (
                <div class="field-err" role="alert">
                  {err}
                </div>
              )}
              <button class="btn primary wide" type="submit" disabled={busy || !token.trim()}>
                {busy ? 'Checking…' : 'Connect'}
              </button>
            </form>
            <p class="muted small">The token is kept in this browser only. Anyone with it can use your assistant, so do not share it.</p>
          </>
        )}
      </div>
    </div>
  );
}
