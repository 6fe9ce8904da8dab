import { describe, expect, it } from 'vitest';
import { SSEParser } from '../src/api/sse';

describe('SSEParser', () => {
  it('parses events split across arbitrary chunks', () => {
    const wire = 'id: 7\nevent: message.delta\ndata: {"a":1}\n\n: ping\n\nid: 8\nevent: x\ndata: one\ndata: two\n\n';
    for (let cut = 1; cut < wire.length; cut++) {
      const p = new SSEParser();
      const evs = [...p.feed(wire.slice(0, cut)), ...p.feed(wire.slice(cut))];
      expect(evs, `cut at ${cut}`).toEqual([
        { id: '7', event: 'message.delta', data: '{"a":1}' },
        { id: '8', event: 'x', data: 'one\ntwo' },
      ]);
    }
  });

  it('accepts CRLF and CR line endings, including a CRLF split between chunks', () => {
    const p = new SSEParser();
    expect(p.feed('data: a\r')).toEqual([]);
    expect(p.feed('\n\r\ndata: b\r\r\n')).toEqual([
      { event: 'message', data: 'a' },
      { event: 'message', data: 'b' },
    ]);
  });

  it('ignores comments, unknown fields and empty blocks', () => {
    const p = new SSEParser();
    expect(p.feed(': ping\n\nretry: 100\nfoo: bar\n\n\n')).toEqual([]);
  });

  it('keeps only one leading space and remembers the last id', () => {
    const p = new SSEParser();
    const [ev] = p.feed('id: 42\ndata:  two spaces\n\n');
    expect(ev.data).toBe(' two spaces');
    p.feed('data: no id\n\n');
    expect(p.lastId).toBe('42');
  });

  it('rejects ids containing NUL', () => {
    const p = new SSEParser();
    const [ev] = p.feed('id: 1\0\ndata: x\n\n');
    expect(ev.id).toBeUndefined();
  });
});
