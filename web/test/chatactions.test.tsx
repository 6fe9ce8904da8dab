// The composer's choice when an approval waits, the queued-message list,
// per-message copy / regenerate / edit-and-resend, and the reducer steps
// behind them.
import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ApprovalRequest, Message } from '../src/api/types';
import { AppContext } from '../src/context';
import { ChatPage } from '../src/pages/Chat';
import { App } from '../src/state/app';
import { applyEvent, emptyView, loadChat, loadStatus, openView, supersededBy } from '../src/state/reduce';
import { fakeFetch, json, memTokens, tick } from './helpers';

const chat = { id: 'c_1', title: 'Notes', created_at: '', updated_at: '' };
const pendingReq: ApprovalRequest = {
  id: 'a_1',
  kind: 'approval',
  chat_id: 'c_1',
  turn_id: 't_1',
  call_id: 'call_1',
  tool: 'write_file',
  args: { path: '/home/me/x.txt', content: 'hi' },
  risk: 'medium',
  preview: 'write 2 bytes',
  created_at: '2026-12-02T10:00:00Z',
  expires_at: new Date(Date.now() + 120_000).toISOString(),
};
const msg = (id: string, seq: number, role: Message['role'], content: string, extra: Partial<Message> = {}): Message => ({
  id,
  chat_id: 'c_1',
  seq,
  role,
  content,
  turn_id: `t_${Math.ceil(seq / 2)}`,
  created_at: '',
  ...extra,
});

function withApp(routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const wrap = (node: any) => render(<AppContext.Provider value={app}>{node}</AppContext.Provider>);
  return { app, wrap, calls: ff.calls };
}

async function bodies(calls: Request[], method: string, path: string) {
  return Promise.all(calls.filter((c) => c.method === method && new URL(c.url).pathname === path).map((c) => c.clone().text().then((t) => (t ? JSON.parse(t) : null))));
}

afterEach(() => vi.restoreAllMocks());

describe('sending while an approval waits', () => {
  const messages = [msg('m_1', 1, 'user', 'Write a note'), msg('m_2', 2, 'assistant', '', { tool_calls: [{ id: 'call_1', name: 'write_file', arguments: pendingReq.args! }] })];
  function setup() {
    const h = withApp({
      'GET /api/chats/c_1': () => json({ chat, messages }),
      'GET /api/approvals': () => json({ approvals: [pendingReq] }),
      'GET /api/chats/c_1/status': () => json({ running: true, turn_id: 't_1', queued: 0, queued_turns: [] }),
      'POST /api/chats/c_1/messages': () => json({ turn_id: 't_9', chat_id: 'c_1', position: 1 }, 202),
      'POST /api/approvals/a_1': () => json({ id: 'a_1', decision: 'deny' }),
    });
    h.wrap(<ChatPage id="c_1" />);
    return h;
  }
  async function typeAndSend(text: string) {
    const box = (await screen.findByLabelText('Message')) as HTMLTextAreaElement;
    await screen.findByText('Approval needed');
    fireEvent.input(box, { target: { value: text } });
    fireEvent.keyDown(box, { key: 'Enter' });
    return box;
  }

  it('asks first instead of silently skipping the call, and "Decide first" sends nothing', async () => {
    const { calls } = setup();
    const box = await typeAndSend('actually, stop');
    const choice = await screen.findByRole('alertdialog');
    expect(choice.textContent).toContain('waiting for your decision on Write file');
    fireEvent.click(screen.getByText('Decide first'));
    await tick(10);
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(calls.filter((c) => c.method === 'POST')).toHaveLength(0);
    expect(box.value).toBe('actually, stop');
  });

  it('"Send after this turn" queues the message and keeps the approval', async () => {
    const { calls } = setup();
    const box = await typeAndSend('and then summarise');
    fireEvent.click(await screen.findByText('Send after this turn'));
    await waitFor(() => expect(box.value).toBe(''));
    expect(await bodies(calls, 'POST', '/api/chats/c_1/messages')).toEqual([{ text: 'and then summarise', queue: true }]);
    expect(calls.some((c) => c.url.includes('/api/approvals/a_1') && c.method === 'POST')).toBe(false);
  });

  it('"Deny and send now" records the denial, then sends (interrupting)', async () => {
    const { calls } = setup();
    const box = await typeAndSend('do something else');
    fireEvent.click(await screen.findByText('Deny and send now'));
    await waitFor(() => expect(box.value).toBe(''));
    const posts = calls.filter((c) => c.method === 'POST').map((c) => new URL(c.url).pathname);
    expect(posts).toEqual(['/api/approvals/a_1', '/api/chats/c_1/messages']);
    expect((await bodies(calls, 'POST', '/api/approvals/a_1'))[0]).toMatchObject({ decision: 'deny' });
    expect(await bodies(calls, 'POST', '/api/chats/c_1/messages')).toEqual([{ text: 'do something else' }]);
  });
});

