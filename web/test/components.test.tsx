import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ApprovalRequest, Message } from '../src/api/types';
import { ApprovalCard } from '../src/components/ApprovalCard';
import { ToolCard } from '../src/components/ToolCard';
import { AppContext } from '../src/context';
import { ChatPage } from '../src/pages/Chat';
import { PairPage } from '../src/pages/Pair';
import { SystemPage, SystemView, ToolTable } from '../src/pages/System';
import { UsageView } from '../src/pages/Usage';
import { normaliseUsage } from '../src/lib/usage';
import { App } from '../src/state/app';
import { ApiError } from '../src/api/client';
import { applyEvent, loadChat, openView } from '../src/state/reduce';
import { fakeFetch, json, memTokens, tick } from './helpers';

const req: ApprovalRequest = {
  id: 'a_1',
  kind: 'approval',
  chat_id: 'c_1',
  call_id: 'call_1',
  tool: 'write_file',
  args: { path: '/home/me/x.txt', content: 'hi' },
  risk: 'medium',
  preview: 'write 2 bytes to /home/me/x.txt (new file)',
  reason: 'risk medium is above the auto-approve threshold low',
  schema: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' }, append: { type: 'boolean' }, mode: { type: 'string' } },
    required: ['path', 'content'],
  },
  created_at: '2026-12-02T10:00:00Z',
  expires_at: new Date(Date.now() + 120_000).toISOString(),
};

function withApp(routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const wrap = (node: any) => render(<AppContext.Provider value={app}>{node}</AppContext.Provider>);
  return { app, wrap, calls: ff.calls };
}

async function bodies(calls: Request[], path: string) {
  return Promise.all(calls.filter((c) => new URL(c.url).pathname === path).map((c) => c.clone().json()));
}

describe('ApprovalCard', () => {
  it('shows tool, risk, preview and exact arguments', () => {
    const { wrap } = withApp({});
    wrap(<ApprovalCard req={req} />);
    expect(screen.getByText('Approval needed')).toBeTruthy();
    expect(screen.getByText('medium risk')).toBeTruthy();
    expect(screen.getByText(req.preview!)).toBeTruthy();
    expect(screen.getByText(/"\/home\/me\/x.txt"/)).toBeTruthy();
    expect(screen.getByText(/Denied automatically in \d:\d\d/)).toBeTruthy();
  });

  it('approve-with-edit sends complete arguments and leaves absent optional fields absent', async () => {
    const { wrap, calls } = withApp({ 'POST /api/approvals/a_1': () => json({ id: 'a_1', decision: 'edit' }) });
    wrap(<ApprovalCard req={req} />);
    fireEvent.click(screen.getByText('Edit'));
    const content = screen.getByLabelText('Content') as HTMLTextAreaElement;
    expect(content.value).toBe('hi');
    fireEvent.input(content, { target: { value: 'hello, world' } });
    fireEvent.click(screen.getByText('Run with these changes'));
    await waitFor(async () => expect(await bodies(calls, '/api/approvals/a_1')).toHaveLength(1));
    expect(await bodies(calls, '/api/approvals/a_1')).toEqual([
      { decision: 'edit', args: { path: '/home/me/x.txt', content: 'hello, world' } },
    ]);
  });

  it('shows the daemon’s invalid_args message and stays editable', async () => {
    const { wrap } = withApp({
      'POST /api/approvals/a_1': () => json({ error: { code: 'invalid_args', message: 'field "path" must be absolute' } }, 400),
    });
    wrap(<ApprovalCard req={req} />);
    fireEvent.click(screen.getByText('Edit'));
    fireEvent.click(screen.getByText('Run with these changes'));
    expect(await screen.findByText('field "path" must be absolute')).toBeTruthy();
    expect(screen.getByText('Run with these changes')).toBeTruthy();
  });

  it('deny sends the note; revise requires one', async () => {
    const { wrap, calls } = withApp({ 'POST /api/approvals/a_1': () => json({ id: 'a_1', decision: 'deny' }) });
    wrap(<ApprovalCard req={req} />);
    fireEvent.click(screen.getByText('Ask for revision'));
    expect((screen.getAllByText('Ask for revision').at(-1) as HTMLButtonElement).closest('button')!.disabled).toBe(true);
    fireEvent.click(screen.getByText('Back'));
    fireEvent.click(screen.getByText('Deny'));
    fireEvent.input(screen.getByLabelText(/Why not/), { target: { value: 'not that file' } });
    fireEvent.click(screen.getAllByText('Deny').at(-1)!);
    await waitFor(async () => expect(await bodies(calls, '/api/approvals/a_1')).toEqual([{ decision: 'deny', note: 'not that file' }]));
  });

  it('offers the temporary modes', async () => {
    const { wrap, calls } = withApp({ 'POST /api/approvals/a_1': () => json({ id: 'a_1', decision: 'approve' }) });
    wrap(<ApprovalCard req={req} />);
    fireEvent.click(screen.getByLabelText('More approve options'));
    fireEvent.click(screen.getByText(/for 10 minutes/));
    await waitFor(async () => expect(await bodies(calls, '/api/approvals/a_1')).toEqual([{ decision: 'approve', mode: 'allow_10m' }]));
  });

  it('a conflict (decided elsewhere) resolves the card instead of erroring', async () => {
    const { app, wrap } = withApp({
      'POST /api/approvals/a_1': () => json({ error: { code: 'conflict', message: 'already decided' } }, 409),
    });
    app.data.set((s) => applyEvent(s, { type: 'approval.requested', data: { approval: req } }));
    wrap(<ApprovalCard req={req} />);
    fireEvent.click(screen.getByText('Approve'));
    await waitFor(() => expect(app.data.get().resolved.a_1).toBeTruthy());
    expect(app.ui.get().toasts.map((t) => t.text)).toEqual(['This request was already decided.']);
  });
});

