// First-run setup: the shapes of /api/setup and the pure helpers the page
// uses (preset filling, field lists), kept apart so unit tests need no DOM.
export interface MailPreset {
  id: string;
  name: string;
  imap_host: string;
  imap_port: number;
  imap_security: string;
  smtp_host: string;
  smtp_port: number;
  smtp_security: string;
  save_sent: boolean;
  password_help: string;
  /** The OAuth provider the service signs in with (google, microsoft);
   * absent where only a password works. */
  oauth_provider?: string;
  oauth_scopes?: string[];
  oauth_help?: string;
}
export interface DAVPreset {
  id: string;
  name: string;
  caldav_url: string;
  /** EMAIL stands for the account's address. */
  carddav_url: string;
  password_help: string;
  oauth_provider?: string;
  oauth_help?: string;
}
export interface SetupStatus {
  needed: boolean;
  model_ready: boolean;
  dismissed: boolean;
  steps: string[];
  mail_presets: MailPreset[];
  dav_presets: DAVPreset[];
  secrets_dir: string;
  configured: Record<string, boolean>;
}
export type StepInput = Record<string, string | number | boolean | string[] | undefined>;
export interface StepResult {
  ok: boolean;
  part?: string;
  error?: string;
  models?: string[];
  mailboxes?: number;
  bot?: string;
  /** An OAuth step saved untested: the command that signs in, and why. */
  connect?: string;
  note?: string;
  tested?: boolean;
}

export const STEP_TITLES: Record<string, string> = {
  model: 'Model',
  mail: 'Mail',
  calendar: 'Calendar',
  contacts: 'Contacts',
  files: 'Documents and file roots',
  telegram: 'Telegram',
};

/** The OAuth fields a form drops when it goes back to a password. */
const oauthKeys = ['auth', 'oauth_provider', 'oauth_account', 'client_id', 'client_secret', 'tenant'];

/** The form signing in with provider's OAuth (or, with no provider, with a
 * password again). */
export function setOAuth(form: StepInput, provider: string | undefined): StepInput {
  const out = { ...form };
  for (const k of oauthKeys) delete out[k];
  if (!provider) return out;
  delete out.password;
  return { ...out, auth: 'oauth2', oauth_provider: provider };
}

/** Whether the form signs in with OAuth. */
export function usesOAuth(form: StepInput): boolean {
  return form.auth === 'oauth2';
}

/** "Google" or "Microsoft" for a provider id. */
export function providerName(p: string | undefined): string {
  return p === 'microsoft' ? 'Microsoft' : p === 'google' ? 'Google' : (p ?? '');
}

/** The mail form after picking a preset: its hosts, ports and security, and
 * its OAuth sign-in where it has one (the way Microsoft 365 must sign in). */
export function applyMailPreset(form: StepInput, p: MailPreset | undefined): StepInput {
  if (!p) return setOAuth(form, undefined);
  return {
    ...setOAuth(form, p.oauth_provider),
    imap_host: p.imap_host,
    imap_port: p.imap_port,
    imap_security: p.imap_security,
    smtp_host: p.smtp_host,
    smtp_port: p.smtp_port,
    smtp_security: p.smtp_security,
    save_sent: p.save_sent,
  };
}

/** The body a step sends: numbers as numbers, lists split, empties dropped. */
export function stepBody(step: string, form: StepInput): StepInput {
  const out: StepInput = {};
  for (const [k, v] of Object.entries(form)) {
    if (v === '' || v === undefined) continue;
    if ((k.endsWith('_port') || k === 'owner_id') && typeof v === 'string') out[k] = Number(v);
    else if (k === 'file_roots' && typeof v === 'string')
      out[k] = v
        .split(/[,\n]/)
        .map((s) => s.trim())
        .filter(Boolean);
    else out[k] = v;
  }
  if ((step === 'calendar' || step === 'contacts') && typeof out.where === 'string') {
    const w = out.where;
    delete out.where;
    if (/^https?:\/\//.test(w)) out.url = w;
    else out.path = w;
  }
  return out;
}

/** One line saying what a passed test found. */
export function describeResult(r: StepResult): string {
  if (r.connect) return `Not tested yet: run ${r.connect} in a terminal to sign in${r.note?.includes('restart') ? ', then restart Hestia (Settings → Restart now)' : ''}.`;
  if (r.models) return `Connected: ${r.models.length} model${r.models.length === 1 ? '' : 's'}.`;
  if (r.mailboxes !== undefined) return `IMAP login and SMTP AUTH work (${r.mailboxes} mailboxes).`;
  if (r.bot) return `Bot @${r.bot} answers.`;
  return 'Works.';
}
