// The Settings page: what a user sets up in the first hour, written to
// config.toml by the daemon (comments kept) and validated exactly as
// startup validates it, so a bad value shows the CLI's own error.
import { navigate } from '../router';
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { Check, Pencil, Refresh, Trash } from '../components/icons';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import {
  budgetChanges,
  MASK,
  splitList,
  useLocalChanges,
  type Budget,
  type LocalServer,
  type SettingsView,
  mailEditChange,
  mailForm,
  type MailAccountView,
  type MailForm,
} from '../lib/settings';
import { Failure, PageHeader } from './common';
import { Approvals } from './settings/Approvals';
import { Sources } from './settings/Sources';
import { EnvNote, SaveRow, Section, useSaver, type Save } from './settings/parts';
import '../styles/settings.css';

export function SettingsPage() {
  const app = useApp();
  const [view, setView] = useState<SettingsView | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const load = () => {
    setErr(null);
    app.client.settings().then(setView, setErr);
  };
  useEffect(load, []);

  /** Saves changes; returns the daemon's error text, or null when saved. */
  const save: Save = async (changes) => {
    try {
      const r = await app.client.saveSettings(changes);
      setView(r.settings);
      setSaved(r.settings.file);
      // A model set up here applies at once: the chat's banner re-checks.
      void app.checkModel();
      app.toast('success', r.applied_live?.length ? `Saved to config.toml and applied now: ${r.applied_live.join(', ')}.` : 'Saved to config.toml.');
      return null;
    } catch (e) {
      if (e instanceof ApiError && e.status === 400) return e.message;
      app.error(e);
      return errText(e);
    }
  };

  return (
    <div class="page settings-page">
      <PageHeader title="Settings" subtitle={view ? `Saved in ${view.file}` : 'Saved in config.toml'}>
        <a class="btn" href="/setup" onClick={(e) => (e.preventDefault(), navigate('/setup'))}>
          Run setup
        </a>
        <button class="btn" onClick={load}>
          <Refresh size={16} /> Reload
        </button>
      </PageHeader>
      {err ? (
        <Failure err={err} retry={load} />
      ) : !view ? (
        <div class="skeleton tall" />
      ) : (
        <>
          {!view.model_ready && (
            <div class="callout warn" role="status">
              <span>
                <strong>No model is configured yet.</strong> Pick a local server below, add a provider, or start Hestia with <code>HESTIA_LLM_BASE_URL</code>, <code>HESTIA_LLM_MODEL</code> (and <code>HESTIA_LLM_API_KEY</code>) set.
              </span>
            </div>
          )}
          <p class="muted small live-note">
            Applied at once when saved: model endpoints, providers and chat tiers, the auto-approve threshold and budgets. Need a restart: file
            roots, mail accounts, the agent's tier, the embedding and speech tiers.
          </p>
          {saved && view.pending_restart.length > 0 && (
            <div class="callout warn restart-note" role="status">
              <span>
                Saved. The running daemon still uses its old values for <strong>{view.pending_restart.join(', ')}</strong>: restart Hestia to apply them.
              </span>
              <RestartButton
                done={() => {
                  setSaved(null);
                  load();
                }}
              />
            </div>
          )}
          <LocalModels view={view} save={save} />
          <Models view={view} save={save} />
          <FileRoots view={view} save={save} />
          <Approvals view={view} save={save} />
          <Budgets view={view} save={save} />
          <MailAccounts view={view} save={save} />
          <Sources view={view} />
        </>
      )}
    </div>
  );
}

/** Restarts the daemon (POST /api/system/restart: it re-executes itself)
 * and waits until a new process answers, then calls done. */
