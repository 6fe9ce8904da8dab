import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { splitFrontMatter } from '../src/lib/frontmatter';
import { AppContext } from '../src/context';
import { MemoryPage } from '../src/pages/Memory';
import { parseRoute } from '../src/router';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

describe('Memory page', () => {
  it('routes /memory', () => {
    expect(parseRoute('/memory')).toEqual({ name: 'memory' });
  });

  it('reviews the queue, edits a profile file and browses the wiki', async () => {
    let queue = [{ id: 'c1', target: 'USER.md', text: 'Plays the cello.', confidence: 'high', warnings: ['duplicate of: cello'], source: 'idle' }];
    const ff = fakeFetch({
      'GET /api/memory/queue': () => json({ candidates: queue }),
      'POST /api/memory/queue/c1/accept': () => {
        queue = [];
        return json({ target: 'USER.md', content: 'Plays the cello in an orchestra.\n' });
      },
      'GET /api/memory': () =>
        json({ files: { 'USER.md': { content: 'Lives in Ghent.\n', limit: 3000 }, 'MEMORY.md': { content: '', limit: 5000 }, 'AGENT.md': { content: '', limit: 8000 } } }),
      'PUT /api/memory/user': () => json({ target: 'USER.md', content: 'Lives in Bruges.\n' }),
      'GET /api/wiki/search': () => json({ hits: [{ path: 'sources/mail/thread-4.md', title: 'Roof contract', snippet: 'Work starts…', untrusted: true }] }),
      'GET /api/wiki/pages': () =>
        json({ pages: [
          { path: 'index.md', kind: 'special', title: 'Index' },
          { path: 'pages/House.md', kind: 'page', title: 'House', tags: ['home'] },
          { path: 'sources/mail/thread-4.md', kind: 'source', title: 'Roof contract', untrusted: true },
        ] }),
      'POST /api/memory/review': async (req) => {
        const b = await req.json();
        if (b.chat_id !== 'c_2') return json({ error: { code: 'not_found', message: `chat ${b.chat_id}: not found` } }, 404);
        queue = [{ id: 'c2', target: 'USER.md', text: 'Has a dog named Pip.', confidence: 'normal', warnings: [], source: 'manual' }];
        return json({ candidates: queue });
      },
      'GET /api/wiki/page': () =>
        json({ path: 'sources/mail/thread-4.md', title: 'Roof contract', content: '---\ntitle: Roof contract\ntags: [home, roof]\nreview_by: 2027-01-01\n---\n# Roof contract\n\nPay **40%** upfront.', untrusted: true, backlinks: ['pages/House.md'] }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    app.data.set((s) => ({ ...s, chats: [{ id: 'c_1', title: 'Groceries' }, { id: 'c_2', title: 'About Pip' }] as any }));
    render(
      <AppContext.Provider value={app}>
        <MemoryPage />
      </AppContext.Provider>,
    );
    const fact = (await screen.findByLabelText('Proposed fact c1')) as HTMLTextAreaElement;
    expect(screen.getByText('duplicate of: cello')).toBeTruthy();
    fireEvent.input(fact, { target: { value: 'Plays the cello in an orchestra.' } });
    fireEvent.click(screen.getByText('Accept'));
    await screen.findByText('Nothing waiting for review.');
    const accepts = ff.calls.filter((c) => c.url.endsWith('/accept'));
    expect(await accepts[0].clone().json()).toEqual({ text: 'Plays the cello in an orchestra.' });

    const user = (await screen.findByLabelText('USER.md')) as HTMLTextAreaElement;
    expect(user.value).toBe('Lives in Ghent.\n');
    fireEvent.input(user, { target: { value: 'Lives in Bruges.\n' } });
    fireEvent.click(screen.getByText('Save USER.md'));
    await waitFor(() => expect(ff.calls.some((c) => c.method === 'PUT')).toBe(true));
    expect(await ff.calls.find((c) => c.method === 'PUT')!.clone().json()).toEqual({ content: 'Lives in Bruges.\n' });

    fireEvent.change(screen.getByLabelText('Chat to review'), { target: { value: 'c_2' } });
    fireEvent.click(screen.getByText('Propose facts'));
    await screen.findByText('1 fact proposed.');
    expect(((await screen.findByLabelText('Proposed fact c2')) as HTMLTextAreaElement).value).toBe('Has a dog named Pip.');

    const list = await screen.findByLabelText('Wiki pages');
    expect(list.textContent).toContain('House');
    expect(list.textContent).not.toContain('Index');
    fireEvent.input(screen.getByLabelText('Search the wiki'), { target: { value: 'roof' } });
    fireEvent.click(screen.getByText('Search'));
    fireEvent.click(await screen.findByText('Roof contract'));
    await screen.findByLabelText('Wiki page Roof contract');
    expect(screen.getByText('from outside')).toBeTruthy();
    expect(document.querySelector('.wiki-page strong')?.textContent).toBe('40%');
    expect(screen.getByText(/pages\/House.md/)).toBeTruthy();
    // Front matter is a small key/value block, not a rule and a heading.
    const details = screen.getByLabelText('Page details');
    expect([...details.querySelectorAll('dt')].map((d) => d.textContent)).toEqual(['title', 'tags', 'review_by']);
    expect(details.querySelectorAll('dd')[1].textContent).toBe('home, roof');
    expect(document.querySelector('.wiki-page hr')).toBeNull();
    expect(document.querySelector('.wiki-page h2')).toBeNull();
  });

  it('has style rules for its classes, a phone layout included', () => {
    const css = readFileSync('src/styles/memory.css', 'utf8');
    for (const cls of ['.memory-page', '.profile-file', '.wiki-hits', '.front-matter']) expect(css).toContain(cls);
    expect(css).toMatch(/@media \(max-width: 640px\)/);
    expect(readFileSync('src/pages/Memory.tsx', 'utf8')).toContain("import '../styles/memory.css'");
  });
});

describe('splitFrontMatter', () => {
  it('splits key/value front matter and keeps anything else whole', () => {
    expect(splitFrontMatter('---\ntitle: "A"\nsources:\n  - mail/1.md\n  - mail/2.md\n---\nBody')).toEqual({
      meta: [['title', 'A'], ['sources', 'mail/1.md, mail/2.md']],
      body: 'Body',
    });
    expect(splitFrontMatter('No front matter')).toEqual({ meta: [], body: 'No front matter' });
    // Unclosed, or not key: value, is shown raw rather than misread.
    expect(splitFrontMatter('---\ntitle: A\nBody').meta).toEqual([]);
    expect(splitFrontMatter('---\nnot a pair\n---\nx')).toEqual({ meta: [], body: '---\nnot a pair\n---\nx' });
  });
});