describe('ToolCard', () => {
  const call = { id: 'call_1', name: 'write_file', arguments: { path: 'x.txt' } };
  const toolMsg = (tool: Message['tool'], content = ''): Message => ({
    id: 'm_3', chat_id: 'c_1', seq: 3, role: 'tool', tool_call_id: 'call_1', content, created_at: '', tool,
  });

  it('shows NOT DONE for a denied call', () => {
    const { wrap } = withApp({});
    wrap(<ToolCard call={call} result={toolMsg({ decision: 'denied', status: 'not_run' })} turnRunning={false} />);
    expect(screen.getByText('NOT DONE')).toBeTruthy();
    expect(screen.getByText('denied by you')).toBeTruthy();
  });

  it('expands to show the input that ran, the model’s request and the output', () => {
    const { wrap } = withApp({});
    wrap(
      <ToolCard
        call={call}
        result={toolMsg({ decision: 'edited', status: 'ok', input: { path: 'x.txt' }, effective_input: { path: 'y.txt' }, duration_ms: 12 }, 'wrote 5 bytes')}
        turnRunning={false}
      />,
    );
    expect(screen.getByText('Done with your edits')).toBeTruthy();
    expect(screen.getByText('12 ms')).toBeTruthy();
    fireEvent.click(screen.getByText('Write file'));
    expect(screen.getByText(/"y.txt"/)).toBeTruthy();
    expect(screen.getByText(/"x.txt"/)).toBeTruthy();
    expect(screen.getByText('wrote 5 bytes')).toBeTruthy();
  });
});

