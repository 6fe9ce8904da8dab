// A reasoning model's thinking stays with the assistant message it led to:
// collapsed above the reply after the turn and after a reload, with how
// long it took, in the same block that showed it while streaming.
import { render, screen, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import type { Message } from '../src/api/types';
import { Reasoning, reasoningLabel } from '../src/components/Reasoning';
import { AppContext } from '../src/context';
import { ChatPage } from '../src/pages/Chat';
import { App } from '../src/state/app';
import { applyEvent } from '../src/state/reduce';
import { fakeFetch, json, memTokens, tick } from './helpers';

const chat = { id: 'c_1', title: 'Weather', created_at: '', updated_at: '' };
const msg = (id: string, seq: number, role: Message['role'], content: string, extra: Partial<Message> = {}): Message => ({
  id,
  chat_id: 'c_1',
  seq,
  role,
  content,
  turn_id: 't_1',
  created_at: '',
  ...extra,
});

function openChat(messages: Message[]) {
  const ff = fakeFetch({
    'GET /api/chats/c_1': () => json({ chat, messages }),
    'GET /api/approvals': () => json({ approvals: [] }),
    'GET /api/chats/c_1/status': () => json({ running: false, queued: 0, queued_turns: [] }),
  });
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const view = render(
    <AppContext.Provider value={app}>
      <ChatPage id="c_1" />
    </AppContext.Provider>,
  );
  return { app, ...view };
}

const bubble = (container: Element, id: string) => container.querySelector(`.msg.assistant[data-id="${id}"]`) as HTMLElement;

describe('reasoning kept with the message', () => {
  it('labels the block by state and duration', () => {
    expect(reasoningLabel({ live: true })).toBe('Thinking…');
    expect(reasoningLabel({ live: true, answered: true })).toBe('Thought');
    expect(reasoningLabel({ ms: 4200 })).toBe('Thought for 4 s');
    expect(reasoningLabel({ ms: 61_600 })).toBe('Thought for 62 s');
    expect(reasoningLabel({ ms: 300 })).toBe('Thought for under 1 s');
    expect(reasoningLabel({})).toBe('Reasoning');
    expect(reasoningLabel({ ms: 0 })).toBe('Reasoning');
  });

  it('shows stored reasoning collapsed above the reply after a reload, and nothing for messages without it', async () => {
    const { container } = openChat([
      msg('m_1', 1, 'user', 'Is it going to rain?'),
      msg('m_2', 2, 'assistant', '', {
        reasoning: 'I should check the forecast first.',
        reasoning_ms: 4200,
        tool_calls: [{ id: 'call_1', name: 'now', arguments: {} }],
      }),
      msg('m_3', 3, 'tool', '2026-05-01 09:00', { tool_call_id: 'call_1', tool_name: 'now' }),
      msg('m_4', 4, 'assistant', 'Take an **umbrella**.', { reasoning: 'Rain is likely <b>today</b>.' }),
      msg('m_5', 5, 'assistant', 'Anything else?'),
    ]);
    await screen.findByText('umbrella');

    const withTool = bubble(container, 'm_2');
    const first = withTool.querySelector('details.reasoning') as HTMLDetailsElement;
    expect(first).toBeTruthy();
    expect(first.open).toBe(false);
    expect(first.querySelector('summary')?.textContent).toBe('Thought for 4 s');
    expect(first.querySelector('.reasoning-text')?.textContent).toBe('I should check the forecast first.');
    // Above the tool card the step led to.
    expect(withTool.firstElementChild).toBe(first);

    const reply = bubble(container, 'm_4');
    const second = reply.querySelector('details.reasoning') as HTMLDetailsElement;
    expect(second.querySelector('summary')?.textContent).toBe('Reasoning');
    // Above the text, and as plain text: markup the model thought about is not rendered.
    expect(reply.firstElementChild).toBe(second);
    expect(second.compareDocumentPosition(within(reply).getByText('umbrella')) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(second.querySelector('b')).toBeNull();
    expect(second.querySelector('.reasoning-text')?.textContent).toBe('Rain is likely <b>today</b>.');

    expect(bubble(container, 'm_5').querySelector('.reasoning')).toBeNull();
    expect(container.querySelectorAll('details.reasoning')).toHaveLength(2);
  });

  it('keeps the streamed reasoning once the stored message replaces the stream', async () => {
    const { app, container } = openChat([msg('m_1', 1, 'user', 'Hi')]);
    await screen.findByText('Hi');
    const send = (type: string, data: unknown) => app.data.set((s) => applyEvent(s, { type, chat_id: 'c_1', data }));
    send('turn.started', { turn_id: 't_1' });
    send('message.reasoning', { turn_id: 't_1', step: 0, text: 'The user greets me.' });
    await tick(10);
    const live = container.querySelector('.msg.live details.reasoning') as HTMLDetailsElement;
    expect(live.querySelector('summary')?.textContent).toBe('Thinking…');
    expect(live.querySelector('.reasoning-text')?.textContent).toBe('The user greets me.');
    send('message.delta', { turn_id: 't_1', step: 0, text: 'Hello!' });
    await tick(10);
    expect(container.querySelector('.msg.live details.reasoning summary')?.textContent).toBe('Thought');

    send('message.created', { message: msg('m_2', 2, 'assistant', 'Hello!', { reasoning: 'The user greets me.', reasoning_ms: 1800 }) });
    send('turn.finished', { result: { turn_id: 't_1', chat_id: 'c_1', ok: true } });
    await tick(10);
    expect(container.querySelector('.msg.live')).toBeNull();
    const kept = bubble(container, 'm_2').querySelector('details.reasoning') as HTMLDetailsElement;
    expect(kept.querySelector('summary')?.textContent).toBe('Thought for 2 s');
    expect(kept.querySelector('.reasoning-text')?.textContent).toBe('The user greets me.');
    expect(container.querySelectorAll('details.reasoning')).toHaveLength(1);
  });

  it('renders closed, the text kept as written', () => {
    const { container } = render(<Reasoning text={'a\n<i>b</i>'} ms={12_000} />);
    const d = container.querySelector('details.reasoning') as HTMLDetailsElement;
    expect(d.open).toBe(false);
    expect(d.querySelector('summary')?.textContent).toBe('Thought for 12 s');
    expect(d.querySelector('.reasoning-text')?.textContent).toBe('a\n<i>b</i>');
    expect(d.querySelector('i')).toBeNull();
  });
});
