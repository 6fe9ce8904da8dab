// Per-message actions (copy, regenerate the last reply, edit and resend a
// user message) and the composer's choice when a message is sent while an
// approval waits in the chat.
import { useState } from 'preact/hooks';
import type { ApprovalRequest, Message } from '../api/types';
import { useApp } from '../context';
import { Copy, Pencil, Refresh } from './icons';
import { prettyTool } from '../lib/format';

/** Copy (and, on the chat's last reply, Regenerate) under an assistant message. */
export function AssistantActions({ m, last, busy }: { m: Message; last: boolean; busy: boolean }) {
  const app = useApp();
  return (
    <div class="msg-actions" role="group" aria-label="Actions">
      <button class="icon-btn small" title="Copy reply" aria-label="Copy reply" onClick={() => void app.copyText(m.content, 'Reply')}>
        <Copy size={15} />
      </button>
      {last && (
        <button
          class="icon-btn small"
          title={busy ? 'Wait for the running turn to end' : 'Regenerate this reply (the old one stays in the export)'}
          aria-label="Regenerate reply"
          disabled={busy}
          onClick={() => void app.regenerate(m.chat_id)}
        >
          <Refresh size={15} />
        </button>
      )}
    </div>
  );
}

/** A user message with Copy and Edit; editing sends the new text in its
 * place, superseding it and everything after it. */
export function UserMessage({ m, busy }: { m: Message; busy: boolean }) {
  const app = useApp();
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(m.content);
  const [sending, setSending] = useState(false);
  if (editing) {
    const submit = async () => {
      const t = text.trim();
      if (!t || sending) return;
      setSending(true);
      try {
        await app.send(m.chat_id, t, { editOf: m.id });
        setEditing(false);
      } catch {
        // the toast explains; the text stays
      } finally {
        setSending(false);
      }
    };
    return (
      <div class="msg user editing" data-id={m.id}>
        <form
          class="edit-form"
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <textarea
            aria-label="Edited text"
            value={text}
            rows={Math.min(8, text.split('\n').length + 1)}
            autoFocus
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === 'Escape') setEditing(false);
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                void submit();
              }
            }}
          />
          <div class="edit-note muted small">Sending replaces this message and everything after it; the export keeps the old version.</div>
          <div class="edit-buttons">
            <button type="button" class="btn small" onClick={() => setEditing(false)}>
              Cancel
            </button>
            <button type="submit" class="btn small primary" disabled={!text.trim() || sending || busy}>
              Save and send
            </button>
          </div>
        </form>
      </div>
    );
  }
  return (
    <div class="msg user" data-id={m.id}>
      <div class="bubble">{m.content}</div>
      <div class="msg-actions" role="group" aria-label="Actions">
        <button class="icon-btn small" title="Copy what you wrote" aria-label="Copy what you wrote" onClick={() => void app.copyText(m.content)}>
          <Copy size={15} />
        </button>
        <button
          class="icon-btn small"
          title={busy ? 'Wait for the running turn to end' : 'Edit and send again'}
          aria-label="Edit and resend"
          disabled={busy}
          onClick={() => {
            setText(m.content);
            setEditing(true);
          }}
        >
          <Pencil size={15} />
        </button>
      </div>
    </div>
  );
}

/** What waits for the user in the chat, in words: "write_file", "a question". */
export function waitingFor(pending: ApprovalRequest[]): string {
  const names = pending.map((a) => (a.kind === 'question' ? 'a question' : prettyTool(a.tool ?? 'a tool call')));
  return [...new Set(names)].join(', ');
}

/** Shown when the user sends while an approval waits in this chat: sending
 * would otherwise interrupt the turn and the call would never run. */
export function PendingChoice({
  pending,
  onFirst,
  onQueue,
  onDeny,
}: {
  pending: ApprovalRequest[];
  onFirst: () => void;
  onQueue: () => void;
  onDeny: () => void;
}) {
  const what = waitingFor(pending);
  return (
    <div class="pending-choice" role="alertdialog" aria-label="An approval is waiting">
      <div class="pending-choice-text">
        <strong>Hestia is waiting for your decision on {what}.</strong> Sending now would stop that call. What should happen to
        your message?
      </div>
      <div class="pending-choice-buttons">
        <button type="button" class="btn small" onClick={onFirst}>
          Decide first
        </button>
        <button type="button" class="btn small primary" onClick={onQueue}>
          Send after this turn
        </button>
        <button type="button" class="btn small danger-ghost" onClick={onDeny}>
          Deny and send now
        </button>
      </div>
    </div>
  );
}

/** The messages waiting behind the running turn, each with Cancel. */
export function QueuedList({ chatId, queued, texts }: { chatId: string; queued: string[]; texts: Record<string, string> }) {
  const app = useApp();
  if (queued.length === 0) return null;
  return (
    <ul class="queued-list" aria-label="Waiting to send">
      {queued.map((t) => (
        <li key={t} class="queued-item">
          <span class="queued-label">Queued</span>
          <span class="queued-text" title={texts[t]}>
            {texts[t] || 'A message'}
          </span>
          <span class="muted small">sends when the current turn ends</span>
          <button type="button" class="link" title="Cancel this queued text" onClick={() => void app.cancelQueued(chatId, t)}>
            Cancel
          </button>
        </li>
      ))}
    </ul>
  );
}
