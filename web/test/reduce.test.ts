import { describe, expect, it } from 'vitest';
import type { Chat, Message, StreamEvent } from '../src/api/types';
import { applyEvent, clearLive, initialState, loadApprovals, loadChat, loadChats, loadStatus, mergeMessages, openView, placeToolCalls, toolKey, type State } from '../src/state/reduce';

const chat: Chat = { id: 'c_1', title: 'Trip', created_at: '2026-12-01T10:00:00Z', updated_at: '2026-12-01T10:00:00Z' };
const msg = (seq: number, role: Message['role'], content: string, extra: Partial<Message> = {}): Message => ({
  id: `m_${seq}`,
  chat_id: 'c_1',
  seq,
  role,
  content,
  turn_id: 't_1',
  created_at: `2026-12-01T10:00:0${seq}Z`,
  ...extra,
});
const ev = (type: string, data: unknown, seq?: number): StreamEvent => ({ type, data, seq, chat_id: 'c_1' });

function opened(): State {
  return loadChat(openView(loadChats(initialState, [chat]), 'c_1'), chat, [msg(1, 'user', 'hi')]);
}

describe('reduce', () => {
  it('merges messages by id, in seq order, without duplicates', () => {
    const a = [msg(1, 'user', 'a'), msg(3, 'assistant', 'c')];
    const merged = mergeMessages(a, [msg(2, 'assistant', 'b'), msg(1, 'user', 'a'), msg(3, 'assistant', 'c')]);
    expect(merged.map((m) => m.id)).toEqual(['m_1', 'm_2', 'm_3']);
    expect(mergeMessages(merged, [msg(2, 'assistant', 'b')])).toBe(merged);
  });

  it('streams deltas and replaces them with the persisted message', () => {
    let s = opened();
    s = applyEvent(s, ev('turn.started', { turn_id: 't_1' }));
    s = applyEvent(s, ev('message.delta', { turn_id: 't_1', step: 0, text: 'Hel' }));
    s = applyEvent(s, ev('message.delta', { turn_id: 't_1', step: 0, text: 'lo' }));
    expect(s.views.c_1.streaming.t_1.text).toBe('Hello');
    expect(s.views.c_1.running).toBe('t_1');
    s = applyEvent(s, ev('message.created', { message: msg(2, 'assistant', 'Hello') }));
    expect(s.views.c_1.streaming.t_1).toBeUndefined();
    // The next step streams into a fresh buffer.
    s = applyEvent(s, ev('message.delta', { turn_id: 't_1', step: 1, text: 'More' }));
    expect(s.views.c_1.streaming.t_1).toEqual({ step: 1, text: 'More' });
    s = applyEvent(s, ev('turn.finished', { result: { turn_id: 't_1', chat_id: 'c_1', ok: true } }));
    expect(s.views.c_1.running).toBeUndefined();
    expect(s.views.c_1.streaming).toEqual({});
  });

  it('applying the same message event twice is the same as once', () => {
    const once = applyEvent(opened(), ev('message.created', { message: msg(2, 'assistant', 'x') }));
    const twice = applyEvent(once, ev('message.created', { message: msg(2, 'assistant', 'x') }));
    expect(twice).toBe(once);
    expect(twice.views.c_1.messages).toHaveLength(2);
  });

  it('a snapshot after live events does not duplicate them', () => {
    let s = applyEvent(opened(), ev('message.created', { message: msg(2, 'assistant', 'x') }));
    s = loadChat(s, chat, [msg(1, 'user', 'hi'), msg(2, 'assistant', 'x'), msg(3, 'user', 'again')]);
    expect(s.views.c_1.messages.map((m) => m.id)).toEqual(['m_1', 'm_2', 'm_3']);
  });

  it('tracks queued turns', () => {
    let s = opened();
    s = applyEvent(s, ev('turn.started', { turn_id: 't_1' }));
    s = applyEvent(s, ev('turn.queued', { turn_id: 't_2', position: 1 }));
    s = applyEvent(s, ev('turn.queued', { turn_id: 't_2', position: 1 }));
    expect(s.views.c_1.queued).toEqual(['t_2']);
    s = applyEvent(s, ev('turn.started', { turn_id: 't_2' }));
    expect(s.views.c_1.queued).toEqual([]);
    expect(s.views.c_1.running).toBe('t_2');
  });

  it('moves approvals from pending to resolved, live from any client', () => {
    const req = { id: 'a_1', kind: 'approval' as const, chat_id: 'c_1', call_id: 'call_1', tool: 'write_file', created_at: '' };
    let s = applyEvent(opened(), ev('approval.requested', { approval: req }));
    expect(Object.keys(s.approvals)).toEqual(['a_1']);
    s = applyEvent(s, ev('approval.resolved', { id: 'a_1', decision: 'deny', note: 'no' }));
    expect(s.approvals).toEqual({});
    expect(s.resolved.a_1.resolution.note).toBe('no');
    // A late snapshot still listing it must not resurrect it.
    s = loadApprovals(s, [req]);
    expect(s.approvals).toEqual({});
    // Nor a replayed request event.
    s = applyEvent(s, ev('approval.requested', { approval: req }));
    expect(s.approvals).toEqual({});
  });

  it('keeps other chats’ approvals when a chat snapshot arrives', () => {
    const mk = (id: string, chat_id: string) => ({ id, kind: 'approval' as const, chat_id, created_at: '' });
    let s = loadApprovals(initialState, [mk('a_1', 'c_1'), mk('a_2', 'c_2')]);
    s = loadApprovals(s, [], 'c_1');
    expect(Object.keys(s.approvals)).toEqual(['a_2']);
  });

  it('keeps a request that arrived live while the snapshot was in flight', () => {
    const mk = (id: string, chat_id: string) => ({ id, kind: 'approval' as const, chat_id, created_at: '' });
    let s = loadApprovals(opened(), [mk('a_old', 'c_1')]);
    const before = new Set(Object.keys(s.approvals)); // the snapshot is asked for now
    s = applyEvent(s, ev('approval.requested', { approval: mk('a_new', 'c_1') }));
    // The snapshot was taken before a_new existed, and after a_old was decided.
    s = loadApprovals(s, [], 'c_1', before);
    expect(Object.keys(s.approvals)).toEqual(['a_new']);
    s = applyEvent(s, ev('approval.requested', { approval: mk('a_all', 'c_2') }));
    s = loadApprovals(s, [], undefined, new Set(['a_new']));
    expect(Object.keys(s.approvals)).toEqual(['a_all']);
  });

  it('orders chats by last update and drops deleted ones', () => {
    const older = { ...chat, id: 'c_0', updated_at: '2026-11-01T00:00:00Z' };
    let s = loadChats(initialState, [older, chat]);
    expect(s.chats.map((c) => c.id)).toEqual(['c_1', 'c_0']);
    s = applyEvent(s, ev('chat.updated', { chat: { ...older, updated_at: '2026-12-02T00:00:00Z', title: 'Now' } }));
    expect(s.chats.map((c) => c.title)).toEqual(['Now', 'Trip']);
    s = applyEvent(s, ev('chat.deleted', { id: 'c_0' }));
    expect(s.chats.map((c) => c.id)).toEqual(['c_1']);
  });

  it('records live tool progress', () => {
    let s = opened();
    s = applyEvent(s, ev('tool.started', { turn_id: 't_1', call_id: 'k', tool: 'read_file', args: { path: 'a' }, policy: 'allow' }));
    expect(s.views.c_1.tools[toolKey('t_1', 0, 'k')].state).toBe('running');
    s = applyEvent(s, ev('tool.finished', { turn_id: 't_1', call_id: 'k', tool: 'read_file', status: 'ok', decision: 'allowed', duration_ms: 4, output: 'hello' }));
    expect(s.views.c_1.tools[toolKey('t_1', 0, 'k')]).toMatchObject({ state: 'finished', status: 'ok', args: { path: 'a' }, output: 'hello' });
  });

  it('forgets running turns after a daemon restart', () => {
    let s = applyEvent(opened(), ev('turn.started', { turn_id: 't_1' }));
    s = applyEvent(s, ev('message.delta', { turn_id: 't_1', step: 0, text: 'x' }));
    s = clearLive(s);
    expect(s.views.c_1.running).toBeUndefined();
    expect(s.views.c_1.streaming).toEqual({});
  });

  it('ignores events for chats that are not open, and unknown events', () => {
    const s = opened();
    expect(applyEvent(s, { type: 'message.delta', chat_id: 'c_9', data: { turn_id: 't', text: 'x' } })).toBe(s);
    expect(applyEvent(s, ev('something.new', {}))).toBe(s);
  });
});