describe('ChatPage', () => {
  it('renders the transcript, a streaming reply, a pending approval and the queue', async () => {
    const chat = { id: 'c_1', title: 'Notes', created_at: '', updated_at: '' };
    const messages: Message[] = [
      { id: 'm_1', chat_id: 'c_1', seq: 1, role: 'user', content: 'Write a note', turn_id: 't_1', created_at: '' },
      { id: 'm_2', chat_id: 'c_1', seq: 2, role: 'assistant', content: 'Sure.', turn_id: 't_1', created_at: '', tool_calls: [{ id: 'call_1', name: 'write_file', arguments: req.args! }] },
    ];
    const { app, wrap } = withApp({
      'GET /api/chats/c_1': () => json({ chat, messages }),
      'GET /api/approvals': () => json({ approvals: [req] }),
    });
    app.data.set((s) => loadChat(openView(s, 'c_1'), chat, messages));
    wrap(<ChatPage id="c_1" />);
    await tick(10);
    app.data.set((s) => applyEvent(s, { type: 'turn.started', chat_id: 'c_1', data: { turn_id: 't_1' } }));
    app.data.set((s) => applyEvent(s, { type: 'turn.queued', chat_id: 'c_1', data: { turn_id: 't_2', position: 1 } }));
    app.data.set((s) => applyEvent(s, { type: 'message.delta', chat_id: 'c_1', data: { turn_id: 't_1', step: 1, text: 'Writing **now**' } }));
    await tick(10);
    expect(screen.getByText('Write a note')).toBeTruthy();
    expect(screen.getByText('Sure.')).toBeTruthy();
    expect(screen.getByText('Approval needed')).toBeTruthy();
    expect(screen.getByText('Waiting for approval')).toBeTruthy();
    expect(screen.getByText('now').tagName).toBe('STRONG');
    expect(screen.getByLabelText('Waiting to send').textContent).toContain('A message');
    expect(screen.getByLabelText('Stop')).toBeTruthy();
  });

  it('sends with Enter and keeps the text when sending fails', async () => {
    const { wrap, calls } = withApp({
      'GET /api/chats/c_1': () => json({ chat: { id: 'c_1', title: 'x', created_at: '', updated_at: '' }, messages: [] }),
      'GET /api/approvals': () => json({ approvals: [] }),
      'POST /api/chats/c_1/messages': () => json({ error: { code: 'queue_full', message: 'too many messages waiting' } }, 429),
    });
    wrap(<ChatPage id="c_1" />);
    const box = screen.getByLabelText('Message') as HTMLTextAreaElement;
    fireEvent.input(box, { target: { value: 'hello' } });
    fireEvent.keyDown(box, { key: 'Enter' });
    await waitFor(() => expect(calls.some((c) => c.method === 'POST')).toBe(true));
    await tick(10);
    expect(box.value).toBe('hello');
  });
});

describe('PairPage', () => {
  beforeEach(() => sessionStorage.clear());

  const started = { request: 'r'.repeat(32), expires_at: new Date(Date.now() + 120_000).toISOString(), ttl_seconds: 120, code_length: 8, attempts: 3 };

  it('falls back to the token form when local pairing is refused, and checks the token', async () => {
    const { app, wrap } = withApp({
      'POST /api/pair/local/start': () => json({ error: { code: 'not_local', message: 'no' } }, 403),
      'GET /api/chats': (r) => (r.headers.get('Authorization') === 'Bearer good' ? json({ chats: [] }) : json({ error: { code: 'unauthorized', message: 'x' } }, 401)),
    });
    app.unpaired();
    wrap(<PairPage />);
    const input = (await screen.findByLabelText('Access token or pairing code')) as HTMLInputElement;
    fireEvent.input(input, { target: { value: 'bad' } });
    fireEvent.click(screen.getByText('Connect'));
    expect(await screen.findByText('That token was not accepted by the daemon.')).toBeTruthy();
    fireEvent.input(input, { target: { value: 'good' } });
    fireEvent.click(screen.getByText('Connect'));
    await waitFor(() => expect(app.client.tokens.get()).toBe('good'));
    app.stop();
  });

  it('exchanges a pairing code from the link', async () => {
    const { app, wrap, calls } = withApp({ 'POST /api/pair/exchange': () => json({ token: 'from-code' }) });
    app.unpaired();
    wrap(<PairPage code="ABCD2345XY" />);
    await waitFor(() => expect(app.client.tokens.get()).toBe('from-code'));
    expect(await bodies(calls, '/api/pair/exchange')).toEqual([{ code: 'ABCD2345XY' }]);
    app.stop();
  });

  it('takes a code from `hestia pair` typed in the manual form', async () => {
    const { app, wrap, calls } = withApp({
      'POST /api/pair/local/start': () => json({ error: { code: 'local_pairing_off', message: 'no' } }, 403),
      'POST /api/pair/exchange': () => json({ token: 'from-typed-code' }),
    });
    app.unpaired();
    wrap(<PairPage />);
    const input = (await screen.findByLabelText('Access token or pairing code')) as HTMLInputElement;
    fireEvent.input(input, { target: { value: 'abcd-2345 xy' } });
    fireEvent.click(screen.getByText('Connect'));
    await waitFor(() => expect(app.client.tokens.get()).toBe('from-typed-code'));
    expect(await bodies(calls, '/api/pair/exchange')).toEqual([{ code: 'ABCD2345XY' }]);
    app.stop();
  });

  it('on the same machine asks for the code the daemon printed, and never gets a token without it', async () => {
    const { app, wrap, calls } = withApp({
      'POST /api/pair/local/start': () => json(started, 202),
      'POST /api/pair/local': async (r) => {
        const b = (await r.clone().json()) as { code: string };
        return b.code === 'ABCD-EFGH'
          ? json({ token: 'local-token' })
          : json({ error: { code: 'invalid_code', message: "that is not the code for this browser's request; 2 attempts left" } }, 403);
      },
    });
    app.unpaired();
    wrap(<PairPage />);
    const input = (await screen.findByLabelText('Pairing code')) as HTMLInputElement;
    expect(screen.getByText(/hestia pair --local/)).toBeTruthy();
    expect(app.client.tokens.get()).toBe(null);
    fireEvent.input(input, { target: { value: 'WRONG' } });
    fireEvent.click(screen.getByText('Pair this browser'));
    expect(await screen.findByText(/2 attempts left/)).toBeTruthy();
    expect(app.client.tokens.get()).toBe(null);
    fireEvent.input(input, { target: { value: 'ABCD-EFGH' } });
    fireEvent.click(screen.getByText('Pair this browser'));
    await waitFor(() => expect(app.client.tokens.get()).toBe('local-token'));
    expect(await bodies(calls, '/api/pair/local')).toEqual([
      { request: started.request, code: 'WRONG' },
      { request: started.request, code: 'ABCD-EFGH' },
    ]);
    expect(sessionStorage.length).toBe(0);
    app.stop();
  });

  it('offers a new code when the request is used up, and a reload keeps the open request', async () => {
    let starts = 0;
    const { app, wrap } = withApp({
      'POST /api/pair/local/start': () => {
        starts++;
        return json({ ...started, request: String(starts).repeat(32) }, 202);
      },
      'POST /api/pair/local': () => json({ error: { code: 'pairing_request_void', message: 'too many wrong codes; ask for a new code' } }, 403),
    });
    app.unpaired();
    const first = wrap(<PairPage />);
    await screen.findByLabelText('Pairing code');
    first.unmount();
    // A reload reuses the open request: no second code is printed.
    wrap(<PairPage />);
    const input = (await screen.findByLabelText('Pairing code')) as HTMLInputElement;
    expect(starts).toBe(1);
    fireEvent.input(input, { target: { value: 'XXXX-XXXX' } });
    fireEvent.click(screen.getByText('Pair this browser'));
    expect(await screen.findByText('too many wrong codes; ask for a new code')).toBeTruthy();
    expect(input.disabled).toBe(true);
    fireEvent.click(screen.getByText('Get a new code'));
    await screen.findByText('Pair this browser');
    expect(starts).toBe(2);
    expect(input.disabled).toBe(false);
    app.stop();
  });
});

