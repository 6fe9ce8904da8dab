// Pure state transitions: every event from the stream and every fetched
// snapshot goes through these functions. They are idempotent — applying the
// same message or event twice leaves the state as applying it once — which
// is what makes reconnect-and-replay safe.
import type { ApprovalRequest, Chat, ChatStatus, Message, Resolution, StreamEvent, TurnResult } from '../api/types';

export interface LiveTool {
  call_id: string;
  turn_id?: string;
  step?: number;
  tool: string;
  args?: Record<string, unknown>;
  policy?: string;
  state: 'running' | 'finished';
  decision?: string;
  status?: string;
  error?: string;
  duration_ms?: number;
  output?: string;
  note?: string;
  started_at?: string;
}

export interface Streaming {
  step: number;
  text: string;
  /** The model's reasoning for this step (shown collapsed; never sent back). */
  reasoning?: string;
  /** Set from model.waiting until the first token: the model reads the prompt. */
  waiting?: { promptTokens: number; local: boolean };
}

export interface ChatView {
  chat: Chat | null;
  messages: Message[];
  loaded: boolean;
  streaming: Record<string, Streaming>;
  tools: Record<string, LiveTool>;
  running?: string;
  queued: string[];
  /** The text of each queued turn, by turn id (shown with a Cancel). */
  queuedText?: Record<string, string>;
  lastResult?: TurnResult;
}

export interface Resolved {
  request: ApprovalRequest;
  resolution: Resolution;
}

export interface State {
  chats: Chat[];
  chatsLoaded: boolean;
  views: Record<string, ChatView>;
  approvals: Record<string, ApprovalRequest>;
  resolved: Record<string, Resolved>;
}

export const initialState: State = {
  chats: [],
  chatsLoaded: false,
  views: {},
  approvals: {},
  resolved: {},
};

export function emptyView(): ChatView {
  return { chat: null, messages: [], loaded: false, streaming: {}, tools: {}, queued: [] };
}

/** The key of a live tool card. Providers number calls per request
 * (call_1, call_2, …), so the call id alone repeats across steps and turns;
 * keyed by it, a later call rewrote an earlier card. */
export function toolKey(turnId: string | undefined, step: number | undefined, callId: string): string {
  return `${turnId ?? ''}:${step ?? 0}:${callId}`;
}

/** The step of a tool event: the daemon sends it; without it, the number of
 * this turn's assistant messages so far (each step stores one, before its
 * tools run). */
function eventStep(v: ChatView, d: Record<string, any>): number {
  if (typeof d.step === 'number') return d.step;
  const n = v.messages.filter((m) => m.role === 'assistant' && m.turn_id === d.turn_id).length;
  return Math.max(0, n - 1);
}

/** Where each persisted tool call sits: for every assistant message, its
 * step in the turn and the results of its calls (the tool messages that
 * follow it). Pairing by position, not by call id alone, keeps a reused id
 * (call_1 in every step) from showing another step's result. */
export interface CallPlace {
  step: number;
  results: Map<string, Message>;
  /** The call ids this message made. */
  ids: Set<string>;
}

export function placeToolCalls(messages: Message[]): Map<string, CallPlace> {
  const out = new Map<string, CallPlace>();
  const steps = new Map<string, number>();
  let cur: CallPlace | undefined;
  for (const m of messages) {
    if (m.role === 'assistant') {
      const turn = m.turn_id ?? '';
      const step = steps.get(turn) ?? 0;
      steps.set(turn, step + 1);
      cur = { step, results: new Map(), ids: new Set((m.tool_calls ?? []).map((c) => c.id)) };
      out.set(m.id, cur);
    } else if (m.role === 'tool') {
      if (cur && m.tool_call_id && cur.ids.has(m.tool_call_id) && !cur.results.has(m.tool_call_id)) cur.results.set(m.tool_call_id, m);
    } else {
      cur = undefined;
    }
  }
  return out;
}