describe('loadStatus', () => {
  const chat: Chat = { id: 'c1', title: 't', created_at: '', updated_at: '', message_count: 0 } as Chat;
  const opened = () => loadChat(openView(initialState, 'c1'), chat, []);

  it('shows a turn started elsewhere as running (a second tab gets Working… and Stop)', () => {
    const s = loadStatus(opened(), 'c1', { running: true, turn_id: 't9' });
    expect(s.views.c1.running).toBe('t9');
  });

  it('leaves live state alone: idle status, a turn already tracked, or one that already finished', () => {
    expect(loadStatus(opened(), 'c1', { running: false }).views.c1.running).toBeUndefined();
    expect(loadStatus(opened(), 'c1', undefined).views.c1.running).toBeUndefined();
    const tracking = { ...opened() };
    tracking.views = { ...tracking.views, c1: { ...tracking.views.c1, running: 't1' } };
    expect(loadStatus(tracking, 'c1', { running: true, turn_id: 't2' }).views.c1.running).toBe('t1');
    const done = { ...opened() };
    done.views = { ...done.views, c1: { ...done.views.c1, lastResult: { turn_id: 't9', chat_id: 'c1', ok: true } } };
    expect(loadStatus(done, 'c1', { running: true, turn_id: 't9' }).views.c1.running).toBeUndefined();
  });
});