function RestartButton({ done }: { done: () => void }) {
  const app = useApp();
  const [busy, setBusy] = useState(false);
  const restart = async () => {
    setBusy(true);
    try {
      const r = await app.client.request<{ started_at: string }>('POST', '/api/system/restart', {});
      const before = Date.parse(r.started_at);
      for (const end = Date.now() + 60_000; Date.now() < end; ) {
        await new Promise((ok) => setTimeout(ok, 500));
        try {
          const s = await app.client.get<{ started_at: string }>('/api/system');
          if (Date.parse(s.started_at) > before) {
            app.toast('success', 'Hestia restarted: the saved settings apply now.');
            done();
            return;
          }
        } catch {
          // Still shutting down or starting: ask again.
        }
      }
      app.toast('error', 'Hestia did not answer within a minute of the restart: see `hestia service logs` or its log.');
    } catch (e) {
      app.error(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button class="btn" onClick={() => void restart()} disabled={busy}>
      <Refresh size={16} /> {busy ? 'Restarting…' : 'Restart now'}
    </button>
  );
}

function LocalModels({ view, save }: { view: SettingsView; save: Save }) {
  const app = useApp();
  const [found, setFound] = useState<LocalServer[] | null>(null);
  const [looked, setLooked] = useState<LocalServer[]>([]);
  const [busy, setBusy] = useState(false);
  const s = useSaver(save);
  const look = async () => {
    setBusy(true);
    try {
      const r = await app.client.localModels();
      setFound(r.found);
      setLooked(r.looked_at);
    } catch (e) {
      app.error(e);
    }
    setBusy(false);
  };
  useEffect(() => void look(), []);
  return (
    <Section id="s-local" title="Local models" hint="Ollama, llama.cpp and LM Studio on their default ports on this machine. Nothing leaves the machine when you use one.">
      {found === null ? (
        <div class="muted small">Looking…</div>
      ) : found.length === 0 ? (
        <div class="muted small">
          None found at {looked.map((c) => c.base_url).join(', ')}.{' '}
          <button class="btn small" disabled={busy} onClick={look}>
            Look again
          </button>
        </div>
      ) : (
        <ul class="local-list">
          {found.map((f) => (
            <li key={f.name}>
              <div>
                <strong>{f.product}</strong> <span class="muted small mono">{f.base_url}</span>
              </div>
              <div class="chips">
                {(f.models ?? []).length === 0 && <span class="muted small">It lists no models yet (pull one first).</span>}
                {(f.models ?? []).map((m) => (
                  <button
                    class="btn small chip"
                    key={m}
                    title={`Use ${m} for chat (${view.agent_tier})`}
                    disabled={s.busy}
                    onClick={() => void s.run(useLocalChanges(f, m, view.agent_tier))}
                  >
                    Use {m}
                  </button>
                ))}
              </div>
            </li>
          ))}
        </ul>
      )}
      {s.error && (
        <div class="callout error" role="alert">
          <span>{s.error}</span>
        </div>
      )}
    </Section>
  );
}

function TestResult({ r }: { r: { ok: boolean; error?: string; models: string[] } | null }) {
  if (!r) return null;
  if (!r.ok)
    return (
      <div class="callout error test-result" role="alert">
        <span>{r.error}</span>
      </div>
    );
  return (
    <div class="callout ok test-result" role="status">
      <Check size={15} />
      <span>
        Connected. {r.models.length} model{r.models.length === 1 ? '' : 's'}: <span class="mono small">{r.models.slice(0, 12).join(', ')}{r.models.length > 12 ? '…' : ''}</span>
      </span>
    </div>
  );
}

function Models({ view, save }: { view: SettingsView; save: Save }) {
  const app = useApp();
  const [base, setBase] = useState(view.llm.base_url);
  const [model, setModel] = useState(view.llm.model);
  const [key, setKey] = useState(view.llm.api_key_set ? MASK : '');
  const [test, setTest] = useState<{ ok: boolean; error?: string; models: string[] } | null>(null);
  const [tiers, setTiers] = useState<Record<string, string>>(() => Object.fromEntries(view.tier_names.map((t) => [t, (view.tiers[t] ?? []).join(', ')])));
  const [np, setNp] = useState({ name: '', kind: 'openai', base_url: '', api_key: '' });
  const [ptest, setPtest] = useState<Record<string, { ok: boolean; error?: string; models: string[] }>>({});
  const flat = useSaver(save);
  const tierSave = useSaver(save);
  const prov = useSaver(save);
  const runTest = async (body: Parameters<typeof app.client.testProvider>[0], set: (r: { ok: boolean; error?: string; models: string[] }) => void) => {
    try {
      set(await app.client.testProvider(body));
    } catch (e) {
      set({ ok: false, error: errText(e), models: [] });
    }
  };
  return (
    <Section id="s-models" title="Model providers and tiers" hint={`Chat uses ${view.agent_tier}. A tier lists provider/model targets, tried in order.`}>
      <h3>Default endpoint (OpenAI-compatible)</h3>
      <EnvNote view={view} keys={['llm.base_url', 'llm.model', 'llm.api_key']} />
      <div class="form-grid">
        <label>
          Base URL
          <input value={base} onInput={(e) => setBase((e.target as HTMLInputElement).value)} placeholder="http://127.0.0.1:11434/v1" />
        </label>
        <label>
          Model
          <input value={model} onInput={(e) => setModel((e.target as HTMLInputElement).value)} placeholder="qwen3:4b" list="known-models" />
        </label>
        <label>
          API key
          <input type="password" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} placeholder="not needed for local servers" autocomplete="off" />
        </label>
      </div>
      <datalist id="known-models">
        {(test?.models ?? []).map((m) => (
          <option value={m} key={m} />
        ))}
      </datalist>
      <div class="row-actions">
        <button class="btn" onClick={() => void runTest({ provider: 'default', base_url: base, api_key: key }, setTest)}>
          Test connection
        </button>
        <SaveRow
          error={flat.error}
          busy={flat.busy}
          onSave={() =>
            void flat.run([
              base.trim() ? { key: 'llm.base_url', value: base.trim() } : { key: 'llm.base_url', delete: true },
              model.trim() ? { key: 'llm.model', value: model.trim() } : { key: 'llm.model', delete: true },
              key === MASK ? { key: 'llm.api_key', value: MASK } : key ? { key: 'llm.api_key', value: key } : { key: 'llm.api_key', delete: true },
            ])
          }
        />
      </div>
      <TestResult r={test} />

      <h3>Providers</h3>
      {view.providers.length === 0 && <div class="muted small">No named providers.</div>}
      <ul class="provider-list">
        {view.providers.map((p) => (
          <li key={p.name}>
            <div class="grow">
              <strong>{p.name}</strong> <span class="tag">{p.kind}</span> <span class="mono small muted">{p.base_url || 'https://api.anthropic.com/v1'}</span>{' '}
              {p.api_key_set && <span class="tag">key set</span>}
              <TestResult r={ptest[p.name] ?? null} />
            </div>
            <button class="btn small" onClick={() => void runTest({ provider: p.name }, (r) => setPtest((x) => ({ ...x, [p.name]: r })))}>
              Test
            </button>
            <button class="icon-btn small danger-hover" aria-label={`Remove provider ${p.name}`} onClick={() => void prov.run([{ key: `llm.providers.${p.name}`, delete: true }])}>
              <Trash size={15} />
            </button>
          </li>
        ))}
      </ul>
      <div class="form-grid add-provider">
        <label>
          Name
          <input value={np.name} onInput={(e) => setNp({ ...np, name: (e.target as HTMLInputElement).value })} placeholder="openrouter" />
        </label>
        <label>
          Kind
          <select value={np.kind} onChange={(e) => setNp({ ...np, kind: (e.target as HTMLSelectElement).value })}>
            <option value="openai">OpenAI-compatible</option>
            <option value="anthropic">Anthropic</option>
          </select>
        </label>
        <label>
          Base URL
          <input value={np.base_url} onInput={(e) => setNp({ ...np, base_url: (e.target as HTMLInputElement).value })} placeholder="https://…/v1" />
        </label>
        <label>
          API key
          <input type="password" autocomplete="off" value={np.api_key} onInput={(e) => setNp({ ...np, api_key: (e.target as HTMLInputElement).value })} />
        </label>
      </div>
      <div class="row-actions">
        <button class="btn" onClick={() => void runTest({ kind: np.kind, base_url: np.base_url, api_key: np.api_key }, (r) => setPtest((x) => ({ ...x, __new: r })))}>
          Test connection
        </button>
        <SaveRow
          label="Add provider"
          error={prov.error}
          busy={prov.busy}
          onSave={async () => {
            if (!np.name.trim()) return prov.setError('Give the provider a name.');
            const ok = await prov.run([{ key: `llm.providers.${np.name.trim()}`, value: { kind: np.kind, base_url: np.base_url.trim(), api_key: np.api_key } }]);
            if (ok) setNp({ name: '', kind: 'openai', base_url: '', api_key: '' });
          }}
        />
      </div>
      <TestResult r={ptest.__new ?? null} />

      <h3>Tiers</h3>
      <div class="form-grid tiers">
        {view.tier_names.map((t) => (
          <label key={t}>
            {t}
            {t === view.agent_tier ? ' (chat)' : ''}
            <input value={tiers[t]} onInput={(e) => setTiers({ ...tiers, [t]: (e.target as HTMLInputElement).value })} placeholder={t === 'local-embed' ? 'local (built-in)' : 'provider/model, …'} />
          </label>
        ))}
      </div>
      <SaveRow error={tierSave.error} busy={tierSave.busy} onSave={() => void tierSave.run(view.tier_names.map((t) => ({ key: `llm.tiers.${t}`, value: splitList(tiers[t] ?? '') })))} label="Save tiers" />
    </Section>
  );
}

function FileRoots({ view, save }: { view: SettingsView; save: Save }) {
  const [roots, setRoots] = useState(view.file_roots.join('\n'));
  const s = useSaver(save);
  return (
    <Section id="s-files" title="Folders Hestia may read and write" hint={`The file tools work only inside these folders (one per line, absolute or starting with ~/). Empty means ${view.file_roots_default}. Secrets such as ~/.ssh stay refused everywhere.`}>
      <EnvNote view={view} keys={['agent.file_roots']} />
      <textarea aria-label="Allowed folders" rows={3} class="mono" value={roots} onInput={(e) => setRoots((e.target as HTMLTextAreaElement).value)} placeholder="~/notes&#10;~/Documents" />
      <SaveRow error={s.error} busy={s.busy} onSave={() => void s.run([{ key: 'agent.file_roots', value: splitList(roots) }])} />
    </Section>
  );
}

function Budgets({ view, save }: { view: SettingsView; save: Save }) {
  const b = view.budget;
  const str = (n: number) => (n ? String(n) : '');
  const [form, setForm] = useState<Record<keyof Budget, string>>({
    daily_cost_usd: str(b.daily_cost_usd),
    monthly_cost_usd: str(b.monthly_cost_usd),
    daily_tokens: str(b.daily_tokens),
    monthly_tokens: str(b.monthly_tokens),
    warn_percent: str(b.warn_percent),
  });
  const s = useSaver(save);
  const field = (k: keyof Budget, label: string, ph: string) => (
    <label>
      {label}
      <input inputMode="decimal" value={form[k]} onInput={(e) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value })} placeholder={ph} />
    </label>
  );
  return (
    <Section id="s-budget" title="Budgets" hint="Caps on billable model calls per day and month. Empty means no cap. Local and offline work is never counted.">
      <div class="form-grid">
        {field('daily_cost_usd', 'Daily cost (USD)', 'no cap')}
        {field('monthly_cost_usd', 'Monthly cost (USD)', 'no cap')}
        {field('daily_tokens', 'Daily tokens', 'no cap')}
        {field('monthly_tokens', 'Monthly tokens', 'no cap')}
        {field('warn_percent', 'Warn at (%)', '80')}
      </div>
      <SaveRow error={s.error} busy={s.busy} onSave={() => void s.run(budgetChanges(form).error ? { error: budgetChanges(form).error! } : budgetChanges(form).changes)} />
    </Section>
  );
}