describe('queued messages', () => {
  it('are listed from the daemon status (a reload) and from events, and can be cancelled', async () => {
    const { app, wrap, calls } = withApp({
      'GET /api/chats/c_1': () => json({ chat, messages: [msg('m_1', 1, 'user', 'hi')] }),
      'GET /api/approvals': () => json({ approvals: [] }),
      'GET /api/chats/c_1/status': () => json({ running: true, turn_id: 't_1', queued: 1, queued_turns: [{ turn_id: 't_2', text: 'first queued' }] }),
      'DELETE /api/chats/c_1/queue/t_2': () => json({ cancelled: true }),
    });
    wrap(<ChatPage id="c_1" />);
    expect(await screen.findByText('first queued')).toBeTruthy();
    app.data.set((s) => applyEvent(s, { type: 'turn.queued', chat_id: 'c_1', data: { turn_id: 't_3', position: 2, text: 'second queued' } }));
    expect(await screen.findByText('second queued')).toBeTruthy();
    fireEvent.click(within(screen.getByText('first queued').closest('li') as HTMLElement).getByText('Cancel'));
    await waitFor(() => expect(calls.some((c) => c.method === 'DELETE' && c.url.endsWith('/api/chats/c_1/queue/t_2'))).toBe(true));
    // The daemon answers with turn.finished (cancelled): the row goes.
    app.data.set((s) =>
      applyEvent(s, { type: 'turn.finished', chat_id: 'c_1', data: { result: { turn_id: 't_2', chat_id: 'c_1', ok: false, error: { code: 'cancelled', message: 'x' } } } }),
    );
    await waitFor(() => expect(screen.queryByText('first queued')).toBeNull());
    expect(screen.getByText('second queued')).toBeTruthy();
  });

  it('a replayed turn.queued for a turn that already ended is ignored', () => {
    let s = openView({ chats: [], chatsLoaded: false, views: {}, approvals: {}, resolved: {} }, 'c_1');
    s = applyEvent(s, { type: 'turn.finished', chat_id: 'c_1', data: { result: { turn_id: 't_2', chat_id: 'c_1', ok: true } } });
    s = applyEvent(s, { type: 'turn.queued', chat_id: 'c_1', data: { turn_id: 't_2', text: 'x' } });
    expect(s.views.c_1.queued).toEqual([]);
    s = loadStatus(s, 'c_1', { running: false, queued: 0, queued_turns: [] });
    expect(s.views.c_1.queued).toEqual([]);
  });
});

