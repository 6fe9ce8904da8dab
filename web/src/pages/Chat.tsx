// The chat view: transcript with streaming Markdown, tool and approval cards,
// and the composer.
import { VoiceButton } from '../components/VoiceButton';
import { VoiceMode } from '../components/VoiceMode';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ApprovalRequest } from '../api/types';
import { ApprovalCard, QuestionCard } from '../components/ApprovalCard';
import { Alert, Copy, Download, Flame, Menu, Pencil, Send, Shield, Stop, Trash } from '../components/icons';
import { Markdown } from '../components/Markdown';
import { AssistantActions, PendingChoice, QueuedList, UserMessage } from '../components/MessageActions';
import { NoModelBanner } from '../components/NoModelBanner';
import { Reasoning } from '../components/Reasoning';
import { SpeakButton } from '../components/SpeakButton';
import { ToolCard } from '../components/ToolCard';
import { useApp } from '../context';
import { turnsWithNotDone } from '../lib/toolstatus';
import { emptyView, placeToolCalls, toolKey, type ChatView as View, type State } from '../state/reduce';
import type { UIState } from '../state/app';
import { useSelect } from '../state/store';

const noApprovals: ApprovalRequest[] = [];

export function ChatPage({ id }: { id?: string }) {
  const app = useApp();
  const view = useSelect(app.data, (s: State) => (id ? s.views[id] : undefined)) ?? emptyView();
  const approvals = useSelect(app.data, (s: State) => s.approvals);
  const resolved = useSelect(app.data, (s: State) => s.resolved);
  const pending = useMemo(
    () => (id ? Object.values(approvals).filter((a) => a.chat_id === id) : noApprovals),
    [approvals, id],
  );

  useEffect(() => {
    void app.openChat(id);
  }, [id]);

  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const streamingText = Object.values(view.streaming).map((s) => s.text).join('');
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [view.messages.length, streamingText.length, pending.length, view.running]);

  if (!id) return <Welcome />;

  return (
    <div class="chat">
      <ChatHeader view={view} id={id} />
      <div
        class="transcript"
        ref={scroller}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
        }}
      >
        <div class="transcript-inner" role="log" aria-label="Conversation">
          {!view.loaded && <div class="skeleton" aria-label="Loading" />}
          {view.loaded && view.messages.length === 0 && !view.running && (
            <div class="empty-chat muted">Say something to start.</div>
          )}
          <Transcript view={view} pending={pending} resolved={resolved} />
        </div>
      </div>
      <NoModelBanner />
      <Composer chatId={id} running={!!view.running} queued={view.queued.length} queuedTurns={view.queued} queuedText={view.queuedText} pending={pending} />
    </div>
  );
}

