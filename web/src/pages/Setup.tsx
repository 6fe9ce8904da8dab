// First-run setup: model, mail, calendar, contacts, file roots, Telegram.
// Each step is tested by the daemon before it saves anything; passwords
// and tokens go to owner-only files it names in config.toml.
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { applyMailPreset, describeResult, providerName, setOAuth, STEP_TITLES, stepBody, usesOAuth, type SetupStatus, type StepInput, type StepResult } from '../lib/setup';
import { navigate } from '../router';
import { Failure, PageHeader } from './common';
import '../styles/settings.css';
import '../styles/setup.css';

interface Local {
  name: string;
  product: string;
  base_url: string;
  models: string[];
}

export function SetupPage() {
  const app = useApp();
  const [st, setSt] = useState<SetupStatus | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [step, setStep] = useState(0);
  const [local, setLocal] = useState<Local[] | null>(null);
  useEffect(() => {
    app.client.get<SetupStatus>('/api/setup').then(setSt, setErr);
    app.client.get<{ found: Local[] }>('/api/settings/local-models').then((r) => setLocal(r.found), () => setLocal([]));
  }, []);
  if (err) return <Failure err={err} />;
  if (!st) return <div class="page">Loading…</div>;
  const name = st.steps[step];
  const next = () => (step + 1 < st.steps.length ? setStep(step + 1) : finish());
  const finish = () => {
    void app.checkModel();
    navigate('/', true);
  };
  const skipAll = async () => {
    try {
      await app.client.request('POST', '/api/setup/dismiss');
    } catch (e) {
      app.error(e);
    }
    finish();
  };
  return (
    <div class="page settings-page setup-page">
      <PageHeader title="Set up Hestia" subtitle={`Step ${step + 1} of ${st.steps.length}: ${STEP_TITLES[name]}`}>
        <button class="btn" onClick={skipAll}>
          Skip setup
        </button>
      </PageHeader>
      <ol class="setup-steps" aria-label="Setup steps">
        {st.steps.map((s, i) => (
          <li key={s} aria-current={i === step ? 'step' : undefined} class={i === step ? 'current' : ''}>
            {STEP_TITLES[s]}
            {st.configured[s] ? ' ✓' : ''}
          </li>
        ))}
      </ol>
      <StepForm key={name} step={name} st={st} local={local} onDone={next} />
      <p class="muted">Secrets are stored in owner-only files in {st.secrets_dir}.</p>
    </div>
  );
}

