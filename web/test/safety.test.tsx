// The safety features' UI: taint warnings on approval cards, the
// "Continue over budget" action on a budget_exceeded turn, and the budget
// caps on the Usage page.
import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest, BudgetStatus, Message } from '../src/api/types';
import { ApprovalCard } from '../src/components/ApprovalCard';
import { AppContext } from '../src/context';
import { taintLabels } from '../src/lib/taint';
import { ChatPage } from '../src/pages/Chat';
import { BudgetPanel, UsagePage } from '../src/pages/Usage';
import { App } from '../src/state/app';
import { applyEvent, loadChat, openView } from '../src/state/reduce';
import { fakeFetch, json, memTokens, tick } from './helpers';

const req: ApprovalRequest = {
  id: 'a_1',
  kind: 'approval',
  chat_id: 'c_1',
  call_id: 'call_2',
  tool: 'mail_send',
  args: { to: 'x@example.org', subject: 'hi', body: 'hello' },
  risk: 'high',
  preview: 'send mail to x@example.org',
  reason: 'the turn read untrusted content (mail_read (id 42)); mail_send can send data off the machine',
  created_at: '2026-12-02T10:00:00Z',
  expires_at: new Date(Date.now() + 120_000).toISOString(),
};

function withApp(routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const wrap = (node: any) => render(<AppContext.Provider value={app}>{node}</AppContext.Provider>);
  return { app, wrap, calls: ff.calls };
}

describe('taint labels', () => {
  it('names tool and detail, drops repeats and entries without a tool', () => {
    expect(
      taintLabels([
        { tool: 'mail_read', detail: 'id 42', call_id: 'call_1' },
        { tool: 'read_file', detail: ' Downloads/invoice.txt ' },
        { tool: 'mail_read', detail: 'id 42', call_id: 'call_3' },
        { tool: 'web_fetch' },
        { tool: '' } as any,
      ]),
    ).toEqual(['mail_read (id 42)', 'read_file (Downloads/invoice.txt)', 'web_fetch']);
    expect(taintLabels(undefined)).toEqual([]);
  });
});

