// Pairing. A browser on the daemon's machine asks to pair and the user
// types the one-time code Hestia prints in its terminal (or that
// `hestia pair --local` shows): being on the same machine is no proof, since
// any program there can pretend to be this page. Any other browser opens the
// link `hestia pair` prints, or types its code, or pastes the token.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, type LocalPairRequest } from '../api/client';
import { Flame } from '../components/icons';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { navigate } from '../router';

type Phase = 'trying' | 'local' | 'manual';

// A code from `hestia pair` (10 characters of this alphabet); anything else
// typed in the manual form is taken for a token.
const DEVICE_CODE = /^[A-HJ-NP-Z2-9]{10}$/;

export function PairPage({ code }: { code?: string }) {
  const app = useApp();
  const [phase, setPhase] = useState<Phase>('trying');
  const [local, setLocal] = useState<LocalPairRequest | null>(null);
  const [gone, setGone] = useState(false); // the local request was used up or expired
  const [typed, setTyped] = useState('');
  const [token, setToken] = useState('');
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);

  const done = () => navigate(location.pathname === '/pair' ? '/' : location.pathname, true);

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
        const req = await app.startLocalPairing();
        if (stop) return;
        if (req) {
          setLocal(req);
          setPhase('local');
          return;
        }
      } catch (e) {
        if (!stop) setErr(errText(e));
      }
      if (!stop) setPhase('manual');
    })();
    return () => {
      stop = true;
    };
  }, [code]);

  // The request expires on the daemon; say so here rather than after a try.
  useEffect(() => {
    if (!local) return;
    const left = Date.parse(local.expires_at) - Date.now();
    const t = setTimeout(() => setGone(true), Math.max(0, left));
    return () => clearTimeout(t);
  }, [local]);

  const newCode = async () => {
    setBusy(true);
    setErr('');
    setTyped('');
    try {
      const req = await app.restartLocalPairing();
      if (req) {
        setLocal(req);
        setGone(false);
      } else {
        setPhase('manual');
      }
    } catch (e) {
      setErr(errText(e));
    } finally {
      setBusy(false);
    }
  };

  const submitCode = async (e: Event) => {
    e.preventDefault();
    if (!local) return;
    setBusy(true);
    setErr('');
    try {
      await app.pairLocalWithCode(local, typed);
      done();
    } catch (e) {
      setErr(errText(e));
      if (e instanceof ApiError && (e.code === 'pairing_request_void' || e.code === 'pairing_request_unknown')) setGone(true);
    } finally {
      setBusy(false);
    }
  };

  const submitToken = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr('');
    try {
      const v = token.trim();
      const asCode = v.replace(/[\s-]/g, '').toUpperCase();
      if (DEVICE_CODE.test(asCode)) await app.pairWithCode(asCode);
      else await app.pairWithToken(v);
      done();
    } catch (e) {
      setErr(errText(e));
    } finally {
      setBusy(false);
    }
  };

  const manual = () => {
    setErr('');
    setPhase('manual');
  };

  return (
    <div class="pair">
      <div class="pair-card">
        <div class="welcome-mark">
          <Flame size={30} />
        </div>
        <h1>Connect to Hestia</h1>
        {phase === 'trying' && (
          <p class="muted" role="status">
            {code ? 'Pairing with your code…' : 'Asking Hestia to pair this browser…'}
          </p>
        )}
        {phase === 'local' && local && (
          <>
            <p class="muted">
              To confirm this browser is yours, type the code Hestia just printed in the terminal where it runs. If it runs
              in the background, <code>hestia pair --local</code> shows the code.
            </p>
            <form onSubmit={submitCode} class="pair-form">
              <label for="pair-code">Pairing code</label>
              <input
                id="pair-code"
                class="pair-code"
                autoComplete="one-time-code"
                autoCapitalize="characters"
                spellcheck={false}
                maxLength={local.code_length + 4}
                placeholder={'ABCD-EFGH'.slice(0, local.code_length + 1)}
                disabled={gone}
                value={typed}
                onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
              />
              {err && (
                <div class="field-err" role="alert">
                  {err}
                </div>
              )}
              {gone ? (
                <button class="btn primary wide" type="button" onClick={newCode} disabled={busy}>
                  {busy ? 'Asking…' : 'Get a new code'}
                </button>
              ) : (
                <button class="btn primary wide" type="submit" disabled={busy || !typed.trim()}>
                  {busy ? 'Checking…' : 'Pair this browser'}
                </button>
              )}
            </form>
            <p class="muted small pair-alt">
              {gone ? 'That code can no longer be used. ' : `The code works once, for this page, for ${Math.round(local.ttl_seconds / 60)} minutes. `}
              <button type="button" class="pair-switch" onClick={manual}>
                Use a token or a code from <code>hestia pair</code> instead
              </button>
            </p>
          </>
        )}
        {phase === 'manual' && (
          <>
            <p class="muted">
              This browser is not paired yet. On the computer running Hestia, run <code>hestia pair</code> and open the link
              it shows, or enter its code or the access token here.
            </p>
            <form onSubmit={submitToken} class="pair-form">
              <label for="token">Access token or pairing code</label>
              <input
                id="token"
                type="password"
                autoComplete="off"
                spellcheck={false}
                placeholder="Paste the token or type the code"
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
            {local && !gone && (
              <p class="muted small pair-alt">
                <button type="button" class="pair-switch" onClick={() => setPhase('local')}>
                  Back to the code from Hestia's terminal
                </button>
              </p>
            )}
            <p class="muted small">The token is kept in this browser only. Anyone with it can use your assistant, so do not share it.</p>
          </>
        )}
      </div>
    </div>
  );
}
