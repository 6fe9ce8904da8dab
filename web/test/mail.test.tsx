import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../src/api/types';
import { ToolCard } from '../src/components/ToolCard';
import { AppContext } from '../src/context';
import { askAboutDraft, emptyFilters, mailToolView, parseToolJSON, searchParams, senderName } from '../src/lib/mail';
import { ChatPage } from '../src/pages/Chat';
import { MailPage } from '../src/pages/Mail';
import { parseRoute } from '../src/router';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const rows = [
  { id: 11, thread_id: 1, subject: 'Lisbon dates', from: 'Ana Lima <ana@example.org>', date: '2026-03-03T10:00:00Z', unread: true, thread_count: 3, snippet: 'Shall we go 14 to 17 March?' },
  { id: 12, thread_id: 2, subject: 'Statement', from: 'bank@example.com', date: '2026-03-02T10:00:00Z', has_attachments: true, thread_count: 1 },
  { id: 13, thread_id: 3, subject: 'Dinner', from: 'Bo <bo@example.org>', date: '2026-03-01T10:00:00Z', thread_count: 1 },
];
const message = {
  id: 11, thread_id: 1, account: 'local', mailbox: 'INBOX', subject: 'Lisbon dates', from: 'Ana Lima <ana@example.org>', to: 'me@example.org',
  date: '2026-03-03T10:00:00Z', unread: true, body_state: 'full', body: 'Shall we go 14 to 17 March?\n<b>not html</b>', body_length: 40,
  attachments: [{ index: 0, filename: 'plan.pdf', content_type: 'application/pdf', size: 2048, stored: true }],
};
const thread = { thread_id: 1, subject: 'Lisbon dates', count: 3, messages: [rows[0], { ...rows[0], id: 10, snippet: 'first' }, { ...rows[0], id: 9, snippet: 'zero' }] };

function setup(extra: Parameters<typeof fakeFetch>[0] = {}) {
  const ff = fakeFetch({
    'GET /api/mail/mailboxes': () => json({ total: 3, threads: 3, mailboxes: [{ account: 'local', name: 'INBOX', role: 'inbox', messages: 2, unread: 1 }, { account: 'local', name: 'Sent', messages: 1, unread: 0 }] }),
    'GET /api/mail/search': () => json({ messages: rows, page: { offset: 0, limit: 30 }, mode: 'browse' }),
    'GET /api/mail/messages/11': () => json(message),
    'GET /api/mail/messages/11/thread': () => json(thread),
    ...extra,
  });
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const wrap = (node: any) => render(<AppContext.Provider value={app}>{node}</AppContext.Provider>);
  return { app, wrap, calls: ff.calls };
}

const searches = (calls: Request[]) => calls.filter((c) => new URL(c.url).pathname === '/api/mail/search').map((c) => new URL(c.url).searchParams);

afterEach(() => history.replaceState(null, '', '/'));

describe('mail helpers', () => {
  it('turns the form into the CLI-equivalent query and leaves empty fields out', () => {
    const q = new URLSearchParams(searchParams({ ...emptyFilters, q: ' lisbon ', from: 'ana', after: '2026-03-01', unread: true, attachments: true }, 30));
    expect(Object.fromEntries(q)).toEqual({ q: 'lisbon', from: 'ana', after: '2026-03-01', unread: 'true', attachments: 'true', count: 'true', offset: '30', limit: '30' });
    expect(new URLSearchParams(searchParams(emptyFilters)).get('count')).toBeNull();
  });

  it('reads stored tool output through the untrusted wrapper, and refuses cut-off JSON', () => {
    const body = JSON.stringify({ messages: rows, page: { offset: 0, limit: 8, next: 8 } });
    const wrapped = `<untrusted_content source="mail_search" boundary="R1">\n${body}\n</untrusted_content boundary="R1">`;
    expect((parseToolJSON(wrapped) as any).messages).toHaveLength(3);
    expect(parseToolJSON(body.slice(0, 40))).toBeUndefined();
    expect(parseToolJSON('error: from "an" is shorter than 3 characters')).toBeUndefined();
    const v = mailToolView('mail_search', wrapped);
    expect(v?.kind === 'list' && v.more && v.rows.map((r) => r.id)).toEqual([11, 12, 13]);
    expect(mailToolView('read_file', wrapped)).toBeUndefined();
  });

  it('names senders and threads for the first chat message', () => {
    expect(senderName('"Ana Lima" <ana@example.org>')).toBe('Ana Lima');
    expect(senderName('bank@example.com')).toBe('bank@example.com');
    expect(askAboutDraft({ id: 11, subject: 'Lisbon dates', from: 'Ana Lima <ana@x>', count: 3 })).toBe('About the mail thread “Lisbon dates” from Ana Lima (mail message id 11, 3 messages): ');
  });

  it('routes /mail and /mail/ID', () => {
    expect(parseRoute('/mail')).toEqual({ name: 'mail' });
    expect(parseRoute('/mail/42')).toEqual({ name: 'mail', id: 42 });
    expect(parseRoute('/mail/abc')).toEqual({ name: 'mail' });
  });
});