function Transcript({
  view,
  pending,
  resolved,
}: {
  view: View;
  pending: ApprovalRequest[];
  resolved: State['resolved'];
}) {
  // Read aloud only when the daemon has a tts tier.
  const app = useApp();
  const canSpeak = useSelect(app.ui, (u: UIState) => !!u.speech?.tts);
  // Calls are told apart by turn, step and call id: providers reuse ids
  // (call_1 in every request), so the id alone matched another step's card.
  const places = placeToolCalls(view.messages);
  const persisted = new Set<string>();
  for (const m of view.messages) {
    const place = places.get(m.id);
    if (place) for (const id of place.results.keys()) persisted.add(toolKey(m.turn_id, place.step, id));
  }
  // A request names its turn and call; one without a turn matches by call.
  const approvalKey = (a: ApprovalRequest) => `${a.turn_id ?? ''}:${a.call_id}`;
  const pendingMap = new Map(pending.filter((a) => a.call_id).map((a) => [approvalKey(a), a]));
  const resolvedMap = new Map(
    Object.values(resolved)
      .filter((r) => r.request.call_id)
      .map((r) => [approvalKey(r.request), r]),
  );
  const pendingByCall = { get: (k: string) => pendingMap.get(k) ?? pendingMap.get(k.slice(k.indexOf(':'))) };
  const resolvedByCall = { get: (k: string) => resolvedMap.get(k) ?? resolvedMap.get(k.slice(k.indexOf(':'))) };
  const shownCalls = new Set<string>();
  const shownApprovals = new Set<string>();
  const notDoneTurns = turnsWithNotDone(view.messages);
  // Regenerate is offered on the chat's final reply only; edits and
  // regenerates wait for an idle chat (the daemon refuses them otherwise).
  const busy = !!view.running || view.queued.length > 0;
  const lastMsg = view.messages[view.messages.length - 1];
  const out = [];
  for (const m of view.messages) {
    if (m.role === 'user') {
      out.push(<UserMessage key={m.id} m={m} busy={busy} />);
    } else if (m.role === 'assistant') {
      out.push(
        <div class="msg assistant" key={m.id} data-id={m.id}>
          {m.reasoning && <Reasoning text={m.reasoning} ms={m.reasoning_ms} />}
          {m.content && <Markdown text={m.content} />}
          {m.content && canSpeak && <SpeakButton text={m.content} />}
          {m.content && !m.tool_calls?.length && m.turn_id && notDoneTurns.has(m.turn_id) && (
            <div class="reply-notdone muted small" role="note">
              A tool call in this turn did not run — check the cards above before relying on this reply.
            </div>
          )}
          {m.content && !m.tool_calls?.length && <AssistantActions m={m} last={m === lastMsg} busy={busy} />}
          {m.tool_calls?.map((c) => {
            const place = places.get(m.id);
            const key = toolKey(m.turn_id, place?.step, c.id);
            shownCalls.add(key);
            shownApprovals.add(`${m.turn_id ?? ''}:${c.id}`);
            return (
              <ToolCard
                key={key}
                call={c}
                result={place?.results.get(c.id)}
                live={view.tools[key]}
                pending={pendingByCall.get(`${m.turn_id ?? ''}:${c.id}`)}
                resolved={resolvedByCall.get(`${m.turn_id ?? ''}:${c.id}`)}
                turnRunning={view.running === m.turn_id}
              />
            );
          })}
        </div>,
      );
    } else if (m.role === 'tool' && m.tool_call_id && ![...places.values()].some((p) => p.results.get(m.tool_call_id as string) === m)) {
      // A tool result whose call we do not have: show it on its own.
      out.push(
        <div class="msg assistant" key={m.id}>
          <ToolCard
            call={{ id: m.tool_call_id, name: m.tool_name ?? 'tool', arguments: m.tool?.effective_input ?? {} }}
            result={m}
            turnRunning={false}
          />
        </div>,
      );
    }
  }
  // Live tool calls and requests whose assistant message has not landed yet.
  const stray = [];
  for (const [key, t] of Object.entries(view.tools)) {
    if (shownCalls.has(key) || persisted.has(key)) continue;
    if (!view.running) continue;
    shownCalls.add(key);
    shownApprovals.add(`${t.turn_id ?? ''}:${t.call_id}`);
    stray.push(
      <ToolCard
        key={key}
        call={{ id: t.call_id, name: t.tool, arguments: t.args ?? {} }}
        live={t}
        pending={pendingByCall.get(`${t.turn_id ?? ''}:${t.call_id}`)}
        resolved={resolvedByCall.get(`${t.turn_id ?? ''}:${t.call_id}`)}
        turnRunning
      />,
    );
  }
  for (const a of pending) {
    if (a.call_id && (shownApprovals.has(approvalKey(a)) || (!a.turn_id && [...shownApprovals].some((k) => k.endsWith(`:${a.call_id}`))))) continue;
    stray.push(a.kind === 'question' ? <QuestionCard key={a.id} req={a} /> : <ApprovalCard key={a.id} req={a} />);
  }
  const streams = Object.entries(view.streaming).filter(([, s]) => s.text || s.reasoning || s.waiting);
  const failed = view.lastResult && !view.lastResult.ok && !view.running ? view.lastResult : undefined;
  return (
    <>
      {out}
      {failed?.error && !['cancelled', 'interrupted'].includes(failed.error.code) && <TurnError result={failed} />}
      {(stray.length > 0 || streams.length > 0 || view.running) && (
        <div class="msg assistant live">
          {stray}
          {streams.map(([turn, s]) => (
            <div key={turn}>
              {s.waiting && !s.text && !s.reasoning && (
                <div class="model-waiting" role="status">
                  The model is reading {s.waiting.promptTokens.toLocaleString()} tokens…
                </div>
              )}
              {s.reasoning && <Reasoning text={s.reasoning} live answered={!!s.text} />}
              {s.text && <Markdown text={s.text} streaming />}
            </div>
          ))}
          {view.running && streams.length === 0 && stray.length === 0 && pending.length === 0 && (
            <div class="thinking" aria-label="Thinking">
              <span />
              <span />
              <span />
            </div>
          )}
        </div>
      )}
    </>
  );
}

