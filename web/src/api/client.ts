// The HTTP client: one place that attaches the bearer token, turns the
// daemon's error shape into ApiError, and knows which failures are worth a
// Retry button.
import type {
  ChatStatus,
  ApprovalDecision,
  ApprovalRequest,
  AuditEvent,
  BudgetStatus,
  Chat,
  Message,
  ToolInfo,
} from './types';
import type { MailboxCount, MailMessage, MailSearchResult, MailThread } from '../lib/mail';
import type { LocalServer, PolicyRule, SettingsChange, SettingsView } from '../lib/settings';

const TOKEN_KEY = 'hestia.token';

export interface TokenStore {
  get(): string | null;
  set(token: string): void;
  clear(): void;
}

export function localTokenStore(storage: Storage = localStorage): TokenStore {
  return {
    get: () => storage.getItem(TOKEN_KEY),
    set: (t) => storage.setItem(TOKEN_KEY, t),
    clear: () => storage.removeItem(TOKEN_KEY),
  };
}

/** A pending local pairing request (POST /api/pair/local/start). */
export interface LocalPairRequest {
  request: string;
  expires_at: string;
  ttl_seconds: number;
  code_length: number;
  attempts: number;
}

/** An error answer from the daemon, or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** Whether trying the same request again could succeed. */
  get retryable(): boolean {
    return this.status === 0 || this.status >= 500 || this.status === 429 || this.code === 'busy';
  }
}

export type Fetch = typeof fetch;

export interface ClientOptions {
  tokens: TokenStore;
  fetch?: Fetch;
  base?: string;
  /** Called on 401 so the app can go back to pairing. */
  onUnauthorized?: () => void;
}

export class Client {
  readonly tokens: TokenStore;
  private readonly f: Fetch;
  private readonly base: string;
  private readonly onUnauthorized?: () => void;

  constructor(opts: ClientOptions) {
    this.tokens = opts.tokens;
    this.f = opts.fetch ?? ((...a) => fetch(...a));
    this.base = opts.base ?? '';
    this.onUnauthorized = opts.onUnauthorized;
  }

  headers(extra?: HeadersInit): Headers {
    const h = new Headers(extra);
    const t = this.tokens.get();
    if (t) h.set('Authorization', `Bearer ${t}`);
    return h;
  }