describe('ApprovalCard taint warning', () => {
  it('says the turn read untrusted content, names it, and why approval is needed', () => {
    const { wrap } = withApp({});
    wrap(<ApprovalCard req={{ ...req, tainted_by: [{ tool: 'mail_read', detail: 'id 42', call_id: 'call_1', at: '2026-12-02T09:59:00Z' }] }} />);
    const note = screen.getByRole('note', { name: 'Untrusted content' });
    expect(note.textContent).toContain('This turn read untrusted content');
    expect(note.textContent).toContain('mail_read (id 42)');
    expect(note.textContent).toMatch(/needs your approval even if a rule would allow it/);
    // Shown before the decision buttons, so it is read first.
    const approve = screen.getByRole('button', { name: /^Approve$/ });
    expect(note.compareDocumentPosition(approve) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });

  it('lists every source once', () => {
    const { wrap } = withApp({});
    wrap(
      <ApprovalCard
        req={{
          ...req,
          tainted_by: [
            { tool: 'mail_read', detail: 'id 42' },
            { tool: 'web_fetch', detail: 'https://evil.example/x' },
            { tool: 'mail_read', detail: 'id 42' },
          ],
        }}
      />,
    );
    const codes = [...screen.getByRole('note', { name: 'Untrusted content' }).querySelectorAll('code')].map((c) => c.textContent);
    expect(codes).toEqual(['mail_read (id 42)', 'web_fetch (https://evil.example/x)']);
  });

  it('shows no warning for an untainted turn', () => {
    const { wrap } = withApp({});
    wrap(<ApprovalCard req={{ ...req, tainted_by: [] }} />);
    expect(screen.queryByRole('note', { name: 'Untrusted content' })).toBeNull();
    expect(screen.queryByText(/untrusted content:/)).toBeNull();
  });
});

const chat = { id: 'c_1', title: 'Budget', created_at: '', updated_at: '' };
const messages: Message[] = [{ id: 'm_1', chat_id: 'c_1', seq: 1, role: 'user', content: 'Summarise my mail', turn_id: 't_1', created_at: '' }];
const budgetFail = {
  type: 'turn.finished',
  chat_id: 'c_1',
  data: {
    result: {
      turn_id: 't_1',
      chat_id: 'c_1',
      ok: false,
      error: { code: 'budget_exceeded', message: 'model budget reached: the daily cap of $2.00 (spent $2.04)' },
    },
  },
};

async function failedChat(post: () => Response) {
  const t = withApp({
    'GET /api/chats/c_1': () => json({ chat, messages }),
    'GET /api/approvals': () => json({ approvals: [] }),
    'POST /api/chats/c_1/messages': post,
  });
  t.app.data.set((s) => loadChat(openView(s, 'c_1'), chat, messages));
  t.wrap(<ChatPage id="c_1" />);
  await tick(10);
  t.app.data.set((s) => applyEvent(s, budgetFail));
  await tick(10);
  return t;
}

describe('budget_exceeded turn', () => {
  it('shows the reason and continues with retry + over_budget, not a resend of the text', async () => {
    const { calls } = await failedChat(() => json({ turn_id: 't_2', chat_id: 'c_1', position: 0 }, 202));
    const alert = screen.getByRole('alert');
    expect(alert.textContent).toContain('the daily cap of $2.00 (spent $2.04)');
    expect(screen.queryByRole('button', { name: 'Retry' })).toBeNull();
    expect(screen.getByRole('link', { name: 'See the caps' }).getAttribute('href')).toBe('/usage');
    fireEvent.click(screen.getByRole('button', { name: 'Continue over budget' }));
    await waitFor(() => expect(calls.some((c) => c.method === 'POST')).toBe(true));
    const posts = calls.filter((c) => c.method === 'POST');
    expect(posts).toHaveLength(1);
    expect(await posts[0].clone().json()).toEqual({ text: '', retry: true, over_budget: true });
  });

  it('says so when there is nothing left to continue', async () => {
    const { app } = await failedChat(() => json({ error: { code: 'nothing_to_retry', message: 'the last turn already has its reply' } }, 409));
    fireEvent.click(screen.getByRole('button', { name: 'Continue over budget' }));
    await waitFor(() => expect(app.ui.get().toasts.length).toBe(1));
    expect(app.ui.get().toasts[0]).toMatchObject({ kind: 'info', text: expect.stringMatching(/nothing to continue/) });
  });
});

describe('retryable turn error', () => {
  it('Retry re-runs the stored turn instead of sending the text again', async () => {
    const again = withApp({
      'GET /api/chats/c_1': () => json({ chat, messages }),
      'GET /api/approvals': () => json({ approvals: [] }),
      'POST /api/chats/c_1/messages': () => json({ turn_id: 't_2', chat_id: 'c_1', position: 0 }, 202),
    });
    again.app.data.set((st) => loadChat(openView(st, 'c_1'), chat, messages));
    again.wrap(<ChatPage id="c_1" />);
    await tick(10);
    again.app.data.set((st) =>
      applyEvent(st, { ...budgetFail, data: { result: { ...budgetFail.data.result, error: { code: 'model_error', message: 'provider broke' } } } }),
    );
    await tick(10);
    fireEvent.click(screen.getByRole('button', { name: 'Retry' }));
    await waitFor(() => expect(again.calls.some((c) => c.method === 'POST')).toBe(true));
    const posts = again.calls.filter((c) => c.method === 'POST');
    expect(posts).toHaveLength(1);
    expect(await posts[0].clone().json()).toEqual({ text: '', retry: true });
  });
});

const budget: BudgetStatus = {
  enabled: true,
  warn_percent: 80,
  caps: [
    { period: 'day', metric: 'cost_usd', limit: 2, used: 1.7, percent: 85, state: 'warning', since: '2026-12-02T00:00:00Z', resets: '2026-12-03T00:00:00Z' },
    { period: 'month', metric: 'tokens', limit: 1_000_000, used: 1_020_000, percent: 102, state: 'exceeded', resets: '2027-01-01T00:00:00Z' },
  ],
  day: { cost_usd: 1.7, tokens: 120_000 },
  month: { cost_usd: 9.1, tokens: 1_020_000 },
};

describe('BudgetPanel', () => {
  it('shows each cap with spend, limit, percent, state and reset', () => {
    render(<BudgetPanel b={budget} now={Date.parse('2026-12-02T19:00:00Z')} />);
    const caps = [...document.querySelectorAll('.cap')];
    expect(caps.map((c) => c.className)).toEqual(['cap cap-warning', 'cap cap-exceeded']);
    expect(caps[0].textContent).toContain('Daily cost');
    expect(caps[0].textContent).toContain('$1.70 of $2.00 · 85 %');
    expect(caps[0].textContent).toContain('over 80 %');
    expect(caps[0].textContent).toContain('resets in 5 h');
    expect(caps[1].textContent).toContain('Monthly tokens');
    expect(caps[1].textContent).toContain('1.0M of 1.0M · 102 %');
    expect(caps[1].textContent).toContain('reached');
    // The bar is full, not wider than its track.
    expect(screen.getAllByRole('progressbar')[1].getAttribute('aria-valuenow')).toBe('100');
    expect(screen.getByText(/Continue over budget/)).toBeTruthy();
  });

  it('says when no caps are set', () => {
    render(<BudgetPanel b={{ enabled: false, caps: [] }} />);
    expect(screen.getByText(/No budget caps are set/)).toBeTruthy();
    expect(document.querySelectorAll('.cap')).toHaveLength(0);
  });
});

describe('UsagePage budget', () => {
  const usage = { period: '7d', totals: { cost: 1, tokens: 10, requests: 1 }, by_day: [], tools: [] };

  it('reads GET /api/budget', async () => {
    const { wrap } = withApp({ 'GET /api/usage': () => json(usage), 'GET /api/budget': () => json(budget) });
    wrap(<UsagePage />);
    await waitFor(() => expect(screen.getByLabelText('Budget caps')).toBeTruthy());
    expect(screen.getByText('$1.70 of $2.00 · 85 %')).toBeTruthy();
  });

  it('hides the panel when the daemon has no budget endpoint', async () => {
    const { wrap, calls } = withApp({
      'GET /api/usage': () => json(usage),
      'GET /api/budget': () => json({ error: { code: 'not_found', message: 'no such endpoint' } }, 404),
    });
    wrap(<UsagePage />);
    await waitFor(() => expect(calls.some((c) => c.url.endsWith('/api/budget'))).toBe(true));
    await tick(10);
    expect(screen.queryByLabelText('Budget caps')).toBeNull();
    expect(screen.queryByRole('alert')).toBeNull();
  });
});