function TurnError({ result }: { result: NonNullable<View['lastResult']> }) {
  const app = useApp();
  const [busy, setBusy] = useState(false);
  if (result.error?.code === 'budget_exceeded') {
    return (
      <div class="turn-error budget-error" role="alert">
        <Alert size={16} />
        <span>
          <strong>Budget cap reached.</strong> {result.error.message || 'A model budget cap was reached.'}{' '}
          <a href="/usage">See the caps</a>
        </span>
        <button
          class="btn small"
          disabled={busy}
          title="Run this turn once more past the cap; later turns are still stopped"
          onClick={async () => {
            setBusy(true);
            await app.continueOverBudget(result.chat_id);
            setBusy(false);
          }}
        >
          Continue over budget
        </button>
      </div>
    );
  }
  const retryable = ['model_unavailable', 'model_error', 'internal', 'disconnected'].includes(result.error?.code ?? '');
  return (
    <div class="turn-error" role="alert">
      <Alert size={16} />
      <span>{result.error?.message || 'The reply failed.'}</span>
      {retryable && (
        <button class="btn small" onClick={() => void app.retry(result.chat_id)}>
          Retry
        </button>
      )}
    </div>
  );
}

/** Shows a temporary "allow" mode for this chat, with a way to end it. */
function ModePill({ chatId }: { chatId: string }) {
  const app = useApp();
  const rev = useSelect(app.ui, (u: UIState) => u.policyRev);
  const [mode, setMode] = useState<{ mode: string; expires_at?: string } | null>(null);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    let live = true;
    app.client.getMode(chatId).then((m) => live && setMode(m), () => live && setMode(null));
    return () => {
      live = false;
    };
  }, [chatId, rev]);
  useEffect(() => {
    if (mode?.mode !== 'allow_10m') return;
    const t = setInterval(() => setNow(Date.now()), 15_000);
    return () => clearInterval(t);
  }, [mode?.mode]);
  if (!mode || mode.mode === 'off' || !mode.mode) return null;
  let label = 'Gated tools allowed in this chat';
  if (mode.mode === 'allow_10m' && mode.expires_at) {
    const left = Math.max(0, Math.ceil((Date.parse(mode.expires_at) - now) / 60_000));
    if (left === 0) return null;
    label = `Gated tools allowed · ${left} min left`;
  }
  return (
    <span class="pill mode-pill" role="status">
      <Shield size={13} /> {label}
      <button class="link" onClick={() => app.setMode(chatId, 'off')} aria-label="End temporary mode">
        end
      </button>
    </span>
  );
}

function ChatHeader({ view, id }: { view: View; id: string }) {
  const app = useApp();
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState('');
  const t = view.chat?.title || 'New chat';
  return (
    <header class="chat-header">
      <button class="icon-btn only-phone" aria-label="Open menu" onClick={() => dispatchEvent(new Event('hestia:drawer'))}>
        <Menu />
      </button>
      {editing ? (
        <form
          class="rename"
          onSubmit={(e) => {
            e.preventDefault();
            if (title.trim()) void app.rename(id, title.trim());
            setEditing(false);
          }}
        >
          <input
            aria-label="Chat title"
            value={title}
            autoFocus
            onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
            onBlur={() => setEditing(false)}
            onKeyDown={(e) => e.key === 'Escape' && setEditing(false)}
          />
        </form>
      ) : (
        <h1 class="chat-title" title={t}>
          {t}
        </h1>
      )}
      <div class="header-actions">
        <ModePill chatId={id} />
        {view.running && <span class="pill live-pill">Working…</span>}
        <button
          class="icon-btn"
          title="Rename"
          aria-label="Rename chat"
          onClick={() => {
            setTitle(view.chat?.title ?? '');
            setEditing(true);
          }}
        >
          <Pencil />
        </button>
        <button class="icon-btn" title="Copy transcript as JSON" aria-label="Copy transcript as JSON" onClick={() => app.copyTranscript(id)}>
          <Copy />
        </button>
        <button class="icon-btn" title="Download transcript" aria-label="Download transcript" onClick={() => app.exportChat(id)}>
          <Download />
        </button>
        <button
          class="icon-btn danger-hover"
          title="Delete chat"
          aria-label="Delete chat"
          onClick={() => {
            if (confirm(`Delete “${t}”? This cannot be undone.`)) void app.remove(id);
          }}
        >
          <Trash />
        </button>
      </div>
    </header>
  );
}

