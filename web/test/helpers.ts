// Test doubles: a fake daemon answering the client's fetches from a table,
// and an SSE stream the test writes to.
import { vi } from 'vitest';
import type { TokenStore } from '../src/api/client';

export function memTokens(initial: string | null = 'tok'): TokenStore {
  let t = initial;
  return { get: () => t, set: (v) => (t = v), clear: () => (t = null) };
}

export function json(body: unknown, status = 200): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

export class SSEWire {
  private ctrl!: ReadableStreamDefaultController<Uint8Array>;
  readonly body: ReadableStream<Uint8Array>;
  private enc = new TextEncoder();
  constructor() {
    this.body = new ReadableStream({ start: (c) => (this.ctrl = c) });
  }
  send(type: string, data: unknown, seq?: number) {
    const id = seq === undefined ? '' : `id: ${seq}\n`;
    const payload = JSON.stringify({ seq, type, data });
    this.ctrl.enqueue(this.enc.encode(`${id}event: ${type}\ndata: ${payload}\n\n`));
  }
  close() {
    this.ctrl.close();
  }
}

export type Route = (req: Request) => Response | Promise<Response> | undefined;

/** A fetch that answers by method+path; unmatched requests fail the test. */
export function fakeFetch(routes: Record<string, (req: Request) => Response | Promise<Response>>) {
  const calls: Request[] = [];
  const f = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(new URL(String(input), 'http://127.0.0.1:4317'), init);
    calls.push(req);
    const u = new URL(req.url);
    const key = `${req.method} ${u.pathname}`;
    const h = routes[key] ?? routes[`${req.method} ${u.pathname}${u.search}`];
    if (!h) throw new Error(`unexpected ${key}`);
    return h(req);
  });
  return { fetch: f as unknown as typeof fetch, calls };
}

export const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));
