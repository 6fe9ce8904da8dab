// Shapes of /api/settings (internal/settings) and the policy rule API, and
// small helpers the Settings page uses.

export interface Budget {
  daily_cost_usd: number;
  monthly_cost_usd: number;
  daily_tokens: number;
  monthly_tokens: number;
  warn_percent: number;
}

export interface ProviderView {
  name: string;
  kind: string;
  base_url: string;
  api_key_set: boolean;
  max_tokens?: number;
}

export interface MailAccountView {
  name: string;
  address: string;
  username?: string;
  password_env?: string;
  password_file?: string;
  /** "oauth2" when the account signs in with oauth_account's token. */
  auth?: string;
  oauth_account?: string;
  imap_host?: string;
  imap_port?: number;
  imap_security?: string;
  smtp_host?: string;
  smtp_port?: number;
  smtp_security?: string;
}

export interface SettingsView {
  file: string;
  file_exists: boolean;
  model_ready: boolean;
  /** Which speech tiers the daemon has (older daemons: absent). */
  speech?: { stt: boolean; tts: boolean };
  llm: { base_url: string; model: string; api_key_set: boolean };
  providers: ProviderView[];
  tiers: Record<string, string[]>;
  tier_names: string[];
  agent_tier: string;
  file_roots: string[];
  file_roots_default: string;
  auto_approve: string;
  budget: Budget;
  mail_accounts: MailAccountView[];
  env_overrides: Record<string, string>;
  pending_restart: string[];
  /** The read-only sections (older daemons: absent). */
  sources?: SourcesView;
}

/** A vdir folder of calendars or contacts. */
export interface FolderView {
  name: string;
  path: string;
  read_only: boolean;
}

/** A CalDAV/CardDAV login: no password, only whether one is set. */
export interface DAVAccountView {
  name: string;
  url: string;
  username?: string;
  read_only: boolean;
  password_set: boolean;
  password_file_set: boolean;
  /** The OAuth sign-in whose bearer token the account uses. */
  oauth_account?: string;
}

export interface MailSourceView {
  path: string;
  account?: string;
  from_config?: boolean;
}

/** What GET /api/settings lists read-only (no secrets). */
export interface ChannelView {
  name: string;
  enabled: boolean;
  owners: string[];
  contacts: string[];
}

/** A sign-in the web app started in the daemon (POST /api/accounts/NAME/connect). */
export interface AccountAttempt {
  account: string;
  state: 'waiting' | 'connected' | 'failed';
  error?: string;
  started_at: string;
  deadline: string;
  finished_at?: string;
}

export interface AccountView {
  name: string;
  provider: string;
  /** "ok", "not connected" or "reconnect needed". */
  state: string;
  detail?: string;
  expiry?: string;
  /** The sign-in started from this page, if any; absent from older daemons. */
  connect?: AccountAttempt;
}

/** GET /api/accounts/NAME: the account's state without any token. */
export interface AccountStatus {
  account: string;
  provider: string;
  scopes: string[];
  state: string;
  detail?: string;
  expiry?: string;
  connected_at?: string;
  refreshed_at?: string;
  connect?: AccountAttempt;
}

/** POST /api/accounts/NAME/connect: the provider's page to open. */
export interface AccountConnectAnswer {
  auth_url: string;
  account: AccountStatus;
}

/** POST /api/accounts/NAME/disconnect. */
export interface AccountDisconnectAnswer {
  revoked: boolean;
  cancelled: boolean;
  revoke_error?: string;
  manage_url?: string;
  account: AccountStatus;
}

export interface SourcesView {
  calendars: FolderView[];
  caldav: DAVAccountView[];
  contacts: FolderView[];
  carddav: DAVAccountView[];
  telegram: { enabled: boolean; token_file_set: boolean; owner_id: number; contacts: string[] };
  /** Messaging channels of [channels.*]; absent from older daemons. */
  channels?: ChannelView[];
  /** OAuth sign-ins of [[oauth.accounts]]; absent from older daemons. */
  accounts?: AccountView[];
  accounts_error?: string;
  mcp_servers: { name: string; command?: string; url?: string; disabled: boolean }[];
  mail_sources: MailSourceView[];
  mail_sources_error?: string;
}

export interface SettingsChange {
  key: string;
  value?: unknown;
  delete?: boolean;
  /** For mail.accounts: the name of the account edited in place. */
  edit?: string;
}

/** The fields of a mail account the page edits. */
export const mailFields = ['name', 'address', 'username', 'password_env', 'auth', 'oauth_account', 'imap_host', 'imap_port', 'imap_security', 'smtp_host', 'smtp_port', 'smtp_security'] as const;
export type MailForm = Record<(typeof mailFields)[number], string>;

export function mailForm(m: MailAccountView): MailForm {
  const f = {} as MailForm;
  for (const k of mailFields) f[k] = m[k] === undefined || m[k] === null ? '' : String(m[k]);
  return f;
}

/** An in-place edit of account orig: only the fields that changed are sent
 * (an emptied field is removed), so keys the page does not show and the
 * file's comments stay as they are. Ports that are not whole numbers are
 * sent as typed, for the daemon to refuse with the field's name. */
export function mailEditChange(orig: MailAccountView, form: MailForm): SettingsChange | null {
  const before = mailForm(orig);
  const value: Record<string, unknown> = {};
  for (const k of mailFields) {
    const t = form[k].trim();
    if (t === before[k]) continue;
    value[k] = k.endsWith('_port') && /^\d+$/.test(t) ? Number(t) : t;
  }
  if (Object.keys(value).length === 0) return null;
  return { key: 'mail.accounts', edit: orig.name, value };
}

export interface LocalServer {
  name: string;
  product: string;
  base_url: string;
  models?: string[];
}

export interface PolicyRule {
  id: string;
  tool: string;
  pattern: string;
  path_scope: string;
  decision: 'allow' | 'gate' | 'deny';
  priority: number;
  note: string;
}

/** The mask the daemon shows for a stored secret; sending it back keeps it. */
export const MASK = '********';

/** "a, b ,, c" → ["a", "b", "c"] */
export function splitList(s: string): string[] {
  return s
    .split(/[,\n]/)
    .map((x) => x.trim())
    .filter(Boolean);
}

/**
 * The changes that make a detected local server the chat model: a provider
 * named after it and the agent's tier mapped to provider/model.
 */
export function useLocalChanges(server: LocalServer, model: string, agentTier: string): SettingsChange[] {
  return [
    { key: `llm.providers.${server.name}`, value: { kind: 'openai', base_url: server.base_url } },
    { key: `llm.tiers.${agentTier}`, value: [`${server.name}/${model}`] },
  ];
}

/** Budget form values (strings) → changes; an empty field means no cap (0). */
export function budgetChanges(form: Record<keyof Budget, string>): { changes: SettingsChange[]; error?: string } {
  const changes: SettingsChange[] = [];
  for (const k of Object.keys(form) as (keyof Budget)[]) {
    const raw = form[k].trim();
    const n = raw === '' ? 0 : Number(raw);
    if (!Number.isFinite(n)) return { changes: [], error: `${k.replace(/_/g, ' ')}: “${raw}” is not a number` };
    changes.push({ key: `budget.${k}`, value: n });
  }
  return { changes };
}