  /** Raw authenticated fetch (the event stream uses it). */
  raw(path: string, init: RequestInit = {}): Promise<Response> {
    return this.f(this.base + path, { ...init, headers: this.headers(init.headers) });
  }

  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await this.raw(path, {
        method,
        signal,
        headers: body === undefined ? undefined : { 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      if ((e as Error).name === 'AbortError') throw e;
      throw new ApiError(0, 'network', 'Cannot reach the Hestia daemon. Is it running?');
    }
    if (res.status === 401 && this.onUnauthorized) this.onUnauthorized();
    if (!res.ok) throw await errorFrom(res);
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T>(path: string, signal?: AbortSignal) {
    return this.request<T>('GET', path, undefined, signal);
  }

  // Chats
  listChats(limit = 200) {
    return this.get<{ chats: Chat[] }>(`/api/chats?limit=${limit}`).then((r) => r.chats ?? []);
  }
  getChat(id: string) {
    return this.get<{ chat: Chat; messages: Message[] }>(`/api/chats/${enc(id)}`);
  }
  createChat(title?: string) {
    return this.request<Chat>('POST', '/api/chats', title ? { title } : {});
  }
  renameChat(id: string, title: string) {
    return this.request<Chat>('PATCH', `/api/chats/${enc(id)}`, { title });
  }
  deleteChat(id: string) {
    return this.request<void>('DELETE', `/api/chats/${enc(id)}`);
  }
  exportChat(id: string) {
    return this.get<unknown>(`/api/chats/${enc(id)}/export`);
  }
  /** Sends a message. queue: wait behind the running turn instead of
   * interrupting it; editOf: replace that user message and what followed. */
  sendMessage(id: string, text: string, opts: { queue?: boolean; editOf?: string } = {}) {
    const body: Record<string, unknown> = { text };
    if (opts.queue) body.queue = true;
    if (opts.editOf) body.edit_of = opts.editOf;
    return this.request<{ turn_id: string; chat_id: string; position: number }>(
      'POST',
      `/api/chats/${enc(id)}/messages`,
      body,
    );
  }
  /** Runs the last reply again; the old one is kept only in the export. */
  regenerate(id: string) {
    return this.request<{ turn_id: string; chat_id: string; position: number }>(
      'POST',
      `/api/chats/${enc(id)}/messages`,
      { regenerate: true },
    );
  }
  /** Drops one message still waiting in the chat's queue. */
  cancelQueued(id: string, turn: string) {
    return this.request<{ cancelled: boolean }>('DELETE', `/api/chats/${enc(id)}/queue/${enc(turn)}`);
  }
  /**
   * Re-runs the chat's unfinished last turn on the stored history without
   * sending the user's message again (docs/protocol.md, `retry`). With
   * overBudget it is also the user's explicit "continue over budget" for
   * that one turn.
   */
  retryTurn(id: string, overBudget = false) {
    return this.request<{ turn_id: string; chat_id: string; position: number }>(
      'POST',
      `/api/chats/${enc(id)}/messages`,
      overBudget ? { text: '', retry: true, over_budget: true } : { text: '', retry: true },
    );
  }
  continueOverBudget(id: string) {
    return this.retryTurn(id, true);
  }
  cancel(id: string) {
    return this.request<{ cancelled: boolean }>('POST', `/api/chats/${enc(id)}/cancel`);
  }
  getMode(id: string) {
    return this.get<{ mode: string; expires_at?: string }>(`/api/chats/${enc(id)}/mode`);
  }
  setMode(id: string, mode: string, minutes?: number) {
    return this.request<{ mode: string; expires_at?: string }>(
      'PUT',
      `/api/chats/${enc(id)}/mode`,
      minutes ? { mode, minutes } : { mode },
    );
  }

  /** Whether a turn is running or queued in the chat right now (another
   * tab or device may have started it). */
  chatStatus(id: string) {
    return this.get<ChatStatus>(`/api/chats/${enc(id)}/status`);
  }

  // Approvals
  listApprovals(chat?: string) {
    const q = chat ? `?chat=${enc(chat)}` : '';
    return this.get<{ approvals: ApprovalRequest[] }>(`/api/approvals${q}`).then(
      (r) => r.approvals ?? [],
    );
  }
  decide(id: string, d: ApprovalDecision) {
    return this.request<{ id: string; decision: string }>('POST', `/api/approvals/${enc(id)}`, d);
  }

  // Visibility
  tools(chat?: string) {
    const q = chat ? `?chat=${enc(chat)}` : '';
    return this.get<{ tools: ToolInfo[] }>(`/api/tools${q}`).then((r) => r.tools ?? []);
  }
  audit(params: Record<string, string | number | undefined>) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
    return this.get<{ events: AuditEvent[]; next_before?: number }>(`/api/audit?${q}`);
  }
  verifyAudit() {
    return this.get<{ ok: boolean; count: number; first_bad?: number; problem?: string }>(
      '/api/audit/verify',
    );
  }
  usage(period: string) {
    return this.get<unknown>(`/api/usage?period=${enc(period)}`);
  }
  budget() {
    return this.get<BudgetStatus>('/api/budget');
  }
  system() {
    return this.get<unknown>('/api/system');
  }

  // Settings (config.toml) and policy rules
  settings() {
    return this.get<SettingsView>('/api/settings');
  }
  saveSettings(changes: SettingsChange[]) {
    return this.request<{ settings: SettingsView; applied_live: string[] }>('PATCH', '/api/settings', { changes });
  }
  testProvider(body: { provider?: string; kind?: string; base_url?: string; api_key?: string }) {
    return this.request<{ ok: boolean; error?: string; models: string[] }>('POST', '/api/settings/test-provider', body);
  }
  localModels() {
    return this.get<{ found: LocalServer[]; looked_at: LocalServer[] }>('/api/settings/local-models');
  }
  policyRules() {
    return this.get<{ rules: PolicyRule[] }>('/api/policy/rules').then((r) => r.rules ?? []);
  }
  addRule(rule: Partial<PolicyRule>) {
    return this.request<PolicyRule>('POST', '/api/policy/rules', rule);
  }
  deleteRule(id: string) {
    return this.request<void>('DELETE', `/api/policy/rules/${enc(id)}`);
  }
  dryRun(tool: string, args: unknown) {
    return this.request<{ decision: string; source: string; reason: string; risk: string; rule_id?: string }>('POST', '/api/policy/test', { tool, args });
  }

  // Mail (read-only)
  mailboxes() {
    return this.get<{ mailboxes: MailboxCount[]; total: number; threads: number }>('/api/mail/mailboxes');
  }
  mailSearch(query: string, signal?: AbortSignal) {
    return this.get<MailSearchResult>(`/api/mail/search?${query}`, signal);
  }
  mailMessage(id: number) {
    return this.get<MailMessage>(`/api/mail/messages/${id}?limit=20000`);
  }
  mailThread(id: number) {
    return this.get<MailThread>(`/api/mail/messages/${id}/thread`);
  }
  /** An attachment's bytes (the route needs the token, so no plain link). */
  async mailAttachment(id: number, index: number): Promise<Blob> {
    const res = await this.raw(`/api/mail/messages/${id}/attachments/${index}`);
    if (!res.ok) throw await errorFrom(res);
    return res.blob();
  }

  // Pairing and liveness (no token needed)
  async health(signal?: AbortSignal): Promise<{ status: string; version?: string }> {
    const res = await this.f(this.base + '/health', { signal, cache: 'no-store' });
    if (!res.ok) throw await errorFrom(res);
    return res.json();
  }
  /** Asks to pair as a browser on the daemon's machine: the daemon shows
   * a one-time code to its user, never a token to this page. */
  async startLocalPairing(): Promise<LocalPairRequest> {
    let res: Response;
    try {
      res = await this.f(this.base + '/api/pair/local/start', { method: 'POST' });
    } catch {
      throw new ApiError(0, 'network', 'Cannot reach the Hestia daemon. Is it running?');
    }
    if (!res.ok) throw await errorFrom(res);
    return (await res.json()) as LocalPairRequest;
  }
  /** Trades a local pairing request and the code the user typed for the token. */
  async pairLocal(request: string, code: string): Promise<string> {
    return this.pairPost('/api/pair/local', { request, code });
  }
  async pairExchange(code: string): Promise<string> {
    return this.pairPost('/api/pair/exchange', { code });
  }
  private async pairPost(path: string, body: unknown): Promise<string> {
    let res: Response;
    try {
      res = await this.f(this.base + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    } catch {
      throw new ApiError(0, 'network', 'Cannot reach the Hestia daemon. Is it running?');
    }
    if (!res.ok) throw await errorFrom(res);
    const j = (await res.json()) as { token?: string };
    if (!j.token) throw new ApiError(res.status, 'bad_response', 'The daemon did not send a token.');
    return j.token;
  }
  /** Checks a token by calling an authenticated endpoint. */
  async checkToken(token: string): Promise<boolean> {
    const res = await this.f(this.base + '/api/chats?limit=1', {
      headers: { Authorization: `Bearer ${token}` },
    });
    if (res.status === 401) return false;
    if (!res.ok && res.status !== 404) throw await errorFrom(res);
    return true;
  }
}

function enc(s: string) {
  return encodeURIComponent(s);
}

export async function errorFrom(res: Response): Promise<ApiError> {
  let code = 'http_' + res.status;
  let message = `The daemon answered ${res.status} ${res.statusText}`.trim();
  try {
    const j = (await res.json()) as { error?: { code?: string; message?: string } };
    if (j?.error?.code) code = j.error.code;
    if (j?.error?.message) message = j.error.message;
  } catch {
    // not the JSON error shape; keep the status line
  }
  return new ApiError(res.status, code, message);
}
