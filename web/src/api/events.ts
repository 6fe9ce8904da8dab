// The live connection to GET /api/events: reconnects with backoff after the
// daemon restarts, resumes from the last sequence number it saw, and drops
// replayed events it already applied so nothing shows twice.
import type { Client } from './client';
import type { StreamEvent } from './types';
import { SSEParser } from './sse';

export type ConnState = 'connecting' | 'live' | 'reconnecting' | 'unauthorized' | 'stopped';

export interface EventHandlers {
  onEvent(ev: StreamEvent): void;
  onState(s: ConnState, detail?: string): void;
  /**
   * State may be stale: the daemon could not replay the gap (reset) or it
   * restarted (its sequence numbers went backwards). Refetch everything.
   */
  onResync(reason: string): void;
  /** A connection became live (first time or after a reconnect). */
  onConnected?(reconnected: boolean): void;
}

export interface StreamOptions {
  /** Milliseconds without any bytes (pings come every 15 s) before we reconnect. */
  idleTimeoutMs?: number;
  backoffMs?: number[];
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

const defaultBackoff = [250, 500, 1000, 2000, 4000, 8000];

export class EventStream {
  lastSeq = 0;
  private abort = new AbortController();
  private running = false;
  private connectedOnce = false;
  private readonly idleMs: number;
  private readonly backoff: number[];
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(
    private readonly client: Client,
    private readonly h: EventHandlers,
    opts: StreamOptions = {},
  ) {
    this.idleMs = opts.idleTimeoutMs ?? 45_000;
    this.backoff = opts.backoffMs ?? defaultBackoff;
    this.sleep = opts.sleep ?? sleep;
  }

  start() {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    void this.loop(this.abort.signal);
  }

  stop() {
    this.running = false;
    this.abort.abort();
    this.h.onState('stopped');
  }

  private async loop(signal: AbortSignal) {
    let attempt = 0;
    while (!signal.aborted) {
      this.h.onState(this.connectedOnce ? 'reconnecting' : 'connecting');
      let outcome: 'ended' | 'unauthorized' | 'failed';
      try {
        outcome = await this.connect(signal, () => {
          attempt = 0;
        });
      } catch {
        outcome = 'failed';
      }
      if (signal.aborted) return;
      if (outcome === 'unauthorized') {
        this.running = false;
        this.h.onState('unauthorized');
        return;
      }
      this.h.onState('reconnecting');
      const wait = this.backoff[Math.min(attempt, this.backoff.length - 1)];
      attempt++;
      // Jitter so many tabs do not reconnect in lockstep after a restart.
      await this.sleep(wait * (0.75 + Math.random() * 0.5), signal).catch(() => {});
    }
  }

  private async connect(
    signal: AbortSignal,
    onLive: () => void,
  ): Promise<'ended' | 'unauthorized' | 'failed'> {
    const conn = new AbortController();
    const stopConn = () => conn.abort();
    signal.addEventListener('abort', stopConn, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const kick = () => {
      clearTimeout(idle);
      idle = setTimeout(() => conn.abort(), this.idleMs);
    };
    try {
      const headers: Record<string, string> = { Accept: 'text/event-stream' };
      if (this.lastSeq > 0) headers['Last-Event-ID'] = String(this.lastSeq);
      kick();
      const res = await this.client.raw('/api/events', {
        headers,
        signal: conn.signal,
        cache: 'no-store',
      });
      if (res.status === 401) return 'unauthorized';
      if (!res.ok || !res.body) return 'failed';
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new SSEParser();
      let live = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return 'ended';
        kick();
        for (const raw of parser.feed(value)) {
          let ev: StreamEvent;
          try {
            ev = JSON.parse(raw.data) as StreamEvent;
          } catch {
            continue; // not ours to interpret
          }
          if (!ev.type) ev.type = raw.event;
          if (ev.seq === undefined && raw.id !== undefined && /^\d+$/.test(raw.id)) ev.seq = Number(raw.id);
          if (!live && ev.type === 'ready') {
            live = true;
            this.onReady(ev);
            onLive();
            continue;
          }
          this.dispatch(ev);
        }
      }
    } catch {
      return signal.aborted ? 'ended' : 'failed';
    } finally {
      clearTimeout(idle);
      signal.removeEventListener('abort', stopConn);
    }
  }

  private onReady(ev: StreamEvent) {
    const last = Number(ev.data?.last_seq ?? 0);
    const reconnected = this.connectedOnce;
    this.connectedOnce = true;
    this.h.onState('live');
    if (this.lastSeq > last) {
      // The daemon's counter went backwards: it restarted and its replay
      // ring is gone. What we hold may be stale; start over from its count.
      this.lastSeq = last;
      this.h.onResync('restart');
    }
    this.h.onConnected?.(reconnected);
  }

  private dispatch(ev: StreamEvent) {
    if (ev.type === 'reset') {
      if (typeof ev.seq === 'number') this.lastSeq = ev.seq;
      this.h.onResync('gap');
      return;
    }
    if (typeof ev.seq === 'number') {
      if (ev.seq <= this.lastSeq) return; // replay overlap: already applied
      this.lastSeq = ev.seq;
    }
    this.h.onEvent(ev);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(new Error('aborted'));
      },
      { once: true },
    );
  });
}
