// The application controller: owns the client, the event stream and the
// store, and turns user intents (send, approve, rename…) into API calls.
// Components read state through useSelect and call these methods.
import { ApiError, Client, localTokenStore, type LocalPairRequest, type TokenStore } from '../api/client';
import { EventStream, type ConnState } from '../api/events';
import type { ApprovalDecision, StreamEvent, TurnResult } from '../api/types';
import { navigate } from '../router';
import {
  applyEvent,
  clearLive,
  dropMessages,
  emptyView,
  initialState,
  loadApprovals,
  loadChat,
  loadStatus,
  loadChats,
  openView,
  resolve,
  supersededBy,
  type State,
} from './reduce';
import { Store } from './store';

export interface Toast {
  id: number;
  kind: 'error' | 'info' | 'success';
  text: string;
  retry?: () => void;
}

export interface UIState {
  conn: ConnState;
  paired: boolean;
  version?: string;
  toasts: Toast[];
  current?: string;
  /** Bumped on policy.changed: rules or temporary modes changed. */
  policyRev: number;
  /** Bumped on notification.created: the inbox reloads. */
  notifyRev?: number;
  /** Text the new-chat composer starts with ("ask about this thread"). */
  draft?: string;
  /** false when the daemon runs without a chat model (undefined: unknown). */
  modelReady?: boolean;
  /** Speech tiers: the microphone and Read aloud show only when set. */
  speech?: { stt: boolean; tts: boolean };
}

/** Turn error codes where sending the same message again may work. */
const retryableTurnErrors = new Set(['model_unavailable', 'model_error', 'internal', 'disconnected']);

export class App {
  readonly data = new Store<State>(initialState);
  readonly ui: Store<UIState>;
  readonly client: Client;
  private stream: EventStream;
  private toastSeq = 0;

  constructor(opts: { tokens?: TokenStore; fetch?: typeof fetch } = {}) {
    const tokens = opts.tokens ?? localTokenStore();
    this.client = new Client({ tokens, fetch: opts.fetch, onUnauthorized: () => this.unpaired() });
    this.ui = new Store<UIState>({ conn: 'connecting', paired: !!tokens.get(), toasts: [], policyRev: 0 });
    this.stream = new EventStream(this.client, {
      onEvent: (ev) => this.onEvent(ev),
      onState: (conn) => {
        this.ui.set((u) => ({ ...u, conn }));
        if (conn === 'unauthorized') this.unpaired();
      },
      onResync: (reason) => {
        if (reason === 'restart') this.data.set(clearLive);
        void this.refresh();
      },
      onConnected: (again) => {
        // Replay covers the gap, but a snapshot also heals what replay
        // cannot (a restart that happened to reach our old sequence number).
        void this.refresh(again);
        void this.checkModel();
        void this.client.health().then(
          (h) => this.ui.set((u) => ({ ...u, version: h.version })),
          () => {},
        );
      },
    });
  }

  start() {
    if (this.client.tokens.get()) this.stream.start();
  }

  stop() {
    this.stream.stop();
  }

  // Pairing

  async pairWithToken(token: string) {
    token = token.trim();
    if (!token) throw new ApiError(400, 'bad_request', 'Paste the token first.');
    if (!(await this.client.checkToken(token))) {
      throw new ApiError(401, 'unauthorized', 'That token was not accepted by the daemon.');
    }
    this.paired(token);
  }

  async pairWithCode(code: string) {
    this.paired(await this.client.pairExchange(code.trim()));
  }

  /**
   * Asks to pair as a browser on the daemon's machine. The daemon answers
   * with a request id and prints a one-time code for the user to type;
   * null when it refuses (another machine, a remote daemon, another
   * origin). A request still open from before a reload is reused, so a
   * reload does not print a new code.
   */
  async startLocalPairing(): Promise<LocalPairRequest | null> {
    const kept = keptLocalRequest();
    if (kept) return kept;
    try {
      const req = await this.client.startLocalPairing();
      keepLocalRequest(req);
      return req;
    } catch (e) {
      if (e instanceof ApiError && e.status === 403) return null;
      throw e;
    }
  }

  /** A fresh local pairing request (a new code), dropping the kept one. */
  async restartLocalPairing(): Promise<LocalPairRequest | null> {
    keepLocalRequest(null);
    return this.startLocalPairing();
  }

