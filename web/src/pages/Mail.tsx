// The Mail page: the local mirror's mailboxes, a search with the CLI's
// filters, results collapsed by thread, and a reading pane with the thread
// and attachments. Read-only: sending goes through the assistant and its
// approvals. Mail text is untrusted and is only ever rendered as text.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { Chat, Download, Paperclip, Refresh, Search, X } from '../components/icons';
import { useApp } from '../context';
import {
  activeFilters,
  askAboutDraft,
  bytes,
  emptyFilters,
  mailDate,
  searchParams,
  senderName,
  type MailboxCount,
  type MailFilters,
  type MailMessage,
  type MailSearchResult,
  type MailSummary,
  type MailThread,
} from '../lib/mail';
import { navigate } from '../router';
import { Failure, PageHeader } from './common';
import '../styles/mail.css';

const PAGE = 30;

export function MailPage({ id }: { id?: number }) {
  const app = useApp();
  const [boxes, setBoxes] = useState<{ mailboxes: MailboxCount[]; total: number; threads: number } | null>(null);
  const [boxErr, setBoxErr] = useState<unknown>(null);
  const [form, setForm] = useState<MailFilters>(emptyFilters);
  const [applied, setApplied] = useState<MailFilters>(emptyFilters);
  const [showFilters, setShowFilters] = useState(false);
  const [res, setRes] = useState<MailSearchResult | null>(null);
  const [searchErr, setSearchErr] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const [sel, setSel] = useState(0);
  const listRef = useRef<HTMLDivElement>(null);
  const qRef = useRef<HTMLInputElement>(null);

  const loadBoxes = () => {
    setBoxErr(null);
    app.client.mailboxes().then(setBoxes, setBoxErr);
  };
  useEffect(loadBoxes, []);

  // Runs the applied search; offset > 0 appends the next page.
  const run = (f: MailFilters, offset = 0) => {
    const ctl = new AbortController();
    setLoading(true);
    setSearchErr(null);
    app.client.mailSearch(searchParams(f, offset, PAGE), ctl.signal).then(
      (r) => {
        // Related messages come with the first page only; later pages keep them.
        setRes((prev) => (offset && prev ? { ...r, messages: [...prev.messages, ...r.messages], related: prev.related } : r));
        if (!offset) setSel(0);
        setLoading(false);
      },
      (e) => {
        if ((e as Error)?.name === 'AbortError') return;
        setSearchErr(e);
        setLoading(false);
      },
    );
    return () => ctl.abort();
  };
  useEffect(() => run(applied), [applied]);

  const rows = res?.messages ?? [];
  const related = res?.related ?? [];
  const open = (m: MailSummary | undefined) => {
    if (m) navigate(`/mail/${m.id}`, true);
  };
  const close = () => navigate('/mail', true);

  // Keyboard: j/k move, Enter opens, / searches, Esc closes or leaves the box.
  // The handler is registered once and reads the latest state from a ref,
  // so quick key repeats never act on a stale selection.
  const live = useRef({ rows, sel, id });
  live.current = { ...live.current, rows, id };
  live.current.sel = sel;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.metaKey || e.ctrlKey || e.altKey || e.defaultPrevented) return;
      const t = e.target as HTMLElement | null;
      const typing = !!t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
      if (typing) {
        if (e.key === 'Escape') t?.blur();
        return;
      }
      const { rows, sel, id } = live.current;
      if (e.key === '/') {
        e.preventDefault();
        qRef.current?.focus();
      } else if (e.key === 'j' || e.key === 'k') {
        if (!rows.length) return;
        e.preventDefault();
        const next = Math.max(0, Math.min(rows.length - 1, sel + (e.key === 'j' ? 1 : -1)));
        live.current.sel = next;
        setSel(next);
        // While reading, moving the selection reads the next conversation.
        if (id !== undefined) open(rows[next]);
      } else if (e.key === 'Enter') {
        if (t && (t.tagName === 'BUTTON' || t.tagName === 'A')) return;
        e.preventDefault();
        open(rows[sel]);
      } else if (e.key === 'Escape' && id !== undefined) {
        e.preventDefault();
        close();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);

  useEffect(() => {
    listRef.current?.querySelector<HTMLElement>(`[data-index="${sel}"]`)?.scrollIntoView?.({ block: 'nearest' });
  }, [sel]);

  const submit = (e?: Event) => {
    e?.preventDefault();
    setApplied({ ...form });
  };
  const pickBox = (account: string, mailbox: string) => {
    const f = { ...form, account, mailbox };
    setForm(f);
    setApplied(f);
  };
  const set = (k: keyof MailFilters) => (e: Event) => {
    const el = e.target as HTMLInputElement;
    setForm({ ...form, [k]: el.type === 'checkbox' ? el.checked : el.value });
  };
  const nFilters = activeFilters(form);
  const searching = !!(applied.q || activeFilters(applied));

  return (
    <div class="page mail-page">
      <PageHeader
        title="Mail"
        subtitle={boxes ? `${boxes.total.toLocaleString()} messages in ${boxes.threads.toLocaleString()} conversations, mirrored on this machine.` : 'Your mail, mirrored on this machine.'}
      >
        <button class="btn" onClick={() => (loadBoxes(), run(applied))} aria-label="Refresh mail">
          <Refresh size={16} /> <span class="hide-phone">Refresh</span>
        </button>
      </PageHeader>
      <form class="mail-search" role="search" onSubmit={submit}>
        <label class="search grow">
          <Search size={15} />
          <input
            ref={qRef}
            id="mail-q"
            type="search"
            placeholder="Search mail"
            aria-label="Search mail"
            value={form.q}
            onInput={set('q')}
          />
          <kbd class="only-desktop">/</kbd>
        </label>
        <button type="button" class={'btn' + (showFilters ? ' active' : '')} aria-expanded={showFilters} onClick={() => setShowFilters(!showFilters)}>
          Filters{nFilters ? ` (${nFilters})` : ''}
        </button>
        <button type="submit" class="btn primary">
          Search
        </button>
      </form>
      {showFilters && (
        <div class="mail-filters panel">
          <label>
            From
            <input value={form.from} onInput={set('from')} placeholder="name or address" />
          </label>
          <label>
            To
            <input value={form.to} onInput={set('to')} placeholder="name or address" />
          </label>
          <label>
            Subject contains
            <input value={form.subject} onInput={set('subject')} />
          </label>
          <label>
            Body contains
            <input value={form.body} onInput={set('body')} />
          </label>
          <label>
            Attachment name
            <input value={form.attachment_name} onInput={set('attachment_name')} placeholder="e.g. invoice" />
          </label>
          <label>
            On or after
            <input type="date" value={form.after} onInput={set('after')} />
          </label>
          <label>
            Before
            <input type="date" value={form.before} onInput={set('before')} />
          </label>
          <label class="check">
            <input type="checkbox" checked={form.unread} onChange={set('unread')} /> Only unread
          </label>
          <label class="check">
            <input type="checkbox" checked={form.attachments} onChange={set('attachments')} /> With attachments
          </label>
          <div class="mail-filter-actions">
            <button type="button" class="btn small" onClick={() => (setForm(emptyFilters), setApplied(emptyFilters))}>
              Clear
            </button>
            <button type="button" class="btn small primary" onClick={() => submit()}>
              Apply
            </button>
          </div>
        </div>
      )}
      <div class={'mail-layout' + (id !== undefined ? ' reading' : '')}>
        <nav class="mail-boxes" aria-label="Mailboxes">
          {boxErr ? (
            <Failure err={boxErr} retry={loadBoxes} />
          ) : (
            <>
              <button class={'mail-box' + (!applied.mailbox ? ' active' : '')} onClick={() => pickBox('', '')}>
                <span class="grow">All mail</span>
                <span class="muted small">{boxes ? boxes.total.toLocaleString() : ''}</span>
              </button>
              {boxes?.mailboxes.map((b) => (
                <button
                  class={'mail-box' + (applied.mailbox === b.name && applied.account === b.account ? ' active' : '')}
                  key={b.account + '/' + b.name}
                  onClick={() => pickBox(b.account, b.name)}
                  title={`${b.account} · ${b.name}`}
                >
                  <span class="grow ellipsis">{b.name}</span>
                  {b.unread > 0 && <span class="badge soft" title={`${b.unread} unread`}>{b.unread}</span>}
                  <span class="muted small">{b.messages.toLocaleString()}</span>
                </button>
              ))}
            </>
          )}
        </nav>
        <div class="mail-list" ref={listRef} role="listbox" aria-label="Conversations">
          {searchErr ? (
            <Failure err={searchErr} retry={() => run(applied)} />
          ) : !res ? (
            <div class="skeleton" aria-label="Loading" />
          ) : rows.length === 0 && related.length === 0 ? (
            <div class="mail-empty muted">
              {searching ? 'No mail matches this search.' : boxes && boxes.total === 0 ? <NoMailYet /> : 'This mailbox is empty.'}
            </div>
          ) : (
            <>
              {res.total !== undefined && (
                <div class="muted small pad mail-total" role="status">
                  {res.total === 1 ? '1 message matches' : `${res.total.toLocaleString()} messages match`}
                </div>
              )}
              {res.degraded && applied.q && <div class="muted small pad">Word matches only: {res.degraded}</div>}
              {rows.length === 0 && <div class="mail-empty muted">No mail matches this search.</div>}
              {rows.map((m, i) => (
                <MailRow key={m.id} m={m} index={i} selected={i === sel} open={m.id === id} onClick={() => (setSel(i), open(m))} />
              ))}
              {res.page.next ? (
                <button class="btn mail-more" disabled={loading} onClick={() => run(applied, res.page.next)}>
                  {loading ? 'Loading…' : 'Load more'}
                </button>
              ) : null}
              {related.length > 0 && (
                <section class="mail-related-list" aria-label="Related messages">
                  <div class="muted small pad" role="note">
                    Related: close in meaning, without the words. Not matches, not counted.
                  </div>
                  {related.map((m) => (
                    <MailRow key={'r' + m.id} m={m} index={-1} selected={false} open={m.id === id} onClick={() => open(m)} />
                  ))}
                </section>
              )}
            </>
          )}
        </div>
        <section class="mail-reader" aria-label="Reading pane">
          {id !== undefined ? <Reader key={id} id={id} onClose={close} /> : <div class="mail-empty muted">Select a conversation to read it. <span class="only-desktop">j / k move, Enter opens, / searches, Esc closes.</span></div>}
        </section>
      </div>
    </div>
  );
}

