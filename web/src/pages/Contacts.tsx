// The Contacts page: search the address books (people merged across books
// by a shared address or phone) and open one person: every name, address,
// phone and book, and how often the user has mailed them (the evidence
// resolve_recipient gives the assistant). Read-only.
import { useEffect, useState } from 'preact/hooks';
import { Search } from '../components/icons';
import { useApp } from '../context';
import { relTime } from '../lib/format';
import type { Candidate, Person, Resolution } from '../lib/calendar';
import { Failure, PageHeader } from './common';
import '../styles/calendar.css';

export function ContactsPage() {
  const app = useApp();
  const [q, setQ] = useState('');
  const [people, setPeople] = useState<Person[] | null>(null);
  const [asked, setAsked] = useState('');
  const [err, setErr] = useState<unknown>(null);
  const [sel, setSel] = useState<Person | null>(null);

  // Without a search the address books are listed by name, page by page.
  const [next, setNext] = useState(0);
  const browse = (offset = 0) => {
    setErr(null);
    app.client.request<{ people: Person[] | null; next: number }>('GET', `/api/contacts?offset=${offset}`).then((r) => {
      setPeople((cur) => (offset && cur ? [...cur, ...(r.people ?? [])] : (r.people ?? [])));
      setNext(r.next ?? 0);
      setAsked('');
    }, setErr);
  };
  useEffect(() => browse(), []);

  const search = (e?: Event) => {
    e?.preventDefault();
    const text = q.trim();
    if (!text) {
      browse();
      return;
    }
    setNext(0);
    setErr(null);
    setSel(null);
    app.client.request<{ people: Person[] | null }>('GET', `/api/contacts/search?q=${encodeURIComponent(text)}`).then((r) => {
      setPeople(r.people ?? []);
      setAsked(text);
    }, setErr);
  };

  return (
    <div class="page cal-page contacts-page">
      <PageHeader title="Contacts" subtitle="Your address books, merged by shared address or phone" />
      <form class="contacts-search" role="search" onSubmit={search}>
        <Search size={16} />
        <input value={q} placeholder="Name, address, organisation…" aria-label="Search contacts" onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        <button class="btn primary small" type="submit">
          Search
        </button>
      </form>
      {err ? <Failure err={err} retry={() => search()} /> : null}
      {people && people.length === 0 && (asked ? <p class="muted">Nobody matches “{asked}”.</p> : <p class="muted">No contacts yet: add an address book in Setup (or Settings), or import a folder of .vcf files with <code>hestia contacts import PATH</code>.</p>)}
      <div class="contacts-body">
        {people && people.length > 0 && (
          <ul class="contacts-list" aria-label="People">
            {people.map((p, i) => (
              <li key={`${p.name}|${p.emails?.[0] ?? ''}|${i}`}>
                <button class={'contact-row' + (sel === p ? ' active' : '')} aria-current={sel === p ? 'true' : undefined} onClick={() => setSel(p)}>
                  <span class="contact-name">
                    {p.name || p.emails?.[0] || '(no name)'}
                    {p.seen_in_mail && <span class="cal-badge">seen in mail</span>}
                  </span>
                  <span class="muted small">{[p.org, p.emails?.[0]].filter(Boolean).join(' · ')}</span>
                </button>
              </li>
            ))}
            {next > 0 && !asked && (
              <li>
                <button class="btn small" onClick={() => browse(next)}>
                  More
                </button>
              </li>
            )}
          </ul>
        )}
        {sel && <ContactDetail key={sel.name + (sel.emails?.[0] ?? '')} person={sel} />}
      </div>
    </div>
  );
}

function ContactDetail({ person }: { person: Person }) {
  const app = useApp();
  // The search answer carries the mail counts when the index has them;
  // otherwise resolve_recipient's evidence is asked for on demand.
  const known = person.mail ? { sent: person.mail.sent, received: person.mail.received, last: person.mail.last_contact } : undefined;
  const [mail, setMail] = useState<Candidate | null | undefined>(undefined);
  const [err, setErr] = useState<unknown>(null);
  const lookup = () => {
    setErr(null);
    app.client.request<Resolution>('GET', `/api/contacts/resolve?name=${encodeURIComponent(person.name)}`).then((r) => {
      const mine = new Set((person.emails ?? []).map((e) => e.toLowerCase()));
      setMail((r.candidates ?? []).find((c) => mine.has(c.email.toLowerCase())) ?? null);
    }, setErr);
  };
  return (
    <article class="card contact-detail" aria-label={`Contact ${person.name}`}>
      <h2>{person.name || '(no name)'}</h2>
      {(person.title || person.org) && <p class="muted">{[person.title, person.org].filter(Boolean).join(', ')}</p>}
      <dl class="cal-detail">
        {person.emails?.length ? (
          <>
            <dt>Email</dt>
            <dd>
              {person.emails.map((e) => (
                <div key={e}>
                  <a href={`mailto:${e}`}>{e}</a>
                </div>
              ))}
            </dd>
          </>
        ) : null}
        {person.phones?.length ? (
          <>
            <dt>Phone</dt>
            <dd>
              {person.phones.map((p) => (
                <div key={p}>
                  <a href={`tel:${p.replace(/[^+\d]/g, '')}`}>{p}</a>
                </div>
              ))}
            </dd>
          </>
        ) : null}
        {person.nicknames?.length ? (
          <>
            <dt>Nicknames</dt>
            <dd>{person.nicknames.join(', ')}</dd>
          </>
        ) : null}
        {person.other_names?.length ? (
          <>
            <dt>Also known as</dt>
            <dd>{person.other_names.join(', ')}</dd>
          </>
        ) : null}
        <dt>Address books</dt>
        <dd>
          {(person.books ?? []).join(', ') || (person.seen_in_mail ? 'none: seen in mail only' : '—')}
          {person.cards > 1 ? ` (${person.cards} cards merged)` : ''}
        </dd>
        <dt>Mail</dt>
        <dd>
          {known ? (
            <span>
              {known.sent} sent to, {known.received} received from
              {known.last ? `; last ${relTime(known.last)}` : ''}
            </span>
          ) : mail === undefined ? (
            <button class="btn small" onClick={lookup}>
              Show mail history
            </button>
          ) : mail === null ? (
            <span class="muted">No mail with this person in the local mirror.</span>
          ) : (
            <span>
              {mail.evidence.mailed} sent to, {mail.evidence.received} received from
              {mail.evidence.last_contact ? `; last ${relTime(mail.evidence.last_contact)}` : ''}
            </span>
          )}
          {err ? <Failure err={err} /> : null}
        </dd>
      </dl>
    </article>
  );
}