function StepForm({ step, st, local, onDone }: { step: string; st: SetupStatus; local: Local[] | null; onDone: () => void }) {
  const app = useApp();
  const [form, setForm] = useState<StepInput>(() => (step === 'mail' ? { imap_security: 'tls', smtp_security: 'tls', imap_port: 993, smtp_port: 465 } : {}));
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [preset, setPreset] = useState('');
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (step === 'model' && local && local.length && !form.base_url) setForm({ ...form, base_url: local[0].base_url, provider: local[0].name, model: local[0].models[0] ?? '' });
  }, [local]);
  const set = (k: string) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const field = (k: string, label: string, type = 'text', placeholder = '') => (
    <label class="field">
      <span>{label}</span>
      <input type={type} value={(form[k] as string | number | undefined) ?? ''} placeholder={placeholder} onInput={set(k)} autocomplete="off" />
    </label>
  );
  const run = async (save: boolean) => {
    setBusy(true);
    setResult(null);
    try {
      const r = await app.client.request<StepResult>('POST', `/api/setup/${step}${save ? '' : '/test'}`, stepBody(step, form));
      if (!r.ok) setResult({ ok: false, text: r.error ?? 'failed' });
      else if (save && r.connect) {
        // Saved, but the sign-in is the user's to do: keep the command on
        // screen until they move on.
        app.toast('success', `${STEP_TITLES[step]} saved.`);
        setResult({ ok: true, text: `Saved. ${describeResult(r)}` });
        setSaved(true);
      } else if (save) {
        app.toast('success', `${STEP_TITLES[step]} saved. ${describeResult(r)}`);
        onDone();
      } else setResult({ ok: true, text: describeResult(r) });
    } catch (e) {
      setResult({ ok: false, text: e instanceof ApiError ? e.message : errText(e) });
    } finally {
      setBusy(false);
    }
  };
  const mp = st.mail_presets.find((p) => p.id === preset);
  const dav = step === 'calendar' ? 'caldav_url' : 'carddav_url';
  const oauth = usesOAuth(form);
  const provider = form.oauth_provider as string | undefined;
  // The OAuth account's fields: its name, and the client to create it with
  // when config.toml has none by that name.
  const oauthFields = (help: string | undefined) => (
    <div class="setup-oauth" aria-label={`Connect with ${providerName(provider)}`}>
      <h3>Connect with {providerName(provider)}</h3>
      {help && <p class="setup-help">{help}</p>}
      {field('oauth_account', 'OAuth account name', 'text', 'from the name: lower-case letters, digits, - and _')}
      {field('client_id', 'OAuth client id (only for a new OAuth account)', 'text', 'empty: the client built into this Hestia, if any')}
      {provider === 'google' && field('client_secret', 'OAuth client secret (Google)', 'password')}
      {provider === 'microsoft' && field('tenant', 'Tenant (common, organizations, consumers, or your tenant)', 'text', 'common')}
      <p class="muted small">
        After saving, sign in from a terminal on this machine: <code>hestia accounts connect {(form.oauth_account as string) || 'NAME'}</code> opens your browser (add <code>--device</code> without one). The step is tested once the account is connected.
      </p>
    </div>
  );
  return (
    <section class="card setup-step" aria-label={STEP_TITLES[step]}>
      <h2>{STEP_TITLES[step]}</h2>
      {step === 'model' && (
        <>
          <p>{local === null ? 'Looking for Ollama, llama.cpp and LM Studio…' : local.length ? `Found ${local.map((l) => l.product).join(', ')}.` : 'No local model server found; give a hosted provider’s API base URL and key.'}</p>
          {field('base_url', 'API base URL', 'text', 'http://127.0.0.1:11434/v1')}
          <label class="field">
            <span>Kind</span>
            <select value={(form.kind as string) ?? 'openai'} onChange={set('kind')}>
              <option value="openai">OpenAI-compatible</option>
              <option value="anthropic">Anthropic</option>
            </select>
          </label>
          {field('api_key', 'API key (hosted only)', 'password')}
          {field('model', 'Model')}
        </>
      )}
      {step === 'mail' && (
        <>
          <label class="field">
            <span>Provider</span>
            <select
              value={preset}
              onChange={(e) => {
                const id = (e.target as HTMLSelectElement).value;
                setPreset(id);
                setForm(applyMailPreset(form, st.mail_presets.find((p) => p.id === id)));
              }}
            >
              <option value="">Other (type the servers)</option>
              {st.mail_presets.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
          {mp?.oauth_provider && (
            <label class="field">
              <span>Sign in</span>
              <select value={oauth ? 'oauth2' : 'password'} onChange={(e) => setForm(setOAuth(form, (e.target as HTMLSelectElement).value === 'oauth2' ? mp.oauth_provider : undefined))}>
                <option value="oauth2">With {providerName(mp.oauth_provider)} (OAuth)</option>
                <option value="password">With a password</option>
              </select>
            </label>
          )}
          {mp && !oauth && <p class="setup-help">{mp.password_help}</p>}
          {field('address', 'Email address', 'email')}
          {field('username', 'User name (default: the address)')}
          {oauth ? oauthFields(mp?.oauth_help) : field('password', 'Password (app password)', 'password')}
          {field('imap_host', 'IMAP host')}
          {field('imap_port', 'IMAP port', 'number')}
          {field('imap_security', 'IMAP security (tls, starttls, none)')}
          {field('smtp_host', 'SMTP host')}
          {field('smtp_port', 'SMTP port', 'number')}
          {field('smtp_security', 'SMTP security (tls, starttls, none)')}
        </>
      )}
      {(step === 'calendar' || step === 'contacts') && (
        <>
          <p>
            Presets:{' '}
            {st.dav_presets.map((p) => (
              <button key={p.id} class="btn btn-small" type="button" onClick={() => setForm({ ...setOAuth(form, p.oauth_provider), where: p[dav], name: form.name || p.id })}>
                {p.name}
              </button>
            ))}
          </p>
          {field('where', step === 'calendar' ? 'CalDAV URL or local vdir folder' : 'CardDAV URL or local vdir folder')}
          {field('name', 'Name', 'text', step)}
          {oauth ? (
            <>
              {field('username', `Your ${providerName(provider)} address`, 'email')}
              {oauthFields(st.dav_presets.find((p) => p.oauth_provider === provider)?.oauth_help)}
              <button class="btn btn-small" type="button" onClick={() => setForm(setOAuth(form, undefined))}>
                Use a password instead
              </button>
            </>
          ) : (
            <>
              {field('username', 'User name (servers only)')}
              {field('password', 'Password', 'password')}
            </>
          )}
        </>
      )}
      {step === 'files' && field('file_roots', 'Folders Hestia may read and write (comma-separated)', 'text', '~/Documents, ~/notes')}
      {step === 'telegram' && (
        <>
          <p class="setup-help">Create a bot with @BotFather and paste its token; @userinfobot tells you your numeric user id.</p>
          {field('token', 'Bot token', 'password')}
          {field('owner_id', 'Your Telegram user id', 'number')}
        </>
      )}
      {result && (
        <p role={result.ok ? 'status' : 'alert'} class={result.ok ? 'ok' : 'error'}>
          {result.text}
        </p>
      )}
      <div class="row">
        <button class="btn" disabled={busy} onClick={() => run(false)}>
          Test
        </button>
        <button class="btn btn-primary" disabled={busy} onClick={() => run(true)}>
          Test and save
        </button>
        <button class="btn" disabled={busy} onClick={onDone}>
          {saved ? 'Next' : 'Skip this step'}
        </button>
      </div>
    </section>
  );
}