describe('pages', () => {
  it('usage calls out unlabelled spend', () => {
    const { wrap } = withApp({});
    wrap(<UsageView u={normaliseUsage({ totals: { cost_usd: 2 }, by_service: [{ service: '', cost_usd: 0.5, tokens: 10 }] })} />);
    expect(screen.getByText(/did not say which/)).toBeTruthy();
    expect(screen.getByText('$2.00')).toBeTruthy();
  });

  it('system view shows checks and the tool inventory decisions', () => {
    const { wrap } = withApp({});
    wrap(
      <>
        <SystemView sys={{ version: '1.2.3', uptime_seconds: 65, data_dir: '/h', checks: [{ name: 'store.chat', status: 'ok', detail: 'integrity ok' }, { name: 'llm.endpoint', status: 'fail', detail: 'connection refused' }] }} />
        <ToolTable tools={[{ name: 'read_file', risk: 'low', decision: 'allow', decision_source: 'threshold' }, { name: 'write_file', risk: 'medium', decision: 'gate' }]} />
      </>,
    );
    expect(screen.getByText('1 min 5 s')).toBeTruthy();
    expect(screen.getByText('connection refused')).toBeTruthy();
    expect(screen.getByText('Runs')).toBeTruthy();
    expect(screen.getByText('Asks you')).toBeTruthy();
  });

  it('system view shows the runtime: heap, streams, workers and route latency', () => {
    const { wrap } = withApp({});
    const runtime = {
      goroutines: 42, heap_alloc_bytes: 5 * 1024 * 1024, sys_bytes: 20 * 1024 * 1024,
      events: { subscribers: 2, approvers: 1, shed_total: 3 },
      workers: [{ name: 'agent', state: 'running', restarts: 0 }, { name: 'mail-sync', state: 'restarting', restarts: 2, last_error: 'imap: connection reset' }],
      routes: [{ route: 'GET /api/chats', method: 'GET', count: 7, errors: 1, p50_ms: 2.5, p95_ms: 25, max_ms: 31 }],
    };
    wrap(<SystemView sys={{ version: '1', checks: [], runtime }} />);
    // Diagnostics run long: they start closed.
    const diag = screen.getByText('Diagnostics').closest('details') as HTMLDetailsElement;
    expect(diag.open).toBe(false);
    expect(diag.textContent).toContain('GET /api/chats');
    expect(screen.getByText('42')).toBeTruthy();
    expect(screen.getByText('5.0 MiB')).toBeTruthy();
    expect(screen.getByText(/3 dropped as too slow/)).toBeTruthy();
    expect(screen.getByText(/2 restarts · imap: connection reset/)).toBeTruthy();
    expect(screen.getByText('GET /api/chats')).toBeTruthy();
    expect(screen.getByText('2.5')).toBeTruthy();
  });
});