export function Composer({
  chatId,
  running,
  queued,
  queuedTurns = [],
  queuedText = {},
  pending = noApprovals,
}: {
  chatId?: string;
  running: boolean;
  queued: number;
  queuedTurns?: string[];
  queuedText?: Record<string, string>;
  pending?: ApprovalRequest[];
}) {
  const app = useApp();
  // Set when the user sent while an approval waits: they choose what happens.
  const [choosing, setChoosing] = useState(false);
  // A new chat may start from a draft ("ask about this thread" on the Mail page).
  const [text, setText] = useState(() => (chatId ? '' : app.takeDraft()));
  const [sending, setSending] = useState(false);
  const ta = useRef<HTMLTextAreaElement>(null);
  useLayoutEffect(() => {
    const el = ta.current;
    if (!el) return;
    el.style.height = 'auto';
    el.style.height = Math.min(el.scrollHeight, 240) + 'px';
  }, [text]);
  useEffect(() => {
    const el = ta.current;
    el?.focus();
    el?.setSelectionRange(el.value.length, el.value.length);
  }, [chatId]);

  const noModel = useSelect(app.ui, (u: UIState) => u.modelReady === false);
  // The microphone only when the daemon has an stt tier.
  const canListen = useSelect(app.ui, (u: UIState) => !!u.speech?.stt);
  const submit = async (how: 'ask' | 'queue' | 'deny' = 'ask') => {
    const t = text.trim();
    if (!t || sending || noModel) return;
    const waiting = pending.filter((a) => a.chat_id === chatId);
    if (how === 'ask' && chatId && waiting.length > 0) {
      setChoosing(true);
      return;
    }
    setChoosing(false);
    setSending(true);
    try {
      if (how === 'queue' && chatId) await app.send(chatId, t, { queue: true });
      else if (how === 'deny' && chatId) await app.sendDenying(chatId, t, waiting.map((a) => a.id));
      else await app.send(chatId, t);
      setText('');
    } catch {
      // the toast explains; keep the text so nothing is lost
    } finally {
      setSending(false);
      ta.current?.focus();
    }
  };

  // The choice disappears by itself once nothing waits any more.
  const showChoice = choosing && pending.some((a) => a.chat_id === chatId);
  return (
    <div class="composer-wrap">
      {chatId && queuedTurns.length > 0 ? (
        <QueuedList chatId={chatId} queued={queuedTurns} texts={queuedText} />
      ) : (
        queued > 0 && (
          <div class="queued" role="status">
            {queued === 1 ? '1 message queued' : `${queued} messages queued`} — it runs when the current reply ends.
          </div>
        )
      )}
      {showChoice && (
        <PendingChoice
          pending={pending.filter((a) => a.chat_id === chatId)}
          onFirst={() => {
            setChoosing(false);
            const card = document.querySelector('.transcript .approval, .transcript .question');
            card?.scrollIntoView({ block: 'center', behavior: 'smooth' });
            (card?.querySelector('button') as HTMLButtonElement | null)?.focus();
          }}
          onQueue={() => void submit('queue')}
          onDeny={() => void submit('deny')}
        />
      )}
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <textarea
          ref={ta}
          rows={1}
          aria-label="Message"
          placeholder={running ? 'Send a message to interrupt…' : 'Message Hestia…'}
          value={text}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              void submit();
            }
            if (e.key === 'Escape' && showChoice) {
              setChoosing(false);
              return;
            }
            if (e.key === 'Escape' && running && chatId) void app.cancel(chatId);
          }}
        />
        {running && chatId && (
          <button type="button" class="send stop" aria-label="Stop" title="Stop (Esc)" onClick={() => app.cancel(chatId)}>
            <Stop />
          </button>
        )}
        {canListen && <VoiceButton onText={(t) => setText((cur) => (cur.trim() ? cur.trimEnd() + ' ' : '') + t)} onError={(m) => app.toast('error', m)} />}
        {chatId && <VoiceMode chatId={chatId} />}
        <button type="submit" class="send" aria-label="Send" title="Send (Enter)" disabled={!text.trim() || sending || noModel}>
          <Send />
        </button>
      </form>
      <div class="composer-hint muted">Enter to send · Shift+Enter for a new line{running ? ' · Esc to stop' : ''}</div>
    </div>
  );
}

function Welcome() {
  const suggestions = [
    'What is on my calendar this week?',
    'Summarise unread mail from today',
    'Find my notes about the trip',
    'Draft a reply to the last message from Sam',
  ];
  const app = useApp();
  return (
    <div class="chat welcome">
      <div class="welcome-inner">
        <div class="welcome-mark">
          <Flame size={30} />
        </div>
        <h1>What can I do for you?</h1>
        <p class="muted">Your mail, calendar, documents and memory stay on this machine. Anything that changes something asks you first.</p>
        <div class="suggestions">
          {suggestions.map((s) => (
            <button class="suggestion" onClick={() => app.send(undefined, s).catch(() => {})}>
              {s}
            </button>
          ))}
        </div>
      </div>
      <NoModelBanner />
      <Composer running={false} queued={0} />
    </div>
  );
}