const emptyAccount = { name: '', address: '', username: '', password_env: '', auth: '', oauth_account: '', imap_host: '', imap_port: '993', imap_security: 'tls', smtp_host: '', smtp_port: '465', smtp_security: 'tls' };

/** One account edited in place: only changed fields are sent, so keys this
 * form does not show stay in config.toml; a refused change names the field
 * and leaves the file as it was. */
function MailEdit({ account, save, done }: { account: MailAccountView; save: Save; done: () => void }) {
  const [f, setF] = useState<MailForm>(() => mailForm(account));
  const s = useSaver(save);
  const inp = (k: keyof MailForm, label: string) => (
    <label>
      {label}
      <input value={f[k]} onInput={(e) => setF({ ...f, [k]: (e.target as HTMLInputElement).value })} />
    </label>
  );
  return (
    <form
      class="grow"
      aria-label={`Edit mail account ${account.name}`}
      onSubmit={async (e) => {
        e.preventDefault();
        const c = mailEditChange(account, f);
        if (!c) return done();
        if (await s.run([c])) done();
      }}
    >
      <div class="form-grid">
        {inp('name', 'Name')}
        {inp('address', 'Address')}
        {inp('username', 'Username')}
        {inp('password_env', 'Password variable')}
        {inp('auth', 'Sign-in (password or oauth2)')}
        {inp('oauth_account', 'OAuth account')}
        {inp('imap_host', 'IMAP host')}
        {inp('imap_port', 'IMAP port')}
        {inp('imap_security', 'IMAP security')}
        {inp('smtp_host', 'SMTP host')}
        {inp('smtp_port', 'SMTP port')}
        {inp('smtp_security', 'SMTP security')}
      </div>
      {s.error && (
        <div class="callout error" role="alert">
          <span>{s.error}</span>
        </div>
      )}
      <div class="save-row">
        <button type="button" class="btn" onClick={done}>
          Cancel
        </button>
        <button type="submit" class="btn primary" disabled={s.busy}>
          {s.busy ? 'Saving…' : 'Save changes'}
        </button>
      </div>
    </form>
  );
}

