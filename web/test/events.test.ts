import { describe, expect, it } from 'vitest';
import { Client } from '../src/api/client';
import { EventStream, type ConnState } from '../src/api/events';
import type { StreamEvent } from '../src/api/types';
import { json, memTokens, SSEWire, tick } from './helpers';

function setup(wires: (SSEWire | Response)[]) {
  const seen: { lastEventId: string | null; auth: string | null }[] = [];
  const f = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(new URL(String(input), 'http://x'), init);
    seen.push({ lastEventId: req.headers.get('Last-Event-ID'), auth: req.headers.get('Authorization') });
    const w = wires.shift();
    if (!w) return new Promise<Response>(() => {});
    return w instanceof Response ? w : new Response(w.body, { headers: { 'Content-Type': 'text/event-stream' } });
  }) as typeof fetch;
  const client = new Client({ tokens: memTokens('secret'), fetch: f });
  const events: StreamEvent[] = [];
  const states: ConnState[] = [];
  const resyncs: string[] = [];
  const connects: boolean[] = [];
  const es = new EventStream(
    client,
    {
      onEvent: (e) => events.push(e),
      onState: (s) => states.push(s),
      onResync: (r) => resyncs.push(r),
      onConnected: (again) => connects.push(again),
    },
    { backoffMs: [1], sleep: (ms) => new Promise((r) => setTimeout(r, ms)) },
  );
  return { es, seen, events, states, resyncs, connects };
}

describe('EventStream', () => {
  it('authenticates, resumes with Last-Event-ID and drops replayed duplicates', async () => {
    const a = new SSEWire();
    const b = new SSEWire();
    const t = setup([a, b]);
    t.es.start();
    await tick(5);
    a.send('ready', { last_seq: 4 });
    a.send('message.delta', { text: 'x' }, 5);
    a.send('message.delta', { text: 'y' }, 6);
    await tick(5);
    a.close(); // daemon went away
    await tick(20);
    b.send('ready', { last_seq: 7 });
    b.send('message.delta', { text: 'y' }, 6); // replay overlap
    b.send('message.delta', { text: 'z' }, 7);
    await tick(5);
    t.es.stop();

    expect(t.seen.map((s) => s.auth)).toEqual(['Bearer secret', 'Bearer secret']);
    expect(t.seen.map((s) => s.lastEventId)).toEqual([null, '6']);
    expect(t.events.map((e) => e.seq)).toEqual([5, 6, 7]);
    expect(t.connects).toEqual([false, true]);
    expect(t.states).toContain('reconnecting');
    expect(t.resyncs).toEqual([]);
  });

  it('asks for a resync when the daemon restarted (sequence went backwards)', async () => {
    const a = new SSEWire();
    const b = new SSEWire();
    const t = setup([a, b]);
    t.es.start();
    await tick(5);
    a.send('ready', { last_seq: 0 });
    a.send('chat.created', {}, 50);
    await tick(5);
    a.close();
    await tick(20);
    b.send('ready', { last_seq: 2 });
    b.send('chat.created', {}, 3);
    await tick(5);
    t.es.stop();
    expect(t.resyncs).toEqual(['restart']);
    // Events of the new daemon are applied even though 3 < 50.
    expect(t.events.map((e) => e.seq)).toEqual([50, 3]);
  });

  it('passes a reset on as a resync', async () => {
    const a = new SSEWire();
    const t = setup([a]);
    t.es.start();
    await tick(5);
    a.send('ready', { last_seq: 9000 });
    a.send('reset', { reason: 'gap', oldest_seq: 4000 });
    await tick(5);
    t.es.stop();
    expect(t.resyncs).toEqual(['gap']);
    expect(t.events).toEqual([]);
  });

  it('stops and reports unauthorized on 401', async () => {
    const t = setup([json({ error: { code: 'unauthorized', message: 'no' } }, 401)]);
    t.es.start();
    await tick(10);
    expect(t.states.at(-1)).toBe('unauthorized');
    expect(t.seen.length).toBe(1);
  });

  it('retries after a failed connection', async () => {
    const a = new SSEWire();
    const t = setup([json({}, 503), a]);
    t.es.start();
    await tick(20);
    a.send('ready', { last_seq: 1 });
    await tick(5);
    t.es.stop();
    expect(t.seen.length).toBe(2);
    expect(t.states).toContain('live');
  });
});
