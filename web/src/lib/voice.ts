// Voice mode's client: asks the daemon for a one-time ticket (POST
// /api/voice/tickets; a WebSocket cannot carry the bearer token), opens the
// socket, streams the microphone as 16 kHz PCM from an AudioWorklet, and
// plays the spoken reply pieces in order. Voice-activity detection, the
// transcription, the turn and barge-in all happen in the daemon
// (internal/voice); this side stops playback when told to ("stop") and
// says when it has played everything ("played"), which the daemon uses to
// know whether the assistant is still speaking.
import type { Client } from '../api/client';
import { responseErrorText } from './errors';

export type VoiceState =
  | 'connecting'
  | 'listening'
  | 'hearing'
  | 'transcribing'
  | 'thinking'
  | 'speaking'
  | 'ended'
  | 'no-mic'
  | 'unavailable'
  | 'error';

export interface VoicePrompt {
  id: string;
  text: string;
  kind: 'approval' | 'question';
}

export interface VoiceView {
  state: VoiceState;
  /** What the daemon heard last. */
  heard: string;
  /** A pending approval or question read out to the user. */
  prompt?: VoicePrompt;
  /** Why the session is not running (no-mic, unavailable, error, ended). */
  message: string;
  /** Replies are spoken (the daemon has a tts path). */
  speaks: boolean;
}

/** One spoken piece as the daemon sends it. */
export interface AudioPiece {
  seq: number;
  mime: string;
  text: string;
  audio: ArrayBuffer;
}

/** parseAudioFrame reads a binary message: a 4-byte big-endian header
 * length, the JSON header, then the audio. Null when it is not one. */
export function parseAudioFrame(buf: ArrayBuffer): AudioPiece | null {
  if (buf.byteLength < 4) return null;
  const n = new DataView(buf).getUint32(0);
  if (n > buf.byteLength - 4 || n > 65536) return null;
  try {
    const h = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, n))) as { seq?: unknown; mime?: unknown; text?: unknown };
    if (typeof h.seq !== 'number' || typeof h.mime !== 'string') return null;
    return { seq: h.seq, mime: h.mime, text: typeof h.text === 'string' ? h.text : '', audio: buf.slice(4 + n) };
  } catch {
    return null;
  }
}

/** What a closed socket's reason means for the user. */
export function closeMessage(code: number, reason: string): string {
  if (reason === 'bye' || code === 1000) return 'Voice mode ended.';
  if (reason) return reason.charAt(0).toUpperCase() + reason.slice(1) + '.';
  if (code === 1006) return 'The connection to the daemon was lost.';
  return `The voice connection closed (code ${code}).`;
}

/** The microphone side: started on a stream, it calls onFrame with PCM. */
export interface Capture {
  stop(): void;
}

/** The speaker side: plays pieces in order. */
export interface Player {
  play(audio: ArrayBuffer, mime: string): Promise<void>;
  /** Stops what plays and drops what waits. */
  stop(): void;
  close(): void;
}

export interface VoiceDeps {
  WebSocket: typeof WebSocket;
  getUserMedia: (c: MediaStreamConstraints) => Promise<MediaStream>;
  capture: (stream: MediaStream, onFrame: (pcm: ArrayBuffer) => void) => Promise<Capture>;
  player: () => Player;
  location: { protocol: string; host: string };
}

/** browserDeps uses the real browser APIs. */
export function browserDeps(): VoiceDeps {
  return {
    WebSocket,
    getUserMedia: (c) => navigator.mediaDevices.getUserMedia(c),
    capture: workletCapture,
    player: webAudioPlayer,
    location,
  };
}

/** Whether this browser can run voice mode at all. */
export function voiceSupported(): boolean {
  return (
    typeof WebSocket !== 'undefined' &&
    typeof AudioContext !== 'undefined' &&
    typeof AudioWorkletNode !== 'undefined' &&
    !!navigator.mediaDevices?.getUserMedia
  );
}

async function workletCapture(stream: MediaStream, onFrame: (pcm: ArrayBuffer) => void): Promise<Capture> {
  const ctx = new AudioContext();
  await ctx.audioWorklet.addModule('/voice-worklet.js');
  const src = ctx.createMediaStreamSource(stream);
  const node = new AudioWorkletNode(ctx, 'voice-capture', { numberOfInputs: 1, numberOfOutputs: 0 });
  node.port.onmessage = (e: MessageEvent<ArrayBuffer>) => onFrame(e.data);
  src.connect(node);
  await ctx.resume();
  return {
    stop() {
      node.port.onmessage = null;
      src.disconnect();
      stream.getTracks().forEach((t) => t.stop());
      void ctx.close();
    },
  };
}

function webAudioPlayer(): Player {
  const ctx = new AudioContext();
  let chain: Promise<void> = Promise.resolve();
  let current: AudioBufferSourceNode | null = null;
  let epoch = 0;
  return {
    play(audio, _mime) {
      const mine = epoch;
      const decoded = ctx.decodeAudioData(audio.slice(0));
      chain = chain.then(async () => {
        let buf: AudioBuffer;
        try {
          buf = await decoded;
        } catch {
          return; // an undecodable piece is skipped, the rest still plays
        }
        if (mine !== epoch) return;
        await ctx.resume();
        await new Promise<void>((done) => {
          const node = ctx.createBufferSource();
          node.buffer = buf;
          node.connect(ctx.destination);
          node.onended = () => done();
          current = node;
          node.start();
        });
        current = null;
      });
      return chain;
    },
    stop() {
      epoch++;
      try {
        current?.stop();
      } catch {
        // already stopped
      }
    },
    close() {
      this.stop();
      void ctx.close();
    },
  };
}

