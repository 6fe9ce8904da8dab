// Long-term memory: the wiki (search, rendered pages with provenance and
// backlinks), the profile files (USER.md, MEMORY.md, AGENT.md) and the
// queue of proposed facts, which only the user accepts, edits or rejects.
import { useEffect, useState } from 'preact/hooks';
import { Markdown } from '../components/Markdown';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { splitFrontMatter } from '../lib/frontmatter';
import type { State } from '../state/reduce';
import { useSelect } from '../state/store';
import { Failure, PageHeader } from './common';
import '../styles/memory.css';

interface WikiHit {
  path: string;
  title: string;
  heading?: string;
  snippet: string;
  untrusted?: boolean;
}
interface WikiPage {
  path: string;
  title: string;
  content: string;
  sources?: string[];
  review_by?: string;
  untrusted?: boolean;
  backlinks?: string[];
  next_offset?: number;
}
interface WikiPageInfo {
  path: string;
  kind: string;
  title: string;
  tags?: string[];
  untrusted?: boolean;
  problems?: string[];
}
interface ProfileFile {
  content: string;
  limit: number;
}
interface Candidate {
  id: string;
  target: string;
  text: string;
  confidence: string;
  warnings: string[];
  source: string;
}

const files: [string, string, string][] = [
  ['USER.md', 'user', 'About you'],
  ['MEMORY.md', 'memory', 'Your environment'],
  ['AGENT.md', 'agent', 'The assistant’s voice'],
];

export function MemoryPage() {
  return (
    <div class="page memory-page">
      <PageHeader title="Memory" subtitle="What Hestia remembers: the wiki, your profile files and proposed facts" />
      <Queue />
      <Profile />
      <Wiki />
    </div>
  );
}

function Queue() {
  const app = useApp();
  const [cs, setCs] = useState<Candidate[] | null>(null);
  const [edits, setEdits] = useState<Record<string, string>>({});
  const [err, setErr] = useState<unknown>(null);
  const load = () =>
    app.client.request<{ candidates: Candidate[] }>('GET', '/api/memory/queue').then((r) => setCs(r.candidates ?? []), setErr);
  useEffect(() => {
    void load();
  }, []);
  const act = (c: Candidate, what: 'accept' | 'reject') => {
    setErr(null);
    const body = what === 'accept' && edits[c.id] !== undefined ? { text: edits[c.id] } : undefined;
    app.client.request('POST', `/api/memory/queue/${encodeURIComponent(c.id)}/${what}`, body).then(load, setErr);
  };
  return (
    <section class="card" aria-label="Proposed facts">
      <h2>Proposed facts</h2>
      <ReviewChat onDone={load} />
      {err ? <Failure err={err} /> : null}
      {!cs && !err && <div class="skeleton" />}
      {cs && cs.length === 0 && <p class="muted">Nothing waiting for review.</p>}
      {cs?.map((c) => (
        <div class="candidate" key={c.id}>
          <label>
            <span class="muted">
              {c.target} · {c.confidence} confidence · from {c.source}
            </span>
            <textarea
              aria-label={`Proposed fact ${c.id}`}
              value={edits[c.id] ?? c.text}
              onInput={(e) => setEdits({ ...edits, [c.id]: (e.target as HTMLTextAreaElement).value })}
            />
          </label>
          {c.warnings.map((w) => (
            <p class="warn" key={w}>
              {w}
            </p>
          ))}
          <div class="actions">
            <button class="btn primary" onClick={() => act(c, 'accept')}>
              Accept
            </button>
            <button class="btn" onClick={() => act(c, 'reject')}>
              Reject
            </button>
          </div>
        </div>
      ))}
    </section>
  );
}

/** Asks for one chat's review now rather than when it goes idle. */
function ReviewChat({ onDone }: { onDone: () => void }) {
  const app = useApp();
  const chats = useSelect(app.data, (s: State) => s.chats);
  const [pick, setPick] = useState('');
  const [busy, setBusy] = useState(false);
  const [msg, setMsg] = useState('');
  if (chats.length === 0) return null;
  const id = chats.some((c) => c.id === pick) ? pick : chats[0].id;
  const review = (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setMsg('');
    app.client
      .request<{ candidates: unknown[] }>('POST', '/api/memory/review', { chat_id: id })
      .then(
        (r) => {
          const n = r.candidates?.length ?? 0;
          setMsg(n === 0 ? 'Nothing new worth remembering in that chat.' : `${n} fact${n === 1 ? '' : 's'} proposed.`);
          onDone();
        },
        (x) => setMsg(errText(x)),
      )
      .finally(() => setBusy(false));
  };
  return (
    <form class="review-chat" onSubmit={review}>
      <label>
        Review a chat now{' '}
        <select aria-label="Chat to review" value={id} onChange={(e) => setPick((e.target as HTMLSelectElement).value)}>
          {chats.map((c) => (
            <option key={c.id} value={c.id}>
              {c.title || 'New chat'}
            </option>
          ))}
        </select>
      </label>{' '}
      <button class="btn" type="submit" disabled={busy}>
        {busy ? 'Reviewing…' : 'Propose facts'}
      </button>
      {msg && (
        <span class="muted" role="status">
          {' '}
          {msg}
        </span>
      )}
    </form>
  );
}