/** Merges messages by id, keeping the transcript ordered by seq. */
export function mergeMessages(current: Message[], incoming: Message[]): Message[] {
  if (incoming.length === 0) return current;
  const byId = new Map(current.map((m) => [m.id, m]));
  let changed = false;
  for (const m of incoming) {
    const old = byId.get(m.id);
    if (old && JSON.stringify(old) === JSON.stringify(m)) continue;
    byId.set(m.id, m);
    changed = true;
  }
  if (!changed) return current;
  return [...byId.values()].sort(
    (a, b) => a.seq - b.seq || a.created_at.localeCompare(b.created_at),
  );
}

export function sortChats(chats: Chat[]): Chat[] {
  return [...chats].sort((a, b) => b.updated_at.localeCompare(a.updated_at));
}

export function upsertChat(chats: Chat[], chat: Chat): Chat[] {
  return sortChats([...chats.filter((c) => c.id !== chat.id), chat]);
}

function withView(s: State, chatId: string | undefined, fn: (v: ChatView) => ChatView): State {
  if (!chatId) return s;
  const v = s.views[chatId];
  // Only chats the user has open are tracked in detail; the rest are
  // fetched fresh when opened.
  if (!v) return s;
  const nv = fn(v);
  return nv === v ? s : { ...s, views: { ...s.views, [chatId]: nv } };
}

/** A chat snapshot from GET /api/chats/{id}. */
export function loadChat(s: State, chat: Chat, messages: Message[]): State {
  const v = s.views[chat.id] ?? emptyView();
  const persistedTurns = new Set(
    messages.filter((m) => m.role === 'assistant' && m.turn_id).map((m) => m.turn_id as string),
  );
  return {
    ...s,
    chats: s.chatsLoaded ? upsertChat(s.chats, chat) : s.chats,
    views: {
      ...s.views,
      [chat.id]: {
        ...v,
        chat,
        loaded: true,
        messages: mergeMessages(v.messages, messages),
        streaming: v.running ? v.streaming : dropKeys(v.streaming, persistedTurns),
      },
    },
  };
}

export function openView(s: State, chatId: string): State {
  if (s.views[chatId]) return s;
  return { ...s, views: { ...s.views, [chatId]: emptyView() } };
}

/** A chat opened while a turn runs elsewhere (another tab, the CLI, a job)
 * shows Working… and Stop: the daemon's status marks the turn running.
 * Live events stay the authority: a view already tracking a turn, or a
 * status saying nothing runs, changes nothing. */
export function loadStatus(s: State, chatId: string, st: ChatStatus | undefined): State {
  s = loadQueued(s, chatId, st);
  const v = s.views[chatId];
  if (!v || !st?.running || !st.turn_id || v.running || v.lastResult?.turn_id === st.turn_id) return s;
  if (v.messages.some((m) => m.role === 'assistant' && m.turn_id === st.turn_id && !m.tool_calls?.length && m.content)) return s;
  return { ...s, views: { ...s.views, [chatId]: { ...v, running: st.turn_id } } };
}

/** The daemon's list of queued turns replaces the view's: a reloaded page
 * shows (and can cancel) messages queued before it loaded. */
function loadQueued(s: State, chatId: string, st: ChatStatus | undefined): State {
  const v = s.views[chatId];
  if (!v || !st || !st.queued_turns) return s;
  const queued = st.queued_turns.map((q) => q.turn_id).filter((t) => t !== v.running);
  const queuedText: Record<string, string> = {};
  for (const q of st.queued_turns) queuedText[q.turn_id] = q.text;
  return { ...s, views: { ...s.views, [chatId]: { ...v, queued, queuedText } } };
}

export function loadChats(s: State, chats: Chat[]): State {
  return { ...s, chats: sortChats(chats), chatsLoaded: true };
}

/**
 * Replaces pending requests with a snapshot (one chat's, or all). `before`
 * lists the requests known when the snapshot was asked for: one that
 * arrived live while it was in flight is newer than the snapshot and is
 * kept (dropping it left its tool card at "Starting" with no approval).
 */
