// The composer's microphone: records a voice note with MediaRecorder, has
// the daemon transcribe it (POST /v1/audio/transcriptions, the stt tier)
// and hands the transcript to the composer, where the user sees and can
// edit it before sending.
import { useRef, useState } from 'preact/hooks';
import { useApp } from '../context';
import { responseErrorText } from '../lib/errors';

/** The longest recording the button keeps (the daemon takes up to 25 MB). */
export const MAX_RECORDING_MS = 5 * 60_000;

export function VoiceButton({ onText, onError }: { onText: (t: string) => void; onError: (msg: string) => void }) {
  const app = useApp();
  const [state, setState] = useState<'idle' | 'recording' | 'transcribing'>('idle');
  const rec = useRef<MediaRecorder | null>(null);
  if (typeof MediaRecorder === 'undefined' || !navigator.mediaDevices?.getUserMedia) return null;

  const start = async () => {
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch {
      onError('The microphone is not available (permission denied or no device).');
      return;
    }
    const r = new MediaRecorder(stream);
    const chunks: Blob[] = [];
    r.ondataavailable = (e) => e.data.size > 0 && chunks.push(e.data);
    const limit = setTimeout(() => r.state === 'recording' && r.stop(), MAX_RECORDING_MS);
    r.onstop = async () => {
      clearTimeout(limit);
      stream.getTracks().forEach((t) => t.stop());
      rec.current = null;
      const type = r.mimeType || 'audio/webm';
      const blob = new Blob(chunks, { type });
      if (blob.size === 0) {
        setState('idle');
        onError('Nothing was recorded.');
        return;
      }
      setState('transcribing');
      try {
        const fd = new FormData();
        fd.append('model', 'stt');
        fd.append('file', blob, type.includes('ogg') ? 'recording.ogg' : type.includes('mp4') ? 'recording.m4a' : 'recording.webm');
        const res = await app.client.raw('/v1/audio/transcriptions', { method: 'POST', body: fd, headers: { 'x-usage-service': 'web', 'x-usage-action': 'voice' } });
        if (!res.ok) {
          onError(await responseErrorText(res, 'transcription failed'));
        } else {
          const { text } = (await res.json()) as { text: string };
          if (text?.trim()) onText(text.trim());
          else onError('No speech was recognised.');
        }
      } catch {
        onError('Cannot reach the Hestia daemon. Is it running?');
      } finally {
        setState('idle');
      }
    };
    rec.current = r;
    r.start();
    setState('recording');
  };

  const label = state === 'recording' ? 'Stop recording' : state === 'transcribing' ? 'Transcribing…' : 'Record a voice note';
  return (
    <button
      type="button"
      class={`send voice-btn ${state}`}
      aria-label={label}
      title={label}
      aria-pressed={state === 'recording'}
      disabled={state === 'transcribing'}
      onClick={() => (state === 'recording' ? rec.current?.stop() : void start())}
    >
      <svg width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" aria-hidden="true">
        <rect x="9" y="3" width="6" height="11" rx="3" />
        <path d="M5 11a7 7 0 0 0 14 0M12 18v3" />
      </svg>
    </button>
  );
}