/**
 * VoiceSession is one hands-free conversation in a chat. It reports every
 * change through onChange; stop() ends it.
 */
export class VoiceSession {
  view: VoiceView = { state: 'connecting', heard: '', message: '', speaks: false };
  private ws: WebSocket | null = null;
  private cap: Capture | null = null;
  private player: Player | null = null;
  private queued = 0;
  private lastSeq = 0;
  private stopped = false;

  constructor(
    private readonly client: Client,
    private readonly chatId: string,
    private readonly onChange: (v: VoiceView) => void,
    private readonly deps: VoiceDeps = browserDeps(),
  ) {}

  private set(v: Partial<VoiceView>) {
    this.view = { ...this.view, ...v };
    this.onChange(this.view);
  }

  /** Starts: the microphone first (it needs the user's tap), then the ticket and the socket. */
  async start(): Promise<void> {
    this.set({ state: 'connecting', message: '' });
    let stream: MediaStream;
    try {
      stream = await this.deps.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true, channelCount: 1 } });
    } catch {
      this.set({
        state: 'no-mic',
        message: 'The microphone is blocked or missing. Allow it for this site in the browser settings, then try again.',
      });
      return;
    }
    if (this.stopped) {
      stream.getTracks().forEach((t) => t.stop());
      return;
    }
    let res: Response;
    try {
      res = await this.client.raw('/api/voice/tickets', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ chat_id: this.chatId }),
      });
    } catch {
      stream.getTracks().forEach((t) => t.stop());
      this.set({ state: 'error', message: 'Cannot reach the Hestia daemon. Is it running?' });
      return;
    }
    if (!res.ok) {
      stream.getTracks().forEach((t) => t.stop());
      const msg = await responseErrorText(res, 'voice mode could not start');
      this.set({ state: res.status === 503 ? 'unavailable' : 'error', message: msg });
      return;
    }
    const t = (await res.json()) as { url: string; tts: string };
    if (this.stopped) {
      stream.getTracks().forEach((t) => t.stop());
      return;
    }
    this.set({ speaks: t.tts !== 'none' });
    const scheme = this.deps.location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new this.deps.WebSocket(`${scheme}//${this.deps.location.host}${t.url}`);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.player = this.deps.player();
    ws.onopen = async () => {
      ws.send(JSON.stringify({ type: 'hello', format: 's16le', sample_rate: 16000, channels: 1 }));
      try {
        const cap = await this.deps.capture(stream, (pcm) => {
          if (ws.readyState === ws.OPEN) ws.send(pcm);
        });
        if (this.stopped) cap.stop();
        else this.cap = cap;
      } catch {
        stream.getTracks().forEach((t) => t.stop());
        this.set({ state: 'error', message: 'This browser could not start audio capture.' });
        ws.close(1000, 'bye');
      }
    };
    ws.onmessage = (e: MessageEvent) => {
      if (typeof e.data === 'string') this.message(e.data);
      else if (e.data instanceof ArrayBuffer) this.audio(e.data);
    };
    ws.onclose = (e: CloseEvent) => {
      this.release();
      if (this.view.state === 'error' || this.view.state === 'unavailable') return;
      this.set({ state: 'ended', message: this.stopped ? '' : closeMessage(e.code, e.reason), prompt: undefined });
    };
  }

  private message(data: string) {
    let m: { type?: string; state?: VoiceState; text?: string; id?: string; tts?: string };
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    switch (m.type) {
      case 'ready':
        this.set({ speaks: m.tts !== 'none' });
        break;
      case 'state':
        if (m.state) this.set({ state: m.state });
        break;
      case 'transcript':
        this.set({ heard: m.text ?? '' });
        break;
      case 'approval':
      case 'question':
        this.set({ prompt: { id: m.id ?? '', text: m.text ?? '', kind: m.type } });
        break;
      case 'approval.resolved':
        if (this.view.prompt?.id === m.id) this.set({ prompt: undefined });
        break;
      case 'stop':
        this.player?.stop();
        this.queued = 0;
        break;
      case 'notice':
        this.set({ message: m.text ?? '' });
        break;
    }
  }

  private audio(buf: ArrayBuffer) {
    const p = parseAudioFrame(buf);
    if (!p || !this.player) return;
    this.queued++;
    this.lastSeq = Math.max(this.lastSeq, p.seq);
    const seq = p.seq;
    void this.player.play(p.audio, p.mime).then(() => {
      this.queued = Math.max(0, this.queued - 1);
      // Told once everything queued has played, so the daemon knows the
      // assistant stopped speaking.
      if (this.queued === 0 && this.ws?.readyState === this.ws?.OPEN) this.ws?.send(JSON.stringify({ type: 'played', seq: Math.max(seq, this.lastSeq) }));
    });
  }

  private release() {
    this.cap?.stop();
    this.cap = null;
    this.player?.close();
    this.player = null;
  }

  /** Ends the conversation. Nothing is reported after it: the caller
   * that stopped the session already knows. */
  stop() {
    this.stopped = true;
    if (this.ws) {
      this.ws.onopen = null;
      this.ws.onmessage = null;
      this.ws.onclose = null;
    }
    if (this.ws && this.ws.readyState <= 1) {
      try {
        this.ws.send(JSON.stringify({ type: 'bye' }));
      } catch {
        // closing anyway
      }
      this.ws.close(1000, 'bye');
    }
    this.release();
    this.view = { ...this.view, state: 'ended', message: '', prompt: undefined };
  }
}
