// Server-sent events over fetch(). EventSource cannot send an Authorization
// header, so we read the stream ourselves, parse it per the WHATWG
// "event stream interpretation" rules, and do Last-Event-ID resume by hand.

export interface RawEvent {
  id?: string;
  event: string;
  data: string;
}

/**
 * Incremental parser: feed it decoded text chunks as they arrive; it returns
 * the complete events found so far and keeps partial lines for later.
 */
export class SSEParser {
  private buf = '';
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  private sawField = false;
  /** Last id seen, which persists across events as the spec requires. */
  lastId: string | undefined;

  feed(chunk: string): RawEvent[] {
    this.buf += chunk;
    const out: RawEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      // A lone \r at the very end may be the first half of \r\n.
      if (m[0] === '\r' && m.index === this.buf.length - 1) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  private line(line: string): RawEvent | null {
    if (line === '') {
      if (!this.sawField) return null;
      const ev: RawEvent = { event: this.event || 'message', data: this.data.join('\n') };
      if (this.id !== undefined) ev.id = this.id;
      this.data = [];
      this.event = '';
      this.id = undefined;
      this.sawField = false;
      return ev;
    }
    if (line.startsWith(':')) return null; // comment (": ping")
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        this.sawField = true;
        break;
      case 'event':
        this.event = value;
        this.sawField = true;
        break;
      case 'id':
        if (!value.includes('\0')) {
          this.id = value;
          this.lastId = value;
        }
        this.sawField = true;
        break;
      default:
      // "retry" and unknown fields: ignored; our backoff is our own.
    }
    return null;
  }
}