describe('SystemPage', () => {
  it('puts devices first and the tool table closed', async () => {
    const { wrap } = withApp({
      'GET /api/system': () => json({ version: '1', checks: [], runtime: { goroutines: 3 } }),
      'GET /api/tools': () => json({ tools: [{ name: 'read_file', risk: 'low', decision: 'allow' }] }),
      'GET /api/devices': () => json({ devices: [] }),
    });
    wrap(<SystemPage />);
    await screen.findByText('Diagnostics');
    const page = document.querySelector('.page') as HTMLElement;
    const blocks = [...page.children].map((el) => el.textContent ?? '');
    const devices = blocks.findIndex((t) => /Devices/.test(t));
    const daemon = blocks.findIndex((t) => /Running/.test(t));
    expect(devices).toBeGreaterThan(0);
    expect(devices).toBeLessThan(daemon);
    for (const d of page.querySelectorAll('details.diagnostics')) expect((d as HTMLDetailsElement).open).toBe(false);
    expect(page.querySelectorAll('details.diagnostics').length).toBe(2);
  });
});

describe('App errors', () => {
  it('does not toast network failures while reconnecting, but does when live', () => {
    const app = new App({ tokens: memTokens('tok'), fetch: (async () => new Response()) as typeof fetch });
    app.ui.set((u) => ({ ...u, conn: 'reconnecting' }));
    app.error(new ApiError(0, 'network', 'Cannot reach the Hestia daemon. Is it running?'));
    expect(app.ui.get().toasts).toEqual([]);
    app.ui.set((u) => ({ ...u, conn: 'live' }));
    app.error(new ApiError(0, 'network', 'Cannot reach the Hestia daemon. Is it running?'), () => {});
    expect(app.ui.get().toasts.map((t) => [t.kind, !!t.retry])).toEqual([['error', true]]);
    app.error(new ApiError(409, 'conflict', 'already'), () => {});
    expect(app.ui.get().toasts.at(-1)?.retry).toBeUndefined();
  });
});

describe('failed turns', () => {
  it('toast with Retry only for chats not on screen', () => {
    const app = new App({ tokens: memTokens('tok'), fetch: (async () => new Response()) as typeof fetch });
    const msgs: Message[] = [{ id: 'm_1', chat_id: 'c_2', seq: 1, role: 'user', content: 'hi', turn_id: 't_1', created_at: '' }];
    app.data.set((s) => loadChat(openView(s, 'c_2'), { id: 'c_2', title: '', created_at: '', updated_at: '' }, msgs));
    const fail = { type: 'turn.finished', chat_id: 'c_2', data: { result: { turn_id: 't_1', chat_id: 'c_2', ok: false, error: { code: 'model_error', message: 'provider down' } } } };
    app.ui.set((u) => ({ ...u, current: 'c_2' }));
    (app as any).onEvent(fail);
    expect(app.ui.get().toasts).toEqual([]);
    app.ui.set((u) => ({ ...u, current: 'c_1' }));
    (app as any).onEvent({ ...fail, seq: 2 });
    expect(app.ui.get().toasts.map((t) => [t.text, !!t.retry])).toEqual([['provider down', true]]);
  });
});