describe('message actions', () => {
  const messages = [
    msg('m_1', 1, 'user', 'first question'),
    msg('m_2', 2, 'assistant', 'first answer'),
    msg('m_3', 3, 'user', 'second question'),
    msg('m_4', 4, 'assistant', 'second answer'),
  ];
  function setup() {
    // The fake daemon supersedes like the real one: after an edit or a
    // regenerate the transcript it returns no longer has those messages.
    let live = messages;
    const h = withApp({
      'GET /api/chats/c_1': () => json({ chat, messages: live }),
      'GET /api/approvals': () => json({ approvals: [] }),
      'GET /api/chats/c_1/status': () => json({ running: false, queued: 0, queued_turns: [] }),
      'POST /api/chats/c_1/messages': async (r) => {
        const b = await r.clone().json();
        if (b.regenerate) live = live.slice(0, 3);
        if (b.edit_of) live = live.slice(0, live.findIndex((m) => m.id === b.edit_of));
        return json({ turn_id: 't_9', chat_id: 'c_1', position: 0 }, 202);
      },
    });
    h.wrap(<ChatPage id="c_1" />);
    return h;
  }

  it('copies a reply and a user message as plain text', async () => {
    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    setup();
    await screen.findByText('second answer');
    fireEvent.click(screen.getAllByLabelText('Copy reply')[1]);
    fireEvent.click(screen.getAllByLabelText('Copy what you wrote')[0]);
    await waitFor(() => expect(writeText).toHaveBeenCalledTimes(2));
    expect(writeText.mock.calls.map((c: unknown[]) => c[0])).toEqual(['second answer', 'first question']);
  });

  it('offers Regenerate on the last reply only, and it drops the old reply', async () => {
    const { app, calls } = setup();
    await screen.findByText('second answer');
    expect(screen.getAllByLabelText('Regenerate reply')).toHaveLength(1);
    fireEvent.click(screen.getByLabelText('Regenerate reply'));
    await waitFor(() => expect(screen.queryByText('second answer')).toBeNull());
    expect(await bodies(calls, 'POST', '/api/chats/c_1/messages')).toEqual([{ regenerate: true }]);
    expect(app.data.get().views.c_1.messages.map((m) => m.id)).toEqual(['m_1', 'm_2', 'm_3']);
  });

  it('edits a user message in place and sends it as edit_of, dropping what followed', async () => {
    const { app, calls } = setup();
    await screen.findByText('first question');
    fireEvent.click(screen.getAllByLabelText('Edit and resend')[0]);
    const box = screen.getByLabelText('Edited text') as HTMLTextAreaElement;
    expect(box.value).toBe('first question');
    fireEvent.input(box, { target: { value: 'first question, better' } });
    fireEvent.click(screen.getByText('Save and send'));
    await waitFor(() => expect(app.data.get().views.c_1.messages).toHaveLength(0));
    expect(await bodies(calls, 'POST', '/api/chats/c_1/messages')).toEqual([{ text: 'first question, better', edit_of: 'm_1' }]);
  });

  it('disables edit and regenerate while a turn runs', async () => {
    const { app } = setup();
    await screen.findByText('second answer');
    app.data.set((s) => applyEvent(s, { type: 'turn.started', chat_id: 'c_1', data: { turn_id: 't_5' } }));
    await waitFor(() => expect((screen.getByLabelText('Regenerate reply') as HTMLButtonElement).disabled).toBe(true));
    for (const b of screen.getAllByLabelText('Edit and resend')) expect((b as HTMLButtonElement).disabled).toBe(true);
  });
});

describe('supersededBy and chat.rewound', () => {
  const v = { ...emptyView(), messages: [msg('m_1', 1, 'user', 'a'), msg('m_2', 2, 'assistant', 'b'), msg('m_3', 3, 'user', 'c'), msg('m_4', 4, 'tool', 'd'), msg('m_5', 5, 'assistant', 'e')] };
  it('names what an edit or a regenerate replaces', () => {
    expect(supersededBy(v, 'm_3')).toEqual(['m_3', 'm_4', 'm_5']);
    expect(supersededBy(v)).toEqual(['m_4', 'm_5']);
    expect(supersededBy(v, 'm_missing')).toEqual([]);
    expect(supersededBy(emptyView())).toEqual([]);
  });
  it('drops superseded messages on the event, idempotently', () => {
    let s = loadChat(openView({ chats: [], chatsLoaded: false, views: {}, approvals: {}, resolved: {} }, 'c_1'), chat, v.messages);
    const ev = { type: 'chat.rewound', chat_id: 'c_1', data: { message_ids: ['m_4', 'm_5'] } };
    s = applyEvent(s, ev);
    const once = s;
    s = applyEvent(s, ev);
    expect(s).toBe(once);
    expect(s.views.c_1.messages.map((m) => m.id)).toEqual(['m_1', 'm_2', 'm_3']);
  });
});

describe('speech buttons follow the daemon', () => {
  const messages = [msg('m_1', 1, 'user', 'hello'), msg('m_2', 2, 'assistant', 'Hi there.')];
  for (const speech of [undefined, { stt: false, tts: false }, { stt: true, tts: true }]) {
    it(`speech ${JSON.stringify(speech)}`, async () => {
      Object.defineProperty(globalThis, 'MediaRecorder', { value: class {}, configurable: true });
      Object.defineProperty(navigator, 'mediaDevices', { value: { getUserMedia: () => Promise.reject(new Error('no')) }, configurable: true });
      const h = withApp({
        'GET /api/chats/c_1': () => json({ chat, messages }),
        'GET /api/approvals': () => json({ approvals: [] }),
        'GET /api/chats/c_1/status': () => json({ running: false, queued: 0, queued_turns: [] }),
      });
      h.app.ui.set((u) => ({ ...u, speech }));
      h.wrap(<ChatPage id="c_1" />);
      await screen.findByText('Hi there.');
      const on = !!speech?.tts;
      expect(!!screen.queryByRole('button', { name: /read aloud/i })).toBe(on);
      expect(!!screen.queryByRole('button', { name: /record a voice note/i })).toBe(!!speech?.stt);
    });
  }
});