describe('MailPage', () => {
  it('lists mailboxes with counts and conversations collapsed by thread', async () => {
    const { wrap } = setup();
    wrap(<MailPage />);
    await screen.findByText('Lisbon dates');
    expect(screen.getByText('3 messages in 3 conversations, mirrored on this machine.')).toBeTruthy();
    const inbox = screen.getByTitle('local · INBOX');
    expect(inbox.textContent).toContain('1'); // unread
    expect(inbox.textContent).toContain('2'); // messages
    expect(screen.getByTitle('3 messages in this conversation')).toBeTruthy();
    expect(document.querySelector('.mail-row.unread')?.textContent).toContain('Ana Lima');
  });

  it('marks hybrid hits found by meaning alone apart from the counted matches', async () => {
    const { wrap } = setup({
      'GET /api/mail/search': () =>
        json({ messages: [rows[1], { ...rows[2], related: true }, { ...rows[0], partial_match: true }], page: { offset: 0, limit: 30 }, mode: 'hybrid', total: 1 }),
    });
    wrap(<MailPage />);
    await screen.findByText('1 message matches');
    const list = [...document.querySelectorAll('.mail-row')];
    expect(list.map((r) => r.querySelector('.badge')?.textContent ?? '')).toEqual(['', 'related', 'some words']);
  });

  it('sends the filters and the picked mailbox to the search route', async () => {
    const { wrap, calls } = setup();
    wrap(<MailPage />);
    await screen.findByText('Lisbon dates');
    fireEvent.click(screen.getByRole('button', { name: 'Filters' }));
    fireEvent.input(screen.getByLabelText('From'), { target: { value: 'ana' } });
    fireEvent.change(screen.getByLabelText('Only unread'), { target: { checked: true } });
    fireEvent.input(screen.getByLabelText('Search mail'), { target: { value: 'march' } });
    fireEvent.submit(screen.getByRole('search'));
    await waitFor(() => expect(searches(calls).length).toBe(2));
    const last = searches(calls)[1];
    expect([last.get('q'), last.get('from'), last.get('unread')]).toEqual(['march', 'ana', 'true']);
    fireEvent.click(screen.getByTitle('local · Sent'));
    await waitFor(() => expect(searches(calls).length).toBe(3));
    expect([searches(calls)[2].get('account'), searches(calls)[2].get('mailbox')]).toEqual(['local', 'Sent']);
  });

  it('shows the daemon’s error for a bad search and keeps the form', async () => {
    const { wrap } = setup({
      'GET /api/mail/search': (r) =>
        new URL(r.url).searchParams.get('from') ? json({ error: { code: 'bad_query', message: 'invalid mail search: from "an" is shorter than 3 characters' } }, 400) : json({ messages: rows, page: { offset: 0, limit: 30 } }),
    });
    wrap(<MailPage />);
    await screen.findByText('Lisbon dates');
    fireEvent.click(screen.getByRole('button', { name: 'Filters' }));
    fireEvent.input(screen.getByLabelText('From'), { target: { value: 'an' } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply' }));
    await screen.findByText(/from "an" is shorter than 3 characters/);
    expect((screen.getByLabelText('From') as HTMLInputElement).value).toBe('an');
  });

  it('moves with j/k, opens with Enter, focuses search with / and closes with Esc', async () => {
    const { wrap } = setup();
    wrap(<MailPage />);
    await screen.findByText('Lisbon dates');
    const selected = () => document.querySelector('.mail-row.selected')?.getAttribute('data-id');
    expect(selected()).toBe('11');
    fireEvent.keyDown(document.body, { key: 'j' });
    fireEvent.keyDown(document.body, { key: 'j' });
    fireEvent.keyDown(document.body, { key: 'j' });
    expect(selected()).toBe('13');
    fireEvent.keyDown(document.body, { key: 'k' });
    expect(selected()).toBe('12');
    fireEvent.keyDown(document.body, { key: 'Enter' });
    expect(location.pathname).toBe('/mail/12');
    fireEvent.keyDown(document.body, { key: '/' });
    expect(document.activeElement?.id).toBe('mail-q');
    fireEvent.keyDown(document.activeElement!, { key: 'j' });
    expect(selected()).toBe('12'); // typing in the box does not move
  });

  it('reads a message as text with attachments and the thread, and Esc closes it', async () => {
    const { wrap } = setup();
    history.replaceState(null, '', '/mail/11');
    wrap(<MailPage id={11} />);
    await screen.findByText(/Shall we go 14 to 17 March\?\s+<b>not html<\/b>/);
    expect(document.querySelector('.mail-body b')).toBeNull();
    expect(screen.getByLabelText('Download plan.pdf')).toBeTruthy();
    expect(screen.getByText('Conversation · 3 messages')).toBeTruthy();
    fireEvent.keyDown(document.body, { key: 'Escape' });
    expect(location.pathname).toBe('/mail');
  });

  it('"Ask about this thread" opens a new chat whose composer names the thread', async () => {
    const { app, wrap } = setup();
    wrap(<MailPage id={11} />);
    fireEvent.click(await screen.findByRole('button', { name: /Ask about this thread/ }));
    expect(location.pathname).toBe('/');
    render(
      <AppContext.Provider value={app}>
        <ChatPage />
      </AppContext.Provider>,
    );
    const box = screen.getByLabelText('Message') as HTMLTextAreaElement;
    expect(box.value).toBe('About the mail thread “Lisbon dates” from Ana Lima (mail message id 11, 3 messages): ');
    expect(app.ui.get().draft).toBeUndefined();
  });

  it('explains how to get mail in when the mirror is empty', async () => {
    const { wrap } = setup({
      'GET /api/mail/mailboxes': () => json({ total: 0, threads: 0, mailboxes: [] }),
      'GET /api/mail/search': () => json({ messages: [], page: { offset: 0, limit: 30 } }),
    });
    wrap(<MailPage />);
    await screen.findByText(/hestia mail import PATH/);
  });
});

describe('mail tool cards', () => {
  const result = (content: string, status = 'ok'): Message => ({
    id: 'm_3', chat_id: 'c_1', seq: 3, role: 'tool', tool_call_id: 'call_1', tool_name: 'mail_search', content, created_at: '',
    tool: { decision: 'allowed', status },
  });
  it('show search results as a compact list linking into the Mail page, without expanding', () => {
    const { wrap } = setup();
    const out = `<untrusted_content source="mail_search" boundary="Z">${JSON.stringify({ messages: rows, page: { offset: 0, limit: 8 } })}</untrusted_content boundary="Z">`;
    wrap(<ToolCard call={{ id: 'call_1', name: 'mail_search', arguments: { query: 'lisbon' } }} result={result(out)} turnRunning={false} />);
    const link = screen.getByRole('link', { name: 'Lisbon dates' });
    expect(link.getAttribute('href')).toBe('/mail/11');
    expect(screen.getByText('Ana Lima')).toBeTruthy();
    expect(screen.getAllByRole('listitem')).toHaveLength(3);
  });
  it('fall back to the plain card for failed calls', () => {
    const { wrap } = setup();
    wrap(<ToolCard call={{ id: 'call_1', name: 'mail_search', arguments: { from: 'an' } }} result={result('error: from "an" is shorter', 'error')} turnRunning={false} />);
    expect(screen.getByText('Failed')).toBeTruthy();
    expect(screen.queryByRole('list', { name: 'Messages found' })).toBeNull();
  });
});
