import { useState } from 'preact/hooks';
import type { ApprovalRequest, Message, ToolCall } from '../api/types';
import { argSummary, duration, excerpt, json, prettyTool, toolOutput } from '../lib/format';
import { mailDate, mailToolView, senderName, type MailToolView } from '../lib/mail';
import { toolStatus } from '../lib/toolstatus';
import '../styles/mail.css';
import type { LiveTool, Resolved } from '../state/reduce';
import { ApprovalCard, QuestionCard, ResolvedNote } from './ApprovalCard';
import { Alert, Check, Chevron, Question, Tool } from './icons';

interface Props {
  call: ToolCall;
  result?: Message;
  live?: LiveTool;
  pending?: ApprovalRequest;
  resolved?: Resolved;
  turnRunning: boolean;
}

export function ToolCard(p: Props) {
  const st = toolStatus({ ...p, args: p.call.arguments });
  const [open, setOpen] = useState(false);
  const isQuestion = p.call.name === 'ask_user' || p.pending?.kind === 'question';

  if (isQuestion) {
    if (p.pending) return <QuestionCard req={p.pending} />;
    const answer = p.result?.content?.replace(/^The user answered:\s*/, '');
    const ok = p.result?.tool?.status !== 'error';
    return (
      <div class={'tool-card question-done ' + (ok ? 'tone-ok' : 'tone-notdone')}>
        <div class="tool-head static">
          <span class="tool-icon">{ok ? <Check size={15} /> : <Question size={15} />}</span>
          <span class="tool-main">
            <span class="question-text">{String(p.call.arguments?.question ?? 'Question')}</span>
            {answer && <span class="answer-text">{ok ? '→ ' : ''}{excerpt(answer, 200)}</span>}
          </span>
        </div>
      </div>
    );
  }

  return (
    <div class={`tool-card tone-${st.tone}`} data-call={p.call.id} data-tool={p.call.name}>
      <button class="tool-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class="tool-icon">
          {st.tone === 'ok' ? <Check size={15} /> : st.tone === 'error' || st.tone === 'notdone' ? <Alert size={15} /> : <Tool size={15} />}
        </span>
        <span class="tool-main">
          <span class="tool-name">{prettyTool(p.call.name)}</span>
          {argSummary(st.input) && <span class="tool-arg mono">{argSummary(st.input)}</span>}
          <span class={`status status-${st.tone}`}>
            {st.tone === 'running' && <span class="spinner" aria-hidden="true" />}
            {st.label}
          </span>
          {st.detail && <span class="status-detail">{st.detail}</span>}
        </span>
        {st.duration_ms !== undefined && st.tone !== 'notdone' && <span class="muted small">{duration(st.duration_ms)}</span>}
        <Chevron size={15} class={'chev' + (open ? ' open' : '')} />
      </button>
      {st.tone === 'ok' && <MailResult view={mailToolView(p.call.name, st.output)} />}
      {p.pending && <ApprovalCard req={p.pending} />}
      {!p.pending && p.resolved && st.tone !== 'notdone' && st.tone !== 'ok' && <ResolvedNote r={p.resolved} />}
      {st.error && <div class="tool-error">{st.error}</div>}
      {open && (
        <div class="tool-body">
          <div class="kv-label">{st.edited ? 'Ran with (your edits)' : 'Input'}</div>
          <pre class="mono">{json(st.input ?? {})}</pre>
          {st.askedInput && (
            <>
              <div class="kv-label">The assistant asked for</div>
              <pre class="mono dim">{json(st.askedInput)}</pre>
            </>
          )}
          {st.output && <Output text={st.output} />}
        </div>
      )}
    </div>
  );
}

/** The output block: unwrapped, pretty-printed, and flagged when the
 * assistant was shown it as outside content (text others may have written,
 * such as mail, web pages or calendar invitations). */
function Output({ text }: { text: string }) {
  const o = toolOutput(text);
  return (
    <>
      <div class="kv-label">
        Output
        {o.outside && (
          <span class="muted small" title="The assistant was told this may contain text written by others and not to follow instructions in it.">
            {' '}
            · given to the assistant as outside content
          </span>
        )}
      </div>
      <pre class="mono">{excerpt(o.text, 4000)}</pre>
      {o.note && <div class="muted small">{o.note}</div>}
    </>
  );
}

const shownRows = 6;

/** Mail tool results as a short list that links into the Mail page. */
function MailResult({ view }: { view?: MailToolView }) {
  if (!view) return null;
  if (view.kind === 'message') {
    const m = view.message;
    return (
      <ul class="mail-tool">
        <li>
          <span class="mail-tool-from ellipsis">{senderName(m.from)}</span>
          <a class="ellipsis" href={`/mail/${m.id}`}>{m.subject || '(no subject)'}</a>
          <span class="mail-date">{mailDate(m.date)}</span>
        </li>
      </ul>
    );
  }
  if (view.rows.length === 0) return <ul class="mail-tool"><li class="muted">No messages found.</li></ul>;
  const extra = view.rows.length - shownRows;
  return (
    <ul class="mail-tool" aria-label="Messages found">
      {view.rows.slice(0, shownRows).map((m) => (
        <li key={m.id}>
          <span class="mail-tool-from ellipsis">{senderName(m.from)}</span>
          <a class="ellipsis" href={`/mail/${m.id}`}>{m.subject || '(no subject)'}</a>
          <span class="mail-date">{mailDate(m.date)}</span>
        </li>
      ))}
      {(extra > 0 || view.more) && (
        <li class="more">{extra > 0 ? `${extra} more` : 'More'} {view.more ? '(the assistant can page further)' : ''}</li>
      )}
    </ul>
  );
}
