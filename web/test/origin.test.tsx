// Where a call came from, shown before the user decides: the approval
// card's origin and pre-approval lines, and the Action Center's steps with
// their full arguments before Execute.
import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest } from '../src/api/types';
import { ApprovalCard } from '../src/components/ApprovalCard';
import { AppContext } from '../src/context';
import { argEntries, argText, visible } from '../src/lib/args';
import { ActionsPage } from '../src/pages/Actions';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

function withApp(routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const wrap = (node: any) => render(<AppContext.Provider value={app}>{node}</AppContext.Provider>);
  return { app, wrap, calls: ff.calls };
}

const req: ApprovalRequest = {
  id: 'a_9',
  kind: 'approval',
  chat_id: 'c_1',
  call_id: 'action-12-step-0',
  tool: 'mail_send',
  args: { to: ['bob@example.org'], subject: 'Invoice', body: 'Paid.' },
  risk: 'medium',
  preview: 'send mail to bob@example.org',
  reason: 'the call descends from untrusted content (mail (the thread of message 7)); mail_send can send data off the machine',
  created_at: '2026-12-02T10:00:00Z',
};

describe('ApprovalCard origin and grant', () => {
  it('says who asked, what tainted it and which pre-approval matched, before the buttons', () => {
    const { wrap } = withApp({});
    wrap(
      <ApprovalCard
        req={{
          ...req,
          origin: 'Action Center item 12: pay the invoice',
          grant: 'watch w_3 rule arr',
          tainted_by: [{ tool: 'mail', detail: 'the thread of message 7' }],
        }}
      />,
    );
    const origin = screen.getByLabelText('Requested by');
    expect(origin.textContent).toBe('Requested by: Action Center item 12: pay the invoice');
    const grant = screen.getByLabelText('Pre-approval');
    expect(grant.textContent).toContain('watch w_3 rule arr');
    expect(grant.textContent).toMatch(/cannot run it\s+without asking/);
    const note = screen.getByRole('note', { name: 'Untrusted content' });
    expect(note.textContent).toContain('This call comes from untrusted content');
    expect(note.textContent).toContain('mail (the thread of message 7)');
    const approve = screen.getByRole('button', { name: /^Approve$/ });
    for (const el of [origin, grant, note]) {
      expect(el.compareDocumentPosition(approve) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    }
  });

  it('shows neither line for a call from this chat', () => {
    const { wrap } = withApp({});
    wrap(<ApprovalCard req={req} />);
    expect(screen.queryByLabelText('Requested by')).toBeNull();
    expect(screen.queryByLabelText('Pre-approval')).toBeNull();
    expect(screen.queryByText(/Requested by/)).toBeNull();
  });

  it('spells out hidden characters in the origin', () => {
    const { wrap } = withApp({});
    wrap(<ApprovalCard req={{ ...req, origin: 'MCP client \u202egnp.exe' }} />);
    expect(screen.getByLabelText('Requested by').textContent).toContain('MCP client ⟨U+202E⟩gnp.exe');
  });
});

describe('argument display helpers', () => {
  it('keeps strings verbatim, shows the rest as JSON, and reveals invisible characters', () => {
    expect(argText('line 1\nline 2')).toBe('line 1\nline 2');
    expect(argText('')).toBe('""');
    expect(argText(['a@b.org'])).toBe('[\n  "a@b.org"\n]');
    expect(argText(false)).toBe('false');
    expect(argText(null)).toBe('null');
    expect(visible('ann\u200b@example.org')).toBe('ann⟨U+200B⟩@example.org');
    expect(visible('a\u0000b\tc')).toBe('a⟨U+0000⟩b\tc');
    expect(argEntries({ to: ['x'], body: 'hi' })).toEqual([
      { key: 'to', text: '[\n  "x"\n]', str: false },
      { key: 'body', text: 'hi', str: true },
    ]);
    expect(argEntries([1, 2])).toBeNull();
    expect(argEntries('text')).toBeNull();
    expect(argEntries(null)).toBeNull();
  });
});

const longBody = 'Dear Bob,\n' + 'please find the details below. '.repeat(40) + '\nRegards';
const item = {
  id: 12,
  kind: 'reply_needed',
  priority: 'high',
  summary: 'Bob asks whether the invoice was paid',
  steps: [
    { title: 'Check the bank statement', manual: true },
    { title: 'Reply to Bob', tool: 'mail_reply', args: { message_id: 7, body: longBody, cc: ['carol@example.org'], quote: true } },
    { title: 'Tell accounting', tool: 'mail_send', args: { to: ['acc\u200bounting@example.org'], subject: 'Paid', body: '' } },
  ],
  confidence: 0.9,
  context: { subject: 'Invoice 2026-03', from: 'bob@example.org', messages: 2 },
  state: 'new',
  updated_at: '2026-03-09T07:55:00Z',
};

describe('Action Center steps', () => {
  it('shows every tool step with its full arguments before Execute', async () => {
    const { wrap, calls } = withApp({
      'GET /api/actions': () => json({ actions: [item], counts: { new: 1 } }),
      'GET /api/actions/settings': () => json({ enabled: true, language: 'en' }),
      'POST /api/actions/12/execute': () => json(item),
    });
    wrap(<ActionsPage />);
    const card = await screen.findByRole('listitem', { name: item.summary });
    const reply = within(card).getByLabelText('Arguments of step 2: mail_reply');
    const rows = [...reply.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]);
    expect(rows).toEqual([
      ['message_id', '7'],
      ['body', longBody],
      ['cc', '[\n  "carol@example.org"\n]'],
      ['quote', 'true'],
    ]);
    const send = within(card).getByLabelText('Arguments of step 3: mail_send');
    expect(send.textContent).toContain('acc⟨U+200B⟩ounting@example.org');
    expect(send.textContent).toContain('""');
    // A manual step has no tool and no argument list.
    expect(within(card).queryByLabelText(/Arguments of step 1/)).toBeNull();
    expect(within(card).getByText(/Planned from mail, which anyone can send/)).toBeTruthy();
    // The arguments come before the Execute button, and Execute still works.
    const exec = within(card).getByRole('button', { name: 'Execute' });
    expect(send.compareDocumentPosition(exec) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    fireEvent.click(exec);
    await waitFor(() => expect(calls.some((c) => c.method === 'POST' && new URL(c.url).pathname === '/api/actions/12/execute')).toBe(true));
  });

  it('shows arguments that are not an object as JSON and an empty object as none', async () => {
    const odd = {
      ...item,
      steps: [
        { title: 'Odd', tool: 'mail_send', args: ['x'] },
        { title: 'Bare', tool: 'mail_reply' },
      ],
    };
    const { wrap } = withApp({
      'GET /api/actions': () => json({ actions: [odd], counts: { new: 1 } }),
      'GET /api/actions/settings': () => json({ enabled: true, language: 'en' }),
    });
    wrap(<ActionsPage />);
    const card = await screen.findByRole('listitem', { name: item.summary });
    expect(within(card).getByLabelText('Arguments of step 1: mail_send').textContent).toBe('[\n  "x"\n]');
    expect(within(card).getByLabelText('Arguments of step 2: mail_reply').textContent).toBe('No arguments.');
  });
});