function NoMailYet() {
  return (
    <span>
      No mail yet. Import a Maildir, mbox or Apple Mail folder with <code>hestia mail import PATH</code>, or add an IMAP account in the configuration and run <code>hestia mail sync</code>.
    </span>
  );
}

function MailRow({ m, index, selected, open, onClick }: { m: MailSummary; index: number; selected: boolean; open: boolean; onClick: () => void }) {
  return (
    <div
      class={'mail-row' + (selected ? ' selected' : '') + (open ? ' open' : '') + (m.unread ? ' unread' : '')}
      role="option"
      aria-selected={selected}
      data-index={index}
      data-id={m.id}
      onClick={onClick}
    >
      <div class="mail-row-top">
        <span class="mail-from ellipsis">{senderName(m.from)}</span>
        {(m.thread_count ?? 1) > 1 && <span class="mail-count" title={`${m.thread_count} messages in this conversation`}>{m.thread_count}</span>}
        {m.has_attachments && <Paperclip size={13} aria-label="has attachments" />}
        {m.related ? (
          <span class="badge soft mail-related" title="Found by meaning: contains none of the words">
            related
          </span>
        ) : m.partial_match ? (
          <span class="badge soft" title="Contains only some of the words">
            some words
          </span>
        ) : null}
        <span class="mail-date">{mailDate(m.date)}</span>
      </div>
      <div class="mail-subject ellipsis">{m.subject || '(no subject)'}</div>
      {m.snippet && <div class="mail-snippet ellipsis muted">{m.snippet}</div>}
    </div>
  );
}