describe('tool cards with reused call ids', () => {
  const chat: Chat = { id: 'c1', title: 't', created_at: '', updated_at: '', message_count: 0 } as Chat;
  const opened = () => loadChat(openView(initialState, 'c1'), chat, []);
  const e = (type: string, data: any) => ({ type, chat_id: 'c1', data });

  it('keeps one card per turn and step when a server reuses call_1', () => {
    let s = opened();
    s = applyEvent(s, e('tool.started', { turn_id: 't1', step: 0, call_id: 'call_1', tool: 'read_file', args: { path: 'a' } }));
    s = applyEvent(s, e('tool.finished', { turn_id: 't1', step: 0, call_id: 'call_1', tool: 'read_file', status: 'ok', output: 'first' }));
    s = applyEvent(s, e('tool.started', { turn_id: 't1', step: 1, call_id: 'call_1', tool: 'list_dir', args: { path: 'b' } }));
    s = applyEvent(s, e('tool.started', { turn_id: 't2', step: 0, call_id: 'call_1', tool: 'search', args: {} }));
    const tools = s.views.c1.tools;
    expect(Object.keys(tools)).toHaveLength(3);
    expect(tools[toolKey('t1', 0, 'call_1')]).toMatchObject({ tool: 'read_file', state: 'finished', output: 'first', args: { path: 'a' } });
    expect(tools[toolKey('t1', 1, 'call_1')]).toMatchObject({ tool: 'list_dir', state: 'running' });
    expect(tools[toolKey('t2', 0, 'call_1')]).toMatchObject({ tool: 'search', state: 'running' });
  });

  it('derives the step from the turn\'s assistant messages when an event has none', () => {
    const m = (id: string, seq: number, role: Message['role'], extra: Partial<Message> = {}): Message =>
      ({ id, chat_id: 'c1', seq, role, content: '', created_at: '', ...extra }) as Message;
    let s = loadChat(openView(initialState, 'c1'), chat, [
      m('a1', 1, 'assistant', { turn_id: 't1', tool_calls: [{ id: 'call_1', name: 'x', arguments: {} }] }),
      m('r1', 2, 'tool', { turn_id: 't1', tool_call_id: 'call_1' }),
      m('a2', 3, 'assistant', { turn_id: 't1', tool_calls: [{ id: 'call_1', name: 'y', arguments: {} }] }),
    ]);
    s = applyEvent(s, e('tool.started', { turn_id: 't1', call_id: 'call_1', tool: 'y' }));
    expect(s.views.c1.tools[toolKey('t1', 1, 'call_1')]).toMatchObject({ tool: 'y', step: 1 });
  });

  it('pairs persisted results with the step that made the call', () => {
    const m = (id: string, seq: number, role: Message['role'], extra: Partial<Message> = {}): Message =>
      ({ id, chat_id: 'c1', seq, role, content: '', created_at: '', ...extra }) as Message;
    const msgs = [
      m('u1', 0, 'user'),
      m('a1', 1, 'assistant', { turn_id: 't1', tool_calls: [{ id: 'call_1', name: 'x', arguments: {} }] }),
      m('r1', 2, 'tool', { turn_id: 't1', tool_call_id: 'call_1', content: 'one' }),
      m('a2', 3, 'assistant', { turn_id: 't1', tool_calls: [{ id: 'call_1', name: 'y', arguments: {} }] }),
      m('r2', 4, 'tool', { turn_id: 't1', tool_call_id: 'call_1', content: 'two' }),
      m('r3', 5, 'tool', { turn_id: 't1', tool_call_id: 'call_9', content: 'stray' }),
    ];
    const places = placeToolCalls(msgs);
    expect(places.get('a1')).toMatchObject({ step: 0 });
    expect(places.get('a1')?.results.get('call_1')?.content).toBe('one');
    expect(places.get('a2')).toMatchObject({ step: 1 });
    expect(places.get('a2')?.results.get('call_1')?.content).toBe('two');
    // A result whose call this message did not make is not claimed.
    expect(places.get('a2')?.results.has('call_9')).toBe(false);
  });
});