function Profile() {
  const app = useApp();
  const [fs, setFs] = useState<Record<string, ProfileFile> | null>(null);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState('');
  const [err, setErr] = useState<unknown>(null);
  useEffect(() => {
    app.client.request<{ files: Record<string, ProfileFile> }>('GET', '/api/memory').then((r) => setFs(r.files), setErr);
  }, []);
  const save = (name: string, target: string) => {
    setErr(null);
    setSaved('');
    app.client.request('PUT', `/api/memory/${target}`, { content: draft[name] ?? fs?.[name]?.content ?? '' }).then(() => setSaved(name), setErr);
  };
  return (
    <section class="card" aria-label="Profile files">
      <h2>Profile</h2>
      {err ? <Failure err={err} /> : null}
      {fs &&
        files.map(([name, target, label]) => {
          const text = draft[name] ?? fs[name]?.content ?? '';
          return (
            <div class="profile-file" key={name}>
              <label>
                {label} <span class="muted">({name}, {[...text].length}/{fs[name]?.limit} characters, entries separated by a § line)</span>
                <textarea aria-label={name} rows={6} value={text} onInput={(e) => setDraft({ ...draft, [name]: (e.target as HTMLTextAreaElement).value })} />
              </label>
              <button class="btn" onClick={() => save(name, target)}>
                Save {name}
              </button>
              {saved === name && <span class="muted"> saved</span>}
            </div>
          );
        })}
    </section>
  );
}

function Wiki() {
  const app = useApp();
  const [q, setQ] = useState('');
  const [hits, setHits] = useState<WikiHit[] | null>(null);
  const [page, setPage] = useState<WikiPage | null>(null);
  const [pages, setPages] = useState<WikiPageInfo[] | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [listErr, setListErr] = useState<unknown>(null);
  const loadPages = () => {
    setListErr(null);
    app.client.request<{ pages: WikiPageInfo[] }>('GET', '/api/wiki/pages').then((r) => setPages(r.pages ?? []), setListErr);
  };
  useEffect(loadPages, []);
  const search = (e: Event) => {
    e.preventDefault();
    setErr(null);
    if (!q.trim()) return;
    app.client.request<{ hits: WikiHit[] }>('GET', `/api/wiki/search?q=${encodeURIComponent(q)}`).then((r) => setHits(r.hits ?? []), setErr);
  };
  const open = (path: string) => {
    setErr(null);
    app.client.request<WikiPage>('GET', `/api/wiki/page?path=${encodeURIComponent(path)}&limit=32000`).then(setPage, setErr);
  };
  return (
    <section class="card" aria-label="Wiki">
      <h2>Wiki</h2>
      <form onSubmit={search} role="search">
        <input type="search" aria-label="Search the wiki" placeholder="Search the wiki" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        <button class="btn" type="submit">
          Search
        </button>
      </form>
      {err ? <Failure err={err} /> : null}
      {hits && (
        <p class="muted small">
          {hits.length === 0 ? 'No pages found.' : `${hits.length} found.`}{' '}
          <a
            href="#"
            onClick={(e) => {
              e.preventDefault();
              setHits(null);
              setQ('');
            }}
          >
            Show all pages
          </a>
        </p>
      )}
      <ul class="wiki-hits">
        {hits?.map((h) => (
          <li key={h.path}>
            <a
              href="#"
              onClick={(e) => {
                e.preventDefault();
                open(h.path);
              }}
            >
              {h.title}
            </a>{' '}
            <span class="muted">{h.path}</span>
            {h.untrusted && <span class="badge warn">from outside</span>}
            <p class="snippet">{h.snippet}</p>
          </li>
        ))}
      </ul>
      {!hits &&
        (listErr ? (
          <Failure err={listErr} retry={loadPages} />
        ) : !pages ? (
          <div class="skeleton" />
        ) : pages.length === 0 ? (
          <p class="muted">The wiki is empty. Pages you or the assistant write, and notes promoted from mail, appear here.</p>
        ) : (
          <ul class="wiki-pages" aria-label="Wiki pages">
            {pages
              .filter((p) => p.kind === 'page' || p.kind === 'source')
              .map((p) => (
                <li key={p.path}>
                  <a
                    href="#"
                    onClick={(e) => {
                      e.preventDefault();
                      open(p.path);
                    }}
                  >
                    {p.title || p.path}
                  </a>{' '}
                  <span class="muted small">{p.path}</span>
                  {p.untrusted && <span class="badge warn">from outside</span>}
                  {p.tags?.length ? <span class="muted small"> · {p.tags.join(', ')}</span> : null}
                </li>
              ))}
          </ul>
        ))}
      {page && (
        <article class="wiki-page" aria-label={`Wiki page ${page.title}`}>
          <h3>{page.title}</h3>
          <p class="muted">
            {page.path}
            {page.review_by ? ` · review by ${page.review_by}` : ''}
            {page.untrusted ? ' · came from outside (mail or an imported file)' : ''}
          </p>
          {page.sources?.length ? <p class="muted">Sources: {page.sources.join(', ')}</p> : null}
          <PageBody text={page.content} />
          {page.next_offset ? <p class="muted">(page continues; open it in your editor to read the rest)</p> : null}
          {page.backlinks?.length ? (
            <p>
              Linked from:{' '}
              {page.backlinks.map((b) => (
                <a
                  key={b}
                  href="#"
                  onClick={(e) => {
                    e.preventDefault();
                    open(b);
                  }}
                >
                  {b}{' '}
                </a>
              ))}
            </p>
          ) : null}
        </article>
      )}
    </section>
  );
}

/** A wiki page: its front matter as a small key/value block, then the text. */
function PageBody({ text }: { text: string }) {
  const { meta, body } = splitFrontMatter(text);
  return (
    <>
      {meta.length > 0 && (
        <dl class="front-matter" aria-label="Page details">
          {meta.map(([k, v]) => (
            <>
              <dt key={`k-${k}`}>{k}</dt>
              <dd key={`v-${k}`}>{v}</dd>
            </>
          ))}
        </dl>
      )}
      <Markdown text={body} />
    </>
  );
}