  /** Pairs with the code the daemon printed for req. A request the daemon
   * has dropped (used up, expired) is forgotten here too. */
  async pairLocalWithCode(req: LocalPairRequest, code: string) {
    code = code.trim();
    if (!code) throw new ApiError(400, 'bad_request', 'Type the code first.');
    try {
      this.paired(await this.client.pairLocal(req.request, code));
      keepLocalRequest(null);
    } catch (e) {
      if (e instanceof ApiError && (e.code === 'pairing_request_void' || e.code === 'pairing_request_unknown')) keepLocalRequest(null);
      throw e;
    }
  }

  private paired(token: string) {
    this.client.tokens.set(token);
    this.ui.set((u) => ({ ...u, paired: true }));
    this.stream.start();
  }

  unpaired() {
    this.client.tokens.clear();
    this.stream.stop();
    this.ui.set((u) => ({ ...u, paired: false }));
  }

  // Loading

  async refresh(quiet = false) {
    try {
      const before = new Set(Object.keys(this.data.get().approvals));
      const [chats, approvals] = await Promise.all([
        this.client.listChats(),
        this.client.listApprovals(),
      ]);
      this.data.set((s) => loadApprovals(loadChats(s, chats), approvals, undefined, before));
      const cur = this.ui.get().current;
      if (cur) await this.loadChat(cur);
    } catch (e) {
      if (!quiet) this.error(e, () => void this.refresh());
    }
  }

  async openChat(id: string | undefined) {
    this.ui.set((u) => ({ ...u, current: id }));
    if (!id) return;
    this.data.set((s) => openView(s, id));
    await this.loadChat(id).catch((e) => {
      if (e instanceof ApiError && e.code === 'not_found') {
        this.toast('info', 'That chat no longer exists.');
        navigate('/', true);
        return;
      }
      this.error(e, () => void this.openChat(id));
    });
  }

  private async loadChat(id: string) {
    const before = new Set(Object.keys(this.data.get().approvals));
    const [{ chat, messages }, approvals, status] = await Promise.all([
      this.client.getChat(id),
      this.client.listApprovals(id),
      this.client.chatStatus(id).catch(() => undefined),
    ]);
    this.data.set((s) => loadStatus(loadApprovals(loadChat(s, chat, messages ?? []), approvals, id, before), id, status));
  }

  private onEvent(ev: StreamEvent) {
    this.data.set((s) => applyEvent(s, ev));
    if (ev.type === 'turn.finished') this.onTurnFinished(ev.data?.result as TurnResult);
    if (ev.type === 'policy.changed') this.ui.set((u) => ({ ...u, policyRev: u.policyRev + 1 }));
    if (ev.type === 'notification.created') this.ui.set((u) => ({ ...u, notifyRev: (u.notifyRev ?? 0) + 1 }));
    if (ev.type === 'chat.deleted' && ev.data?.id === this.ui.get().current) {
      navigate('/', true);
    }
  }

  private onTurnFinished(r: TurnResult | undefined) {
    if (!r || r.ok || !r.error) return;
    if (r.error.code === 'cancelled' || r.error.code === 'interrupted') return;
    // The open chat shows the failure inline, with its own Retry.
    if (r.chat_id === this.ui.get().current) return;
    const retry = retryableTurnErrors.has(r.error.code) ? () => void this.retry(r.chat_id) : undefined;
    this.toast('error', r.error.message || 'The turn failed.', retry);
  }

  // Chat actions

  /** Sends text to chatId, creating a chat first when there is none. */
  async send(chatId: string | undefined, text: string, opts: { queue?: boolean; editOf?: string } = {}): Promise<string | undefined> {
    try {
      let id = chatId;
      if (!id) {
        const chat = await this.client.createChat(titleFrom(text));
        id = chat.id;
        this.data.set((s) => loadChat(openView(s, chat.id), chat, []));
        navigate(`/c/${encodeURIComponent(id)}`);
      }
      const gone = opts.editOf ? supersededBy(this.data.get().views[id] ?? emptyView(), opts.editOf) : [];
      await this.client.sendMessage(id, text, opts);
      if (gone.length) this.data.set((s) => dropMessages(s, id as string, gone));
      if (this.ui.get().conn !== 'live') void this.loadChat(id).catch(() => {});
      return id;
    } catch (e) {
      this.error(e, () => void this.send(chatId, text, opts));
      throw e;
    }
  }