function Reader({ id, onClose }: { id: number; onClose: () => void }) {
  const app = useApp();
  const [msg, setMsg] = useState<MailMessage | null>(null);
  const [thread, setThread] = useState<MailThread | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const load = () => {
    setErr(null);
    app.client.mailMessage(id).then(setMsg, setErr);
    app.client.mailThread(id).then(setThread, () => setThread(null));
  };
  useEffect(load, [id]);

  const download = async (index: number, name: string) => {
    try {
      const blob = await app.client.mailAttachment(id, index);
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      app.error(e);
    }
  };

  if (err) {
    const gone = err instanceof ApiError && err.status === 404;
    return (
      <div class="mail-read">
        <ReaderBar onClose={onClose} />
        {gone ? <div class="callout warn"><span>Message {id} is not in the mirror (it may have been deleted).</span></div> : <Failure err={err} retry={load} />}
      </div>
    );
  }
  if (!msg) return <div class="skeleton" aria-label="Loading" />;
  const count = thread?.count ?? 1;
  return (
    <article class="mail-read">
      <ReaderBar onClose={onClose}>
        <button
          class="btn small primary"
          onClick={() => app.startChatWith(askAboutDraft({ id: msg.id, subject: thread?.subject || msg.subject, from: msg.from, count }))}
        >
          <Chat size={15} /> Ask about this thread
        </button>
      </ReaderBar>
      <h2 class="mail-read-subject">{msg.subject || '(no subject)'}</h2>
      <dl class="mail-headers">
        <dt>From</dt>
        <dd>{msg.from}</dd>
        {msg.to && (
          <>
            <dt>To</dt>
            <dd>{msg.to}</dd>
          </>
        )}
        {msg.cc && (
          <>
            <dt>Cc</dt>
            <dd>{msg.cc}</dd>
          </>
        )}
        <dt>Date</dt>
        <dd>{new Date(msg.date).toLocaleString()}</dd>
        <dt>Mailbox</dt>
        <dd>
          {msg.account} · {msg.mailbox}
        </dd>
      </dl>
      {msg.attachments.length > 0 && (
        <ul class="mail-attachments" aria-label="Attachments">
          {msg.attachments.map((a) => {
            const name = a.filename || `attachment-${a.index}`;
            return (
              <li key={a.index}>
                <Paperclip size={14} />
                <span class="grow ellipsis">{name}</span>
                <span class="muted small">{bytes(a.size)}</span>
                {a.stored ? (
                  <button class="icon-btn small" aria-label={`Download ${name}`} title="Download" onClick={() => void download(a.index, name)}>
                    <Download size={15} />
                  </button>
                ) : (
                  <span class="muted small">not stored</span>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {msg.body_state !== 'full' && <div class="callout warn small"><span>The mirror holds only part of this message ({msg.body_state.replace(/_/g, ' ')}).</span></div>}
      <pre class="mail-body">{msg.body || '(no text)'}</pre>
      {msg.next_offset ? <div class="muted small">The body continues; {msg.body_length - msg.next_offset} more characters are not shown.</div> : null}
      {thread && thread.count > 1 && (
        <section class="mail-thread" aria-label="Conversation">
          <h3>
            Conversation · {thread.count} messages
          </h3>
          <ol>
            {thread.messages.map((t) => (
              <li key={t.id} class={t.id === msg.id ? 'current' : ''}>
                <a href={`/mail/${t.id}`} onClick={(e) => (e.preventDefault(), navigate(`/mail/${t.id}`, true))}>
                  <span class="mail-row-top">
                    <span class="mail-from ellipsis">{senderName(t.from)}</span>
                    <span class="mail-date">{mailDate(t.date)}</span>
                  </span>
                  {t.snippet && <span class="mail-snippet muted">{t.snippet}</span>}
                </a>
              </li>
            ))}
          </ol>
        </section>
      )}
    </article>
  );
}

function ReaderBar({ onClose, children }: { onClose: () => void; children?: any }) {
  return (
    <div class="mail-read-bar">
      <button class="btn small" onClick={onClose} aria-label="Close message" title="Close (Esc)">
        <X size={15} /> <span class="only-phone-inline">Back</span>
      </button>
      <span class="grow" />
      {children}
    </div>
  );
}
