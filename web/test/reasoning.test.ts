import { describe, expect, it } from 'vitest';
import type { Chat, Message, StreamEvent } from '../src/api/types';
import { applyEvent, initialState, loadChat, loadChats, openView, type State } from '../src/state/reduce';

// Issue 31 item 7 and the first-token wait of item 1.
const chat: Chat = { id: 'c_1', title: 'T', created_at: '2026-12-01T10:00:00Z', updated_at: '2026-12-01T10:00:00Z' };
const ev = (type: string, data: unknown): StreamEvent => ({ type, data, chat_id: 'c_1' });
const assistant: Message = { id: 'm_2', chat_id: 'c_1', seq: 2, role: 'assistant', content: 'Hello!', turn_id: 't_1', created_at: '2026-12-01T10:00:02Z' };

function opened(): State {
  const s = loadChat(openView(loadChats(initialState, [chat]), 'c_1'), chat, []);
  return applyEvent(s, ev('turn.started', { turn_id: 't_1' }));
}

describe('reasoning and the first-token wait', () => {
  it('shows the wait until the first token, then reasoning apart from the text', () => {
    let s = opened();
    s = applyEvent(s, ev('model.waiting', { turn_id: 't_1', step: 0, prompt_tokens: 7100, local: true }));
    expect(s.views.c_1.streaming.t_1.waiting).toEqual({ promptTokens: 7100, local: true });
    s = applyEvent(s, ev('message.reasoning', { turn_id: 't_1', step: 0, text: 'The user ' }));
    s = applyEvent(s, ev('message.reasoning', { turn_id: 't_1', step: 0, text: 'greets.' }));
    expect(s.views.c_1.streaming.t_1.waiting).toBeUndefined();
    expect(s.views.c_1.streaming.t_1.reasoning).toBe('The user greets.');
    s = applyEvent(s, ev('message.delta', { turn_id: 't_1', step: 0, text: 'Hello!' }));
    expect(s.views.c_1.streaming.t_1).toMatchObject({ text: 'Hello!', reasoning: 'The user greets.' });
    s = applyEvent(s, ev('message.created', { message: assistant }));
    expect(s.views.c_1.streaming.t_1).toBeUndefined();
  });

  it('starts a new step with fresh reasoning', () => {
    let s = opened();
    s = applyEvent(s, ev('message.reasoning', { turn_id: 't_1', step: 0, text: 'first' }));
    s = applyEvent(s, ev('message.reasoning', { turn_id: 't_1', step: 1, text: 'second' }));
    expect(s.views.c_1.streaming.t_1).toMatchObject({ step: 1, text: '', reasoning: 'second' });
  });
});
