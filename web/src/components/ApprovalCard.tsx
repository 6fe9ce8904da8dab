// The approval card: what the tool will do, how risky it is, the exact
// arguments, and the four answers (approve, edit, deny, ask for revision)
// plus the temporary modes. It turns into a record once decided, whoever
// decided it (this tab, another client, the timeout).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import type { ApprovalDecision, ApprovalRequest } from '../api/types';
import { useApp } from '../context';
import { visible } from '../lib/args';
import { json, prettyTool } from '../lib/format';
import { buildArgs, fieldsOf, initialForm, type FormState } from '../lib/schema';
import { taintLabels } from '../lib/taint';
import type { Resolved } from '../state/reduce';
import { Alert, Check, Question, Shield } from './icons';
import { SchemaForm } from './SchemaForm';

type Mode = 'idle' | 'edit' | 'deny' | 'revise';

export function ApprovalCard({ req }: { req: ApprovalRequest }) {
  const app = useApp();
  const [mode, setMode] = useState<Mode>('idle');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState('');
  const [menu, setMenu] = useState(false);
  const args = req.args ?? {};
  const fields = useMemo(() => fieldsOf(req.schema, args), [req.id]);
  const [form, setForm] = useState<FormState>(() => initialForm(fields, args));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [serverErr, setServerErr] = useState('');

  const send = async (d: ApprovalDecision) => {
    setBusy(true);
    setServerErr('');
    try {
      await app.decide(req.id, d);
    } catch (e) {
      if (e instanceof ApiError) setServerErr(e.message);
    } finally {
      setBusy(false);
    }
  };

  const submitEdit = (e: Event) => {
    e.preventDefault();
    const r = buildArgs(fields, form);
    setErrors(r.errors);
    if (Object.keys(r.errors).length) return;
    void send({ decision: 'edit', args: r.args });
  };

  const risk = (req.risk || 'unknown').toLowerCase();
  return (
    <section class={`approval risk-${risk}`} aria-label={`Approval needed: ${prettyTool(req.tool ?? '')}`}>
      <header class="approval-head">
        <Shield size={18} />
        <div class="approval-title">
          <strong>Approval needed</strong>
          <span class="muted"> · {prettyTool(req.tool ?? 'tool')}</span>
        </div>
        <span class={`risk risk-${risk}`}>{risk} risk</span>
      </header>
      {req.origin && (
        <p class="origin" aria-label="Requested by">
          <strong>Requested by:</strong> {visible(req.origin)}
        </p>
      )}
      {req.preview && <p class="preview">{req.preview}</p>}
      {req.diff && <DiffView diff={req.diff} />}
      <Tainted labels={taintLabels(req.tainted_by)} elsewhere={!!req.origin} />
      {req.grant && (
        <p class="grant" aria-label="Pre-approval">
          <strong>Your pre-approval:</strong> <code class="mono">{visible(req.grant)}</code> matched this call but cannot run it
          without asking (see why below).
        </p>
      )}
      {req.reason && <p class="reason muted">{req.reason}</p>}
      <Expires at={req.expires_at} />

      {mode !== 'edit' && (
        <details class="args" open={Object.keys(args).length <= 4}>
          <summary>Exact arguments</summary>
          <pre class="mono">{json(args)}</pre>
        </details>
      )}

      {mode === 'edit' && (
        <form class="edit" onSubmit={submitEdit}>
          <SchemaForm idPrefix={req.id} fields={fields} form={form} errors={errors} onChange={setForm} />
          {serverErr && <div class="field-err" role="alert">{serverErr}</div>}
          <div class="actions">
            <button class="btn primary" type="submit" disabled={busy}>
              Run with these changes
            </button>
            <button class="btn ghost" type="button" onClick={() => setMode('idle')} disabled={busy}>
              Back
            </button>
          </div>
        </form>
      )}

      {(mode === 'deny' || mode === 'revise') && (
        <form
          class="note-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (mode === 'revise' && !note.trim()) return;
            void send(mode === 'deny' ? { decision: 'deny', note: note.trim() || undefined } : { decision: 'revise', note: note.trim() });
          }}
        >
          <label for={`${req.id}-note`}>
            {mode === 'deny' ? 'Why not? (optional, the assistant sees this)' : 'What should change?'}
          </label>
          <textarea
            id={`${req.id}-note`}
            rows={2}
            value={note}
            autoFocus
            onInput={(e) => setNote((e.target as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.metaKey || e.ctrlKey)) (e.currentTarget.form as HTMLFormElement).requestSubmit();
              if (e.key === 'Escape') setMode('idle');
            }}
          />
          {serverErr && <div class="field-err" role="alert">{serverErr}</div>}
          <div class="actions">
            <button class={'btn ' + (mode === 'deny' ? 'danger' : 'primary')} type="submit" disabled={busy || (mode === 'revise' && !note.trim())}>
              {mode === 'deny' ? 'Deny' : 'Ask for revision'}
            </button>
            <button class="btn ghost" type="button" onClick={() => setMode('idle')} disabled={busy}>
              Back
            </button>
          </div>
        </form>
      )}

      {mode === 'idle' && (
        <div class="actions">
          <div class="split">
            <button class="btn primary" onClick={() => send({ decision: 'approve' })} disabled={busy}>
              <Check size={16} /> Approve
            </button>
            <button
              class="btn primary split-toggle"
              aria-label="More approve options"
              aria-expanded={menu}
              onClick={() => setMenu(!menu)}
              disabled={busy}
            >
              ▾
            </button>
            {menu && (
              <div class="menu" role="menu">
                <button role="menuitem" onClick={() => send({ decision: 'approve', mode: 'allow_10m' })}>
                  Approve and allow gated tools for 10 minutes
                </button>
                <button role="menuitem" onClick={() => send({ decision: 'approve', mode: 'allow_chat' })}>
                  Approve and allow gated tools in this chat
                </button>
              </div>
            )}
          </div>
          <button class="btn" onClick={() => setMode('edit')} disabled={busy}>
            Edit
          </button>
          <button class="btn" onClick={() => setMode('revise')} disabled={busy}>
            Ask for revision
          </button>
          <button class="btn danger-ghost" onClick={() => setMode('deny')} disabled={busy}>
            Deny
          </button>
        </div>
      )}
      {mode === 'idle' && serverErr && <div class="field-err" role="alert">{serverErr}</div>}
    </section>
  );
}