export function loadApprovals(s: State, list: ApprovalRequest[], chatId?: string, before?: ReadonlySet<string>): State {
  const approvals: Record<string, ApprovalRequest> = {};
  for (const [id, a] of Object.entries(s.approvals)) {
    // A snapshot for one chat replaces only that chat's pending requests.
    if ((chatId && a.chat_id !== chatId) || (before && !before.has(id))) approvals[id] = a;
  }
  for (const a of list) if (!s.resolved[a.id]) approvals[a.id] = a;
  return { ...s, approvals };
}

/** Marks a request decided (by us, another client, or a timeout). */
export function resolve(s: State, r: Resolution): State {
  const req = s.approvals[r.id] ?? s.resolved[r.id]?.request;
  const approvals = { ...s.approvals };
  delete approvals[r.id];
  if (!req) return { ...s, approvals };
  return { ...s, approvals, resolved: { ...s.resolved, [r.id]: { request: req, resolution: r } } };
}

export function applyEvent(s: State, ev: StreamEvent): State {
  const d = ev.data ?? {};
  switch (ev.type) {
    case 'chat.created':
    case 'chat.updated': {
      if (!d.chat) return s;
      const chat = d.chat as Chat;
      const next = { ...s, chats: upsertChat(s.chats, chat) };
      return withView(next, chat.id, (v) => ({ ...v, chat }));
    }
    case 'chat.deleted': {
      const views = { ...s.views };
      delete views[d.id];
      return { ...s, chats: s.chats.filter((c) => c.id !== d.id), views };
    }
    case 'turn.queued':
      return withView(s, ev.chat_id, (v) =>
        v.queued.includes(d.turn_id) || v.running === d.turn_id || v.lastResult?.turn_id === d.turn_id
          ? v
          : {
              ...v,
              queued: [...v.queued, d.turn_id],
              queuedText: typeof d.text === 'string' ? { ...v.queuedText, [d.turn_id]: d.text } : v.queuedText,
            },
      );
    case 'chat.rewound':
      // An edit or regenerate superseded these messages; the export keeps them.
      return dropMessages(s, ev.chat_id ?? '', Array.isArray(d.message_ids) ? d.message_ids : []);
    case 'turn.started':
      return withView(s, ev.chat_id, (v) => ({
        ...v,
        running: d.turn_id,
        queued: v.queued.filter((t) => t !== d.turn_id),
        lastResult: undefined,
      }));
    case 'message.delta':
      return withView(s, ev.chat_id, (v) => {
        const cur = v.streaming[d.turn_id];
        const step = Number(d.step ?? 0);
        const same = cur && cur.step === step;
        const text = same ? cur.text + (d.text ?? '') : (d.text ?? '');
        return { ...v, streaming: { ...v.streaming, [d.turn_id]: { step, text, reasoning: same ? cur.reasoning : undefined } } };
      });
    case 'message.reasoning':
      return withView(s, ev.chat_id, (v) => {
        const cur = v.streaming[d.turn_id];
        const step = Number(d.step ?? 0);
        const same = cur && cur.step === step;
        const reasoning = (same ? (cur.reasoning ?? '') : '') + (d.text ?? '');
        return { ...v, streaming: { ...v.streaming, [d.turn_id]: { step, text: same ? cur.text : '', reasoning } } };
      });
    case 'model.waiting':
      return withView(s, ev.chat_id, (v) => {
        const cur = v.streaming[d.turn_id];
        const step = Number(d.step ?? 0);
        const waiting = { promptTokens: Number(d.prompt_tokens ?? 0), local: !!d.local };
        const base = cur && cur.step === step ? cur : { step, text: '' };
        return { ...v, streaming: { ...v.streaming, [d.turn_id]: { ...base, waiting } } };
      });
    case 'message.created': {
      const m = d.message as Message | undefined;
      if (!m) return s;
      return withView(s, m.chat_id ?? ev.chat_id, (v) => {
        let streaming = v.streaming;
        if (m.role === 'assistant' && m.turn_id && streaming[m.turn_id]) {
          // The persisted message replaces what streamed for this step.
          streaming = dropKeys(streaming, new Set([m.turn_id]));
        }
        const messages = mergeMessages(v.messages, [m]);
        return messages === v.messages && streaming === v.streaming ? v : { ...v, messages, streaming };
      });
    }
    case 'tool.started':
      return withView(s, ev.chat_id, (v) => {
        const step = eventStep(v, d);
        const key = toolKey(d.turn_id, step, d.call_id);
        const cur = v.tools[key];
        return {
          ...v,
          tools: {
            ...v.tools,
            [key]: {
              ...cur,
              call_id: d.call_id,
              turn_id: d.turn_id,
              step,
              tool: d.tool,
              args: d.args,
              policy: d.policy,
              state: cur?.state === 'finished' ? 'finished' : 'running',
              started_at: ev.ts,
            },
          },
        };
      });
    case 'tool.finished':
      return withView(s, ev.chat_id, (v) => {
        const step = eventStep(v, d);
        const key = toolKey(d.turn_id, step, d.call_id);
        return {
          ...v,
          tools: {
            ...v.tools,
            [key]: {
              ...v.tools[key],
              call_id: d.call_id,
              turn_id: d.turn_id,
              step,
              tool: d.tool,
              state: 'finished',
              decision: d.decision,
              status: d.status,
              error: d.error,
              duration_ms: d.duration_ms,
              output: d.output,
              note: d.note,
            },
          },
        };
      });
    case 'approval.requested': {
      const a = d.approval as ApprovalRequest | undefined;
      if (!a || s.resolved[a.id]) return s;
      return { ...s, approvals: { ...s.approvals, [a.id]: a } };
    }
    case 'approval.resolved':
      return resolve(s, d as Resolution);
    case 'turn.finished': {
      const r = d.result as TurnResult | undefined;
      if (!r) return s;
      return withView(s, r.chat_id ?? ev.chat_id, (v) => ({
        ...v,
        running: v.running === r.turn_id ? undefined : v.running,
        queued: v.queued.filter((t) => t !== r.turn_id),
        streaming: dropKeys(v.streaming, new Set([r.turn_id])),
        lastResult: r,
      }));
    }
    default:
      return s;
  }
}

