// The audit trail: a filterable timeline of what happened, newest first,
// with the redacted payload of any event on demand.
import { useEffect, useState } from 'preact/hooks';
import type { AuditEvent } from '../api/types';
import { Shield } from '../components/icons';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { clock, json } from '../lib/format';
import { Failure, PageHeader } from './common';

const types = [
  'message.user',
  'message.assistant',
  'policy.decision',
  'approval.requested',
  'approval.resolved',
  'tool.run',
  'turn.error',
  'policy.rule_changed',
  'policy.mode_changed',
];

interface Filters {
  type: string;
  tool: string;
  q: string;
  since: string;
}

export function AuditPage() {
  const app = useApp();
  const [f, setF] = useState<Filters>({ type: '', tool: '', q: '', since: '' });
  const [events, setEvents] = useState<AuditEvent[] | null>(null);
  const [next, setNext] = useState<number | undefined>();
  const [err, setErr] = useState<unknown>(null);
  const [sel, setSel] = useState<AuditEvent | null>(null);
  const [verify, setVerify] = useState<string>('');

  const params = (before?: number) => ({
    type: f.type,
    tool: f.tool,
    q: f.q,
    since: f.since ? new Date(f.since).toISOString() : undefined,
    limit: 100,
    before,
  });
  const load = () => {
    setErr(null);
    app.client.audit(params()).then((r) => {
      setEvents(r.events ?? []);
      setNext(r.next_before);
    }, setErr);
  };
  useEffect(() => {
    const t = setTimeout(load, 250);
    return () => clearTimeout(t);
  }, [f.type, f.tool, f.q, f.since]);

  const more = () =>
    next !== undefined &&
    app.client.audit(params(next)).then((r) => {
      setEvents((e) => [...(e ?? []), ...(r.events ?? [])]);
      setNext(r.next_before);
    }, setErr);

  const doVerify = () =>
    app.client.verifyAudit().then(
      (r) => setVerify(r.ok ? `Chain intact: ${r.count} events verified.` : `Chain broken at event ${r.first_bad}: ${r.problem ?? ''}`),
      (e) => setVerify(errText(e)),
    );

  return (
    <div class="page">
      <PageHeader title="Audit" subtitle="Every message, decision and tool run, with secrets masked.">
        <button class="btn" onClick={doVerify}>
          <Shield size={16} /> Verify chain
        </button>
      </PageHeader>
      {verify && (
        <div class={'callout ' + (verify.startsWith('Chain intact') ? 'ok' : 'warn')} role="status">
          {verify}
        </div>
      )}
      <div class="filters">
        <select aria-label="Event type" value={f.type} onChange={(e) => setF({ ...f, type: (e.target as HTMLSelectElement).value })}>
          <option value="">All events</option>
          {types.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
        <input aria-label="Tool" placeholder="Tool" value={f.tool} onInput={(e) => setF({ ...f, tool: (e.target as HTMLInputElement).value })} />
        <input aria-label="Since" type="datetime-local" value={f.since} onInput={(e) => setF({ ...f, since: (e.target as HTMLInputElement).value })} />
        <input
          class="grow"
          aria-label="Search"
          type="search"
          placeholder="Search summaries and payloads"
          value={f.q}
          onInput={(e) => setF({ ...f, q: (e.target as HTMLInputElement).value })}
        />
      </div>
      {err ? (
        <Failure err={err} retry={load} />
      ) : !events ? (
        <div class="skeleton tall" />
      ) : events.length === 0 ? (
        <div class="panel muted">No events match.</div>
      ) : (
        <div class={'audit' + (sel ? ' with-detail' : '')}>
          <ol class="timeline">
            {events.map((e) => (
              <li key={e.id}>
                <button class={'tl-item' + (sel?.id === e.id ? ' active' : '')} onClick={() => setSel(e)}>
                  <span class={`tl-type t-${e.type.split('.')[0]}`}>{e.type}</span>
                  <span class="tl-summary">{e.summary}</span>
                  <span class="tl-time muted small">{clock(e.ts)}</span>
                </button>
              </li>
            ))}
            {next !== undefined && next > 0 && (
              <li>
                <button class="btn wide" onClick={more}>
                  Older events
                </button>
              </li>
            )}
          </ol>
          {sel && (
            <aside class="panel detail" aria-label="Event detail">
              <div class="detail-head">
                <h2>{sel.type}</h2>
                <button class="btn small ghost" onClick={() => setSel(null)}>
                  Close
                </button>
              </div>
              <dl class="kv">
                <dt>When</dt>
                <dd>{clock(sel.ts)}</dd>
                <dt>Event</dt>
                <dd>#{sel.id}</dd>
                {sel.chat_id && (
                  <>
                    <dt>Chat</dt>
                    <dd>
                      <a href={`/c/${encodeURIComponent(sel.chat_id)}`}>{sel.chat_id}</a>
                    </dd>
                  </>
                )}
                {sel.tool && (
                  <>
                    <dt>Tool</dt>
                    <dd class="mono">{sel.tool}</dd>
                  </>
                )}
                <dt>Summary</dt>
                <dd>{sel.summary}</dd>
              </dl>
              <div class="kv-label">Payload (redacted)</div>
              <pre class="mono">{json(sel.data ?? {})}</pre>
              {sel.hash && <div class="muted small mono hash">hash {sel.hash.slice(0, 16)}…</div>}
            </aside>
          )}
        </div>
      )}
    </div>
  );
}