  /** "Send now and deny": the chat's waiting approvals are denied (recorded
   * as the user's decision, with a note), then the message interrupts. */
  async sendDenying(chatId: string, text: string, approvalIds: string[]) {
    for (const id of approvalIds) {
      await this.decide(id, { decision: 'deny', note: 'Denied to send a new message instead.' });
    }
    return this.send(chatId, text);
  }

  /** Drops a message still waiting behind the running turn. */
  async cancelQueued(chatId: string, turnId: string) {
    try {
      await this.client.cancelQueued(chatId, turnId);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) {
        this.toast('info', 'That message is no longer waiting: it already started.');
        return;
      }
      this.error(e);
    }
  }

  /** Runs the chat's last reply again (the old reply stays in the export). */
  async regenerate(chatId: string): Promise<boolean> {
    try {
      const gone = supersededBy(this.data.get().views[chatId] ?? emptyView());
      await this.client.regenerate(chatId);
      this.data.set((s) => dropMessages(s, chatId, gone));
      if (this.ui.get().conn !== 'live') void this.loadChat(chatId).catch(() => {});
      return true;
    } catch (e) {
      this.error(e);
      return false;
    }
  }

  async copyText(text: string, what = 'Message') {
    try {
      await navigator.clipboard.writeText(text);
      this.toast('success', `${what} copied.`);
    } catch {
      this.toast('error', 'The clipboard is not available here.');
    }
  }

  /** Re-runs a failed turn without repeating the user's message. */
  async retry(chatId: string): Promise<boolean> {
    try {
      await this.client.retryTurn(chatId);
      if (this.ui.get().conn !== 'live') void this.loadChat(chatId).catch(() => {});
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.code === 'nothing_to_retry') {
        this.toast('info', 'That turn already has its reply; nothing to retry.');
        return false;
      }
      this.error(e, () => void this.retry(chatId));
      return false;
    }
  }

  /** The user's "Continue over budget" on a turn stopped by a budget cap. */
  async continueOverBudget(chatId: string): Promise<boolean> {
    try {
      await this.client.continueOverBudget(chatId);
      if (this.ui.get().conn !== 'live') void this.loadChat(chatId).catch(() => {});
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.code === 'nothing_to_retry') {
        this.toast('info', 'That turn already has its reply; nothing to continue.');
        return false;
      }
      this.error(e, () => void this.continueOverBudget(chatId));
      return false;
    }
  }

  async cancel(chatId: string) {
    try {
      await this.client.cancel(chatId);
    } catch (e) {
      this.error(e);
    }
  }

  async newChat() {
    navigate('/');
  }

  /** Opens a new chat whose composer starts with text (the user adds the question). */
  startChatWith(text: string) {
    this.ui.set((u) => ({ ...u, draft: text }));
    navigate('/');
  }

  /** Asks the daemon whether chat has a model (older daemons: unknown). */
  async checkModel() {
    try {
      const s = await this.client.settings();
      this.ui.set((u) => ({ ...u, modelReady: s.model_ready, speech: s.speech }));
    } catch {
      this.ui.set((u) => ({ ...u, modelReady: undefined }));
    }
  }

  /** Hands the pending draft to the composer once. */
  takeDraft(): string {
    const d = this.ui.get().draft ?? '';
    if (d) this.ui.set((u) => ({ ...u, draft: undefined }));
    return d;
  }

  async rename(chatId: string, title: string) {
    try {
      const chat = await this.client.renameChat(chatId, title);
      this.data.set((s) => applyEvent(s, { type: 'chat.updated', data: { chat } }));
    } catch (e) {
      this.error(e);
    }
  }

  async remove(chatId: string) {
    try {
      await this.client.deleteChat(chatId);
      this.data.set((s) => applyEvent(s, { type: 'chat.deleted', data: { id: chatId } }));
      if (this.ui.get().current === chatId) navigate('/', true);
    } catch (e) {
      this.error(e);
    }
  }

  async exportChat(chatId: string) {
    try {
      const body = await this.client.exportChat(chatId);
      const blob = new Blob([JSON.stringify(body, null, 2)], { type: 'application/json' });
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = `hestia-chat-${chatId}.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (e) {
      this.error(e);
    }
  }

  async copyTranscript(chatId: string) {
    try {
      const body = await this.client.exportChat(chatId);
      await navigator.clipboard.writeText(JSON.stringify(body, null, 2));
      this.toast('success', 'Transcript copied as JSON.');
    } catch (e) {
      this.error(e);
    }
  }

  async decide(id: string, d: ApprovalDecision): Promise<boolean> {
    try {
      const r = await this.client.decide(id, d);
      this.data.set((s) => resolve(s, { id, decision: r?.decision ?? d.decision, note: noteOf(d) }));
      if ('mode' in d && d.mode) this.ui.set((u) => ({ ...u, policyRev: u.policyRev + 1 }));
      return true;
    } catch (e) {
      if (e instanceof ApiError && (e.code === 'conflict' || e.status === 404)) {
        // Someone else (another tab, the terminal, the timeout) got there first.
        this.toast('info', e.status === 404 ? 'This request expired.' : 'This request was already decided.');
        this.data.set((s) => resolve(s, { id, decision: e.status === 404 ? 'timeout' : 'decided elsewhere' }));
        return false;
      }
      if (e instanceof ApiError && e.code === 'invalid_args') throw e;
      this.error(e, () => void this.decide(id, d));
      return false;
    }
  }

  async setMode(chatId: string, mode: 'off' | 'allow_10m' | 'allow_chat') {
    try {
      await this.client.setMode(chatId, mode, mode === 'allow_10m' ? 10 : undefined);
      this.ui.set((u) => ({ ...u, policyRev: u.policyRev + 1 }));
      this.toast(
        'success',
        mode === 'off' ? 'Temporary mode ended.' : mode === 'allow_10m' ? 'Gated tools allowed for 10 minutes in this chat.' : 'Gated tools allowed for this chat.',
      );
    } catch (e) {
      this.error(e);
    }
  }

  // Toasts

  toast(kind: Toast['kind'], text: string, retry?: () => void) {
    const id = ++this.toastSeq;
    this.ui.set((u) => ({ ...u, toasts: [...u.toasts.slice(-3), { id, kind, text, retry }] }));
    if (kind !== 'error' || !retry) setTimeout(() => this.dismiss(id), kind === 'error' ? 8000 : 4000);
  }

  dismiss(id: number) {
    this.ui.set((u) => ({ ...u, toasts: u.toasts.filter((t) => t.id !== id) }));
  }

  error(e: unknown, retry?: () => void) {
    if (e instanceof ApiError) {
      if (e.status === 401) return; // handled by going back to pairing
      // While the stream is down the banner already says so, and the
      // snapshot taken on reconnect reloads what failed here.
      if (e.status === 0 && this.ui.get().conn !== 'live') return;
      this.toast('error', e.message, e.retryable ? retry : undefined);
      return;
    }
    if ((e as Error)?.name === 'AbortError') return;
    this.toast('error', (e as Error)?.message ?? String(e), retry);
  }
}

function noteOf(d: ApprovalDecision): string | undefined {
  return 'note' in d ? d.note : undefined;
}

/** A first title for a new chat from its first message. */
export function titleFrom(text: string): string {
  const line = text.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > 60 ? line.slice(0, 57).trimEnd() + '…' : line;
}

const LOCAL_REQUEST_KEY = 'hestia.localPairRequest';

/** The open local pairing request kept for this tab, if not expired. */
function keptLocalRequest(): LocalPairRequest | null {
  try {
    const raw = sessionStorage.getItem(LOCAL_REQUEST_KEY);
    if (!raw) return null;
    const req = JSON.parse(raw) as LocalPairRequest;
    if (typeof req?.request !== 'string' || !(Date.parse(req.expires_at) > Date.now() + 5000)) {
      sessionStorage.removeItem(LOCAL_REQUEST_KEY);
      return null;
    }
    return req;
  } catch {
    return null;
  }
}

function keepLocalRequest(req: LocalPairRequest | null) {
  try {
    if (req) sessionStorage.setItem(LOCAL_REQUEST_KEY, JSON.stringify(req));
    else sessionStorage.removeItem(LOCAL_REQUEST_KEY);
  } catch {
    // Storage off (private mode): a reload then asks for a new code.
  }
}
