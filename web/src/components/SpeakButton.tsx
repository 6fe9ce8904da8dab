// A play button on assistant messages: asks the daemon to read the reply
// aloud (POST /v1/audio/speech, the tts tier) and plays the audio. A tier
// that is not configured answers 503 with a clear message, shown in place.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useApp } from '../context';
import { responseErrorText } from '../lib/errors';

/** The most characters one speech request takes (the daemon's limit). */
export const MAX_SPEECH_CHARS = 4096;

/** speakable strips Markdown marks so they are not read aloud. */
export function speakable(md: string): string {
  const s = md
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/^```.*$/gm, '')
    .replace(/^#{1,6}\s+/gm, '')
    .replace(/^\s*[-*+]\s+/gm, '')
    .replace(/\*\*|__|`|~~/g, '')
    .trim();
  return Array.from(s).slice(0, MAX_SPEECH_CHARS).join('');
}

export function SpeakButton({ text }: { text: string }) {
  const app = useApp();
  const [state, setState] = useState<'idle' | 'loading' | 'playing'>('idle');
  const [error, setError] = useState('');
  const audio = useRef<HTMLAudioElement | null>(null);
  const url = useRef('');
  const release = () => {
    audio.current?.pause();
    audio.current = null;
    if (url.current) URL.revokeObjectURL(url.current);
    url.current = '';
  };
  useEffect(() => release, []);
  const input = speakable(text);
  if (!input) return null;

  const play = async () => {
    if (state === 'playing') {
      release();
      setState('idle');
      return;
    }
    setState('loading');
    setError('');
    try {
      const res = await app.client.raw('/v1/audio/speech', {
        method: 'POST',
        body: JSON.stringify({ model: 'tts', input, response_format: 'mp3' }),
        headers: { 'Content-Type': 'application/json', 'x-usage-service': 'web', 'x-usage-action': 'speak' },
      });
      if (!res.ok) {
        setError(await responseErrorText(res, 'speech failed'));
        setState('idle');
        return;
      }
      release();
      url.current = URL.createObjectURL(await res.blob());
      const a = new Audio(url.current);
      audio.current = a;
      a.onended = () => {
        release();
        setState('idle');
      };
      await a.play();
      setState('playing');
    } catch {
      release();
      setError('The reply could not be played.');
      setState('idle');
    }
  };

  const label = state === 'playing' ? 'Stop reading aloud' : state === 'loading' ? 'Preparing speech…' : 'Read aloud';
  return (
    <div class="speak">
      <button type="button" class={`speak-btn ${state}`} aria-label={label} title={label} aria-pressed={state === 'playing'} disabled={state === 'loading'} onClick={() => void play()}>
        <svg width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" aria-hidden="true">
          {state === 'playing' ? <path d="M6 6h12v12H6z" /> : <path d="M11 5 6 9H3v6h3l5 4zM15.5 8.5a5 5 0 0 1 0 7M18.5 5.5a9 9 0 0 1 0 13" />}
        </svg>
      </button>
      {error && (
        <span class="muted small" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
