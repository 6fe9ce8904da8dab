import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { AppContext } from '../src/context';
import { VoiceMode } from '../src/components/VoiceMode';
import { closeMessage, parseAudioFrame, type Player, type VoiceDeps } from '../src/lib/voice';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens, tick } from './helpers';

function frame(header: object, audio: number[]): ArrayBuffer {
  const h = new TextEncoder().encode(JSON.stringify(header));
  const buf = new ArrayBuffer(4 + h.length + audio.length);
  new DataView(buf).setUint32(0, h.length);
  new Uint8Array(buf, 4).set(h);
  new Uint8Array(buf, 4 + h.length).set(audio);
  return buf;
}

describe('parseAudioFrame', () => {
  it('reads the header and the audio', () => {
    const p = parseAudioFrame(frame({ seq: 3, mime: 'audio/wav', text: 'Hello.' }, [1, 2, 3]));
    expect(p?.seq).toBe(3);
    expect(p?.mime).toBe('audio/wav');
    expect(p?.text).toBe('Hello.');
    expect(Array.from(new Uint8Array(p!.audio))).toEqual([1, 2, 3]);
  });
  it('refuses what is not a frame', () => {
    expect(parseAudioFrame(new ArrayBuffer(2))).toBeNull();
    const bad = new ArrayBuffer(8);
    new DataView(bad).setUint32(0, 100);
    expect(parseAudioFrame(bad)).toBeNull();
    expect(parseAudioFrame(frame({ mime: 'audio/wav' }, []))).toBeNull();
    const junk = new ArrayBuffer(6);
    new DataView(junk).setUint32(0, 2);
    expect(parseAudioFrame(junk)).toBeNull();
  });
});

describe('closeMessage', () => {
  it('turns close codes and reasons into sentences', () => {
    expect(closeMessage(1000, 'bye')).toBe('Voice mode ended.');
    expect(closeMessage(1008, 'the device was revoked')).toBe('The device was revoked.');
    expect(closeMessage(1006, '')).toBe('The connection to the daemon was lost.');
  });
});

