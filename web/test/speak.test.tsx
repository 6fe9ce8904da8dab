import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppContext } from '../src/context';
import { MAX_SPEECH_CHARS, SpeakButton, speakable } from '../src/components/SpeakButton';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

// A stand-in for the browser's audio element: records what it was asked
// to play and lets the test end playback.
class FakeAudio {
  static played: FakeAudio[] = [];
  onended: (() => void) | null = null;
  paused = true;
  constructor(public src: string) {}
  play() {
    this.paused = false;
    FakeAudio.played.push(this);
    return Promise.resolve();
  }
  pause() {
    this.paused = true;
  }
}

function withApp(routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const wrap = (node: any) => render(<AppContext.Provider value={app}>{node}</AppContext.Provider>);
  return { wrap, calls: ff.calls };
}

describe('speakable', () => {
  it('drops Markdown marks and bounds the length', () => {
    expect(speakable('**Done**, see [the note](https://x.example) and `ls`.')).toBe('Done, see the note and ls.');
    expect(speakable('# Title\n- one\n- two')).toBe('Title\none\ntwo');
    expect(Array.from(speakable('é'.repeat(MAX_SPEECH_CHARS + 10))).length).toBe(MAX_SPEECH_CHARS);
    expect(speakable('```\n```')).toBe('');
  });
});

describe('SpeakButton', () => {
  beforeEach(() => {
    FakeAudio.played = [];
    vi.stubGlobal('Audio', FakeAudio);
    URL.createObjectURL = vi.fn(() => 'blob:speech-1');
    URL.revokeObjectURL = vi.fn();
  });
  afterEach(() => vi.unstubAllGlobals());

  it('reads the reply aloud through /v1/audio/speech and stops on a second press', async () => {
    const { wrap, calls } = withApp({
      'POST /v1/audio/speech': () => new Response(new Uint8Array([0x49, 0x44, 0x33, 1, 2, 3]), { headers: { 'Content-Type': 'audio/mpeg' } }),
    });
    wrap(<SpeakButton text="I wrote **note.txt**." />);
    fireEvent.click(screen.getByRole('button', { name: 'Read aloud' }));
    await screen.findByRole('button', { name: 'Stop reading aloud' });
    expect(calls).toHaveLength(1);
    const body = JSON.parse(await calls[0].text());
    expect(body).toEqual({ model: 'tts', input: 'I wrote note.txt.', response_format: 'mp3' });
    expect(calls[0].headers.get('Authorization')).toBe('Bearer tok');
    expect(calls[0].headers.get('x-usage-service')).toBe('web');
    expect(FakeAudio.played).toHaveLength(1);
    expect(FakeAudio.played[0].src).toBe('blob:speech-1');
    fireEvent.click(screen.getByRole('button', { name: 'Stop reading aloud' }));
    await screen.findByRole('button', { name: 'Read aloud' });
    expect(FakeAudio.played[0].paused).toBe(true);
    expect(URL.revokeObjectURL).toHaveBeenCalledWith('blob:speech-1');
  });

  it('shows why when text-to-speech is not configured', async () => {
    const { wrap } = withApp({
      'POST /v1/audio/speech': () => json({ error: { code: 'not_configured', message: 'text-to-speech is not configured: map [llm.tiers] tts' } }, 503),
    });
    wrap(<SpeakButton text="hello" />);
    fireEvent.click(screen.getByRole('button', { name: 'Read aloud' }));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toContain('not configured'));
    expect(FakeAudio.played).toHaveLength(0);
    expect(screen.getByRole('button', { name: 'Read aloud' })).toBeTruthy();
  });

  it('has nothing to read for an empty reply', () => {
    const { wrap } = withApp({});
    const { container } = wrap(<SpeakButton text={'```\n```'} />);
    expect(container.querySelector('button')).toBeNull();
  });
});
