// The composer's voice mode: one tap starts a hands-free conversation in
// this chat (lib/voice.ts). A panel above the composer says what is going
// on (listening, hearing you, thinking, speaking), shows what was heard and
// any approval read out, with Approve / Deny buttons beside the spoken
// answer; the card in the transcript works as usual too. When the
// microphone is refused or speech is not configured, the panel says so
// and how to fix it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useApp } from '../context';
import { VoiceSession, voiceSupported, type VoiceDeps, type VoiceState, type VoiceView } from '../lib/voice';
import '../styles/voice.css';

const labels: Record<VoiceState, string> = {
  connecting: 'Starting…',
  listening: 'Listening',
  hearing: 'Hearing you…',
  transcribing: 'Transcribing…',
  thinking: 'Thinking…',
  speaking: 'Speaking — talk to interrupt',
  ended: 'Voice mode ended',
  'no-mic': 'Microphone blocked',
  unavailable: 'Voice mode is not set up',
  error: 'Voice mode failed',
};

const live = (s: VoiceState) => !['ended', 'no-mic', 'unavailable', 'error'].includes(s);

export function VoiceMode({ chatId, deps }: { chatId: string; deps?: VoiceDeps }) {
  const app = useApp();
  const [view, setView] = useState<VoiceView | null>(null);
  const session = useRef<VoiceSession | null>(null);
  useEffect(
    () => () => {
      session.current?.stop();
      session.current = null;
    },
    [chatId],
  );
  if (!deps && !voiceSupported()) return null;

  const start = () => {
    session.current?.stop();
    const s = new VoiceSession(app.client, chatId, (v) => setView({ ...v }), deps);
    session.current = s;
    void s.start();
  };
  const end = () => {
    session.current?.stop();
    session.current = null;
    setView(null);
  };
  const decide = async (id: string, decision: 'approve' | 'deny') => {
    try {
      await app.client.raw(`/api/approvals/${encodeURIComponent(id)}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ decision }),
      });
    } catch {
      app.toast('error', 'Cannot reach the Hestia daemon. Is it running?');
    }
  };

  const active = !!view && live(view.state);
  return (
    <>
      {view && (
        <div class={`voice-panel state-${view.state}`} role="region" aria-label="Voice mode">
          <div class="voice-status" role="status" aria-live="polite">
            <span class="voice-dot" aria-hidden="true" />
            <span class="voice-label">{labels[view.state]}</span>
            {active && !view.speaks && <span class="voice-note muted small">replies are shown, not spoken</span>}
          </div>
          {view.heard && active && (
            <div class="voice-heard">
              <span class="muted small">Heard:</span> “{view.heard}”
            </div>
          )}
          {view.prompt && active && (
            <div class="voice-prompt" role="alert">
              <p>{view.prompt.text}</p>
              {view.prompt.kind === 'approval' ? (
                <div class="voice-prompt-buttons">
                  <span class="muted small">Say “approve” or “deny”, or tap:</span>
                  <button type="button" class="btn primary small" onClick={() => void decide(view.prompt!.id, 'approve')}>
                    Approve
                  </button>
                  <button type="button" class="btn small" onClick={() => void decide(view.prompt!.id, 'deny')}>
                    Deny
                  </button>
                </div>
              ) : (
                <span class="muted small">Say your answer.</span>
              )}
            </div>
          )}
          {view.message && <div class={`voice-message ${active ? 'muted small' : ''}`}>{view.message}</div>}
          <div class="voice-actions">
            {active ? (
              <button type="button" class="btn voice-end" onClick={end}>
                End voice mode
              </button>
            ) : (
              <>
                {view.state !== 'unavailable' && (
                  <button type="button" class="btn primary small" onClick={start}>
                    Try again
                  </button>
                )}
                <button type="button" class="btn small" onClick={() => setView(null)}>
                  Close
                </button>
              </>
            )}
          </div>
        </div>
      )}
      <button
        type="button"
        class={`send voice-mode-btn ${active ? 'active' : ''}`}
        aria-label={active ? 'Stop voice mode' : 'Start voice mode'}
        title={active ? 'Stop voice mode' : 'Voice mode: talk hands-free'}
        aria-pressed={active}
        onClick={() => (active ? end() : start())}
      >
        <svg width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" aria-hidden="true">
          <path d="M3 10v4M7 7v10M11 4v16M15 8v8M19 11v2" />
        </svg>
      </button>
    </>
  );
}
