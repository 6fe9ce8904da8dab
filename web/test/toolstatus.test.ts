import { describe, expect, it } from 'vitest';
import type { Message } from '../src/api/types';
import { toolStatus, turnsWithNotDone } from '../src/lib/toolstatus';

const result = (tool: Message['tool'], content = 'out'): Message => ({
  id: 'm', chat_id: 'c', seq: 1, role: 'tool', content, tool_call_id: 'k', created_at: '', tool,
});

describe('toolStatus', () => {
  it('says NOT DONE for every outcome where nothing ran', () => {
    for (const d of ['denied', 'revise', 'timeout', 'no_approver', 'blocked', 'invalid', 'skipped']) {
      const st = toolStatus({ result: result({ decision: d, status: 'not_run' }), turnRunning: false });
      expect(st.tone, d).toBe('notdone');
      expect(st.label).toBe('NOT DONE');
    }
  });

  it('names the policy reason on a blocked card and points to Settings for folders', () => {
    const st = toolStatus({ result: result({ decision: 'blocked', status: 'not_run', note: '/srv/x is refused: allowed folders are /home/me: path is outside the allowed folders' }), turnRunning: false });
    expect(st.detail).toBe('blocked by policy: /srv/x is refused: allowed folders are /home/me: path is outside the allowed folders — change them in Settings');
    const live = toolStatus({ live: { call_id: 'k', tool: 't', state: 'finished', decision: 'blocked', status: 'not_run', note: 'tool is denied by policy.deny_prefixes' }, turnRunning: false });
    expect(live.detail).toBe('blocked by policy: tool is denied by policy.deny_prefixes');
  });

  it('finds the turns whose reply follows a call that did not run', () => {
    const msg = (turn: string, status: string): Message => ({ ...result({ decision: 'x', status }), turn_id: turn });
    expect([...turnsWithNotDone([msg('t1', 'ok'), msg('t2', 'not_run'), { ...msg('t3', 'not_run'), role: 'assistant' }])]).toEqual(['t2']);
  });

  it('shows a request closed by a daemon restart as expired', () => {
    const st = toolStatus({ result: result({ decision: 'expired', status: 'not_run', note: 'daemon_restart' }), turnRunning: false });
    expect(st).toMatchObject({ tone: 'notdone', label: 'NOT DONE' });
    expect(st.detail).toMatch(/^expired/);
  });

  it('includes the deny note', () => {
    const st = toolStatus({
      result: result({ decision: 'denied', status: 'not_run' }),
      resolved: { request: { id: 'a', kind: 'approval', chat_id: 'c', created_at: '' }, resolution: { id: 'a', decision: 'deny', note: 'wrong file' } },
      turnRunning: false,
    });
    expect(st.detail).toBe('denied by you: “wrong file”');
  });

  it('shows the edited input that ran and what was asked', () => {
    const st = toolStatus({
      result: result({ decision: 'edited', status: 'ok', input: { a: 1 }, effective_input: { a: 2 }, duration_ms: 5 }),
      turnRunning: false,
    });
    expect(st).toMatchObject({ tone: 'ok', label: 'Done with your edits', input: { a: 2 }, askedInput: { a: 1 }, duration_ms: 5 });
  });

  it('distinguishes failure, running and waiting', () => {
    expect(toolStatus({ result: result({ decision: 'allowed', status: 'error', error: 'boom' }), turnRunning: false })).toMatchObject({ tone: 'error', error: 'boom' });
    expect(toolStatus({ live: { call_id: 'k', tool: 't', state: 'running' }, turnRunning: true }).tone).toBe('running');
    expect(toolStatus({ pending: { id: 'a', kind: 'approval', chat_id: 'c', created_at: '' }, turnRunning: true }).tone).toBe('waiting');
    expect(toolStatus({ turnRunning: false }).tone).toBe('notdone');
  });
});

import { argSummary } from '../src/lib/format';

describe('argSummary', () => {
  it('prefers the argument that names the target', () => {
    expect(argSummary({ content: 'long text', path: '~/notes.txt' })).toBe('~/notes.txt');
    expect(argSummary({ limit: 10, query: 'from:ana  lisbon' })).toBe('from:ana lisbon');
    expect(argSummary({ flag: true })).toBe('');
    expect(argSummary({ body: 'x'.repeat(100) })).toHaveLength(60);
  });
});