/**
 * The warning on a card whose turn read untrusted content (mail, documents,
 * web pages), or whose call descends from it (a plan made from mail, a
 * watch message quoting outside text): that content may be what steered
 * the model, which is why the call is gated even where a rule or temporary
 * mode would allow it.
 */
function Tainted({ labels, elsewhere }: { labels: string[]; elsewhere: boolean }) {
  if (labels.length === 0) return null;
  return (
    <div class="tainted" role="note" aria-label="Untrusted content">
      <Alert size={16} />
      <div>
        <strong>{elsewhere ? 'This call comes from untrusted content: ' : 'This turn read untrusted content: '}</strong>
        {labels.map((l, i) => (
          <>
            {i > 0 && ', '}
            <code class="mono">{l}</code>
          </>
        ))}
        .
        <div class="tainted-why">
          Text in it may be what asked for this action, so it needs your approval even if a rule would allow it.
        </div>
      </div>
    </div>
  );
}

function Expires({ at }: { at?: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  if (!at) return null;
  const left = Math.max(0, Math.round((Date.parse(at) - now) / 1000));
  if (Number.isNaN(left)) return null;
  const m = Math.floor(left / 60);
  const s = String(left % 60).padStart(2, '0');
  return (
    <p class={'expires muted' + (left < 60 ? ' soon' : '')}>
      Denied automatically in {m}:{s} if nobody answers.
    </p>
  );
}

const resolvedLabel: Record<string, string> = {
  approve: 'Approved',
  edit: 'Approved with edits',
  deny: 'Denied',
  revise: 'Sent back for revision',
  answer: 'Answered',
  timeout: 'Timed out — denied',
  no_approver: 'No approver — denied',
  cancelled: 'Cancelled',
};

export function ResolvedNote({ r }: { r: Resolved }) {
  const d = r.resolution.decision;
  return (
    <div class={`resolved resolved-${d.replace(/\s+/g, '-')}`} role="status">
      {resolvedLabel[d] ?? 'Decided elsewhere'}
      {r.resolution.note ? <span class="muted"> — “{r.resolution.note}”</span> : null}
    </div>
  );
}

export function QuestionCard({ req }: { req: ApprovalRequest }) {
  const app = useApp();
  const [answer, setAnswer] = useState('');
  const [busy, setBusy] = useState(false);
  const send = async (a: string) => {
    if (!a.trim()) return;
    setBusy(true);
    await app.decide(req.id, { decision: 'answer', answer: a.trim() }).catch(() => {});
    setBusy(false);
  };
  return (
    <section class="question" aria-label="Question from the assistant">
      <header class="approval-head">
        <Question size={18} />
        <strong>{req.question || 'The assistant has a question'}</strong>
      </header>
      {req.choices && req.choices.length > 0 && (
        <div class="choices">
          {req.choices.map((c) => (
            <button class="btn chip" disabled={busy} onClick={() => send(c)}>
              {c}
            </button>
          ))}
        </div>
      )}
      <form
        class="answer"
        onSubmit={(e) => {
          e.preventDefault();
          void send(answer);
        }}
      >
        <input
          aria-label="Your answer"
          placeholder={req.choices?.length ? 'Or type another answer…' : 'Type your answer…'}
          value={answer}
          onInput={(e) => setAnswer((e.target as HTMLInputElement).value)}
        />
        <button class="btn primary" type="submit" disabled={busy || !answer.trim()}>
          Answer
        </button>
      </form>
      <Expires at={req.expires_at} />
    </section>
  );
}

/** A unified diff with added and removed lines marked. */
export function DiffView({ diff }: { diff: string }) {
  const kind = (l: string) =>
    l.startsWith('+++') || l.startsWith('---') ? 'file' : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : l.startsWith('@@') ? 'hunk' : undefined;
  return (
    <details class="args diff" open>
      <summary>Changes</summary>
      <pre class="mono" aria-label="Unified diff">
        {diff.split('\n').map((l, i) => (
          <span key={i} class={kind(l)}>
            {l + '\n'}
          </span>
        ))}
      </pre>
    </details>
  );
}