function MailAccounts({ view, save }: { view: SettingsView; save: Save }) {
  const [editing, setEditing] = useState<string | null>(null);
  const [a, setA] = useState(emptyAccount);
  const s = useSaver(save);
  const inp = (k: keyof typeof emptyAccount, label: string, ph = '') => (
    <label>
      {label}
      <input value={a[k]} onInput={(e) => setA({ ...a, [k]: (e.target as HTMLInputElement).value })} placeholder={ph} />
    </label>
  );
  return (
    <Section id="s-mail" title="Mail accounts" hint="IMAP is mirrored into the local store; SMTP is used only for sends you approve. Passwords never go into config.toml: name an environment variable that holds it. Gmail and Microsoft 365 can sign in with OAuth instead (sign-in oauth2 and the OAuth account's name; the setup flow's presets fill both).">
      {view.mail_accounts.length === 0 ? (
        <div class="muted small">No accounts. Local Maildir/mbox folders can be imported with hestia mail import PATH.</div>
      ) : (
        <ul class="provider-list">
          {view.mail_accounts.map((m) =>
            editing === m.name ? (
              <li key={m.name} class="mail-edit">
                <MailEdit account={m} save={save} done={() => setEditing(null)} />
              </li>
            ) : (
            <li key={m.name}>
              <div class="grow">
                <strong>{m.name}</strong> <span class="muted small">{m.address}</span>{' '}
                {m.auth === 'oauth2' && <span class="tag">OAuth: {m.oauth_account}</span>}{' '}
                <span class="mono small muted">
                  {m.imap_host ? `IMAP ${m.imap_host}:${m.imap_port}` : ''} {m.smtp_host ? `SMTP ${m.smtp_host}:${m.smtp_port}` : ''}
                </span>
              </div>
              <button class="icon-btn small" aria-label={`Edit mail account ${m.name}`} title="Edit" onClick={() => setEditing(m.name)}>
                <Pencil size={15} />
              </button>
              <button class="icon-btn small danger-hover" aria-label={`Remove mail account ${m.name}`} onClick={() => void s.run([{ key: 'mail.accounts', value: { name: m.name }, delete: true }])}>
                <Trash size={15} />
              </button>
            </li>
            ),
          )}
        </ul>
      )}
      <h3>Add an account</h3>
      <div class="form-grid">
        {inp('name', 'Name', 'work')}
        {inp('address', 'Address', 'me@example.org')}
        {inp('username', 'Username', 'defaults to the address')}
        {inp('password_env', 'Password variable', 'WORK_MAIL_PASSWORD')}
        {inp('auth', 'Sign-in', 'password, or oauth2 for Gmail / Microsoft 365')}
        {inp('oauth_account', 'OAuth account', 'an [[oauth.accounts]] name')}
        {inp('imap_host', 'IMAP host', 'imap.example.org')}
        {inp('imap_port', 'IMAP port')}
        {inp('smtp_host', 'SMTP host', 'smtp.example.org')}
        {inp('smtp_port', 'SMTP port')}
      </div>
      <SaveRow
        label="Add account"
        error={s.error}
        busy={s.busy}
        onSave={async () => {
          const v: Record<string, unknown> = {};
          for (const [k, x] of Object.entries(a)) {
            const t = x.trim();
            if (!t) continue;
            v[k] = k.endsWith('_port') ? Number(t) : t;
          }
          if (!a.imap_host.trim()) delete v.imap_port, delete v.imap_security;
          if (!a.smtp_host.trim()) delete v.smtp_port, delete v.smtp_security;
          if (await s.run([{ key: 'mail.accounts', value: v }])) setA(emptyAccount);
        }}
      />
    </Section>
  );
}