/** Removes messages from an open chat's transcript (superseded by an edit
 * or a regenerate). */
export function dropMessages(s: State, chatId: string, ids: string[]): State {
  const gone = new Set(ids);
  return withView(s, chatId, (v) =>
    v.messages.some((m) => gone.has(m.id)) ? { ...v, messages: v.messages.filter((m) => !gone.has(m.id)) } : v,
  );
}

/** The ids an edit of message id (or, without id, a regenerate) replaces:
 * what the daemon will mark superseded, so the view can drop them at once. */
export function supersededBy(v: ChatView, editOf?: string): string[] {
  let from: number;
  if (editOf) {
    const m = v.messages.find((x) => x.id === editOf);
    if (!m) return [];
    from = m.seq;
  } else {
    const users = v.messages.filter((m) => m.role === 'user');
    if (users.length === 0) return [];
    from = users[users.length - 1].seq + 1;
  }
  return v.messages.filter((m) => m.seq >= from).map((m) => m.id);
}

/** After a daemon restart nothing is running any more; forget live state. */
export function clearLive(s: State): State {
  const views: Record<string, ChatView> = {};
  for (const [id, v] of Object.entries(s.views)) {
    views[id] = { ...v, running: undefined, queued: [], streaming: {} };
  }
  return { ...s, views };
}

function dropKeys<T>(o: Record<string, T>, keys: Set<string>): Record<string, T> {
  let out: Record<string, T> | null = null;
  for (const k of keys) {
    if (k in o) {
      out ??= { ...o };
      delete out[k];
    }
  }
  return out ?? o;
}
