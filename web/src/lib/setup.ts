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
}
export interface DAVPreset {
  id: string;
  name: string;
  caldav_url: string;
  carddav_url: string;
  password_help: string;
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
}

export const STEP_TITLES: Record<string, string> = {
  model: 'Model',
  mail: 'Mail',
  calendar: 'Calendar',
  contacts: 'Contacts',
  files: 'Documents and file roots',
  telegram: 'Telegram',
};

/** The mail form after picking a preset: its hosts, ports and security. */
export function applyMailPreset(form: StepInput, p: MailPreset | undefined): StepInput {
  if (!p) return { ...form };
  return {
    ...form,
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
  if (r.models) return `Connected: ${r.models.length} model${r.models.length === 1 ? '' : 's'}.`;
  if (r.mailboxes !== undefined) return `IMAP login and SMTP AUTH work (${r.mailboxes} mailboxes).`;
  if (r.bot) return `Bot @${r.bot} answers.`;
  return 'Works.';
}