class FakeWS {
  static all: FakeWS[] = [];
  readonly OPEN = 1;
  readyState = 0;
  binaryType = 'blob';
  sent: unknown[] = [];
  closed?: { code?: number; reason?: string };
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  constructor(public url: string) {
    FakeWS.all.push(this);
  }
  send(d: unknown) {
    this.sent.push(d);
  }
  close(code?: number, reason?: string) {
    this.closed = { code, reason };
    this.readyState = 3;
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  server(m: object | ArrayBuffer) {
    this.onmessage?.({ data: m instanceof ArrayBuffer ? m : JSON.stringify(m) });
  }
  sentJSON() {
    return this.sent.filter((s) => typeof s === 'string').map((s) => JSON.parse(s as string));
  }
}

function setup(routes: Parameters<typeof fakeFetch>[0], mic: 'ok' | 'denied' = 'ok') {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const played: ArrayBuffer[] = [];
  let finish: (() => void) | null = null;
  const player: Player & { stops: number } = {
    stops: 0,
    play: (audio) => {
      played.push(audio);
      return new Promise<void>((r) => (finish = r));
    },
    stop() {
      this.stops++;
    },
    close() {},
  };
  const frames: ((pcm: ArrayBuffer) => void)[] = [];
  const track = { stop: vi.fn() };
  const capStop = vi.fn();
  const deps: VoiceDeps = {
    WebSocket: FakeWS as unknown as typeof WebSocket,
    getUserMedia: vi.fn(async () => {
      if (mic === 'denied') throw new DOMException('denied', 'NotAllowedError');
      return { getTracks: () => [track] } as unknown as MediaStream;
    }),
    capture: vi.fn(async (_s, onFrame) => {
      frames.push(onFrame);
      return { stop: capStop };
    }),
    player: () => player,
    location: { protocol: 'http:', host: '127.0.0.1:4317' },
  };
  render(
    <AppContext.Provider value={app}>
      <VoiceMode chatId="c_1" deps={deps} />
    </AppContext.Provider>,
  );
  return { calls: ff.calls, deps, player, played, frames, track, capStop, finishPlayback: () => finish?.() };
}

describe('VoiceMode', () => {
  beforeEach(() => {
    FakeWS.all = [];
  });

  it('says how to set up speech when the daemon has none', async () => {
    const { calls } = setup({
      'POST /api/voice/tickets': () =>
        json({ error: { code: 'not_configured', message: 'Voice mode needs speech-to-text: map [llm.tiers] stt' } }, 503),
    });
    fireEvent.click(screen.getByRole('button', { name: 'Start voice mode' }));
    await screen.findByText('Voice mode is not set up');
    expect(screen.getByText(/map \[llm.tiers\] stt/)).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Try again' })).toBeNull();
    expect(calls).toHaveLength(1);
    expect(FakeWS.all).toHaveLength(0);
    fireEvent.click(screen.getByRole('button', { name: 'Close' }));
    expect(screen.queryByRole('region', { name: 'Voice mode' })).toBeNull();
  });

  it('shows a blocked microphone and asks for no ticket', async () => {
    const { calls } = setup({}, 'denied');
    fireEvent.click(screen.getByRole('button', { name: 'Start voice mode' }));
    await screen.findByText('Microphone blocked');
    expect(screen.getByText(/Allow it for this site/)).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Try again' })).toBeTruthy();
    expect(calls).toHaveLength(0);
  });

  it('runs a conversation: states, transcript, approval, spoken pieces, barge-in, the end', async () => {
    const { calls, deps, player, played, frames, finishPlayback, capStop } = setup({
      'POST /api/voice/tickets': () => json({ ticket: 't', chat_id: 'c_1', url: '/voice/socket?ticket=t', stt: 'endpoint', tts: 'espeak-ng' }),
      'POST /api/approvals/ap1': () => json({ id: 'ap1', decision: 'approve' }),
    });
    fireEvent.click(screen.getByRole('button', { name: 'Start voice mode' }));
    await waitFor(() => expect(FakeWS.all).toHaveLength(1));
    const ws = FakeWS.all[0];
    expect(ws.url).toBe('ws://127.0.0.1:4317/voice/socket?ticket=t');
    expect(JSON.parse(await calls[0].text())).toEqual({ chat_id: 'c_1' });
    expect(calls[0].headers.get('Authorization')).toBe('Bearer tok');
    ws.open();
    await waitFor(() => expect(deps.capture).toHaveBeenCalled());
    expect(ws.sentJSON()[0]).toEqual({ type: 'hello', format: 's16le', sample_rate: 16000, channels: 1 });
    // Microphone frames go out as binary.
    const pcm = new Int16Array(320).buffer;
    frames[0](pcm);
    expect(ws.sent).toContain(pcm);

    ws.server({ type: 'ready', tts: 'espeak-ng' });
    ws.server({ type: 'state', state: 'listening' });
    await screen.findByText('Listening');
    expect(screen.getByRole('button', { name: 'Stop voice mode' }).getAttribute('aria-pressed')).toBe('true');
    ws.server({ type: 'transcript', text: 'Write down the plan' });
    await screen.findByText(/Write down the plan/);

    ws.server({ type: 'approval', id: 'ap1', text: 'I need your approval to write file: plan.txt. Approve or deny?' });
    await screen.findByText(/Approve or deny\?/);
    fireEvent.click(screen.getByRole('button', { name: 'Approve' }));
    await waitFor(() => expect(calls.some((c) => c.url.endsWith('/api/approvals/ap1'))).toBe(true));
    const decide = calls.find((c) => c.url.endsWith('/api/approvals/ap1'))!;
    expect(JSON.parse(await decide.text())).toEqual({ decision: 'approve' });
    ws.server({ type: 'approval.resolved', id: 'ap1', decision: 'approve' });
    await waitFor(() => expect(screen.queryByText(/Approve or deny\?/)).toBeNull());

    ws.server({ type: 'state', state: 'speaking' });
    ws.server(frame({ seq: 1, mime: 'audio/wav', text: 'Saved.' }, [9, 9]));
    expect(played).toHaveLength(1);
    await screen.findByText(/talk to interrupt/);
    finishPlayback();
    await tick();
    expect(ws.sentJSON()).toContainEqual({ type: 'played', seq: 1 });
    // Barge-in: the daemon says stop, playback stops.
    ws.server({ type: 'stop' });
    expect(player.stops).toBe(1);

    fireEvent.click(screen.getByRole('button', { name: 'End voice mode' }));
    expect(ws.sentJSON()).toContainEqual({ type: 'bye' });
    expect(ws.closed).toEqual({ code: 1000, reason: 'bye' });
    expect(capStop).toHaveBeenCalled(); // the microphone is released
    expect(screen.queryByRole('region', { name: 'Voice mode' })).toBeNull();
  });

  it('explains why the daemon closed the socket', async () => {
    setup({ 'POST /api/voice/tickets': () => json({ ticket: 't', chat_id: 'c_1', url: '/voice/socket?ticket=t', stt: 'endpoint', tts: 'none' }) });
    fireEvent.click(screen.getByRole('button', { name: 'Start voice mode' }));
    await waitFor(() => expect(FakeWS.all).toHaveLength(1));
    const ws = FakeWS.all[0];
    ws.open();
    ws.server({ type: 'state', state: 'listening' });
    await screen.findByText('replies are shown, not spoken');
    ws.onclose?.({ code: 1008, reason: 'replaced by a newer voice session in this chat' });
    await screen.findByText('Voice mode ended');
    expect(screen.getByText('Replaced by a newer voice session in this chat.')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Start voice mode' })).toBeTruthy();
  });
});
