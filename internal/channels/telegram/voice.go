package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/speech"
)

// Sniff names the audio container of data from its first bytes, or "".
func Sniff(data []byte) string { return speech.Sniff(data) }

// transcribe turns a voice note into text, or answers why it cannot and
// reports false. Size and format are checked before anything is
// downloaded and again on the bytes; nothing runs for a refused note.
func (b *Bot) transcribe(ctx context.Context, msg *Message, media *Media) (string, bool) {
	refuse := func(reason string) (string, bool) {
		b.d.Audit(ctx, "telegram.voice_refused", "", "voice note refused: "+reason, map[string]any{"user_id": msg.From.ID, "size": media.FileSize, "mime": media.MimeType})
		b.send(ctx, msg.Chat.ID, Escape("I can't use that voice note: "+reason), nil)
		return "", false
	}
	if b.d.Transcriber == nil {
		return refuse("speech-to-text is not configured (set [llm.tiers] stt to an OpenAI-compatible transcription endpoint).")
	}
	if media.FileSize > b.cfg.MaxVoiceBytes {
		return refuse(fmt.Sprintf("it is %.1f MB; at most %d MB are accepted.", float64(media.FileSize)/(1<<20), b.cfg.MaxVoiceBytes>>20))
	}
	mime := strings.ToLower(strings.TrimSpace(strings.Split(media.MimeType, ";")[0]))
	if mime == "" && msg.Voice != nil {
		mime = "audio/ogg" // voice notes are Opus in Ogg
	}
	ext := speech.FormatForMIME(mime)
	if ext == "" {
		return refuse(fmt.Sprintf("the audio format %q is not supported (ogg/opus, mp3, m4a, wav, webm, flac are).", mime))
	}
	f, err := b.d.API.GetFile(ctx, media.FileID)
	if err != nil {
		return refuse("Telegram did not hand over the file.")
	}
	if f.FileSize > b.cfg.MaxVoiceBytes {
		return refuse(fmt.Sprintf("it is %.1f MB; at most %d MB are accepted.", float64(f.FileSize)/(1<<20), b.cfg.MaxVoiceBytes>>20))
	}
	data, err := b.d.API.Download(ctx, f.FilePath, b.cfg.MaxVoiceBytes)
	if errors.Is(err, ErrTooLarge) {
		return refuse(fmt.Sprintf("it is larger than %d MB.", b.cfg.MaxVoiceBytes>>20))
	}
	if err != nil {
		return refuse("downloading it from Telegram failed.")
	}
	if got := Sniff(data); got == "" || got != ext {
		return refuse("its content is not the audio format it claims to be.")
	}
	text, err := b.d.Transcriber.Transcribe(ctx, data, "voice."+ext, mime)
	if err != nil {
		b.d.Log.Warn("transcribing telegram voice note", "err", err)
		return refuse("transcription failed: " + err.Error())
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return refuse("no speech was recognised in it.")
	}
	b.send(ctx, msg.Chat.ID, "🎤 <i>"+Escape(Truncate(text, 3000))+"</i>", nil)
	b.d.Audit(ctx, "telegram.voice", "", "voice note transcribed", map[string]any{"user_id": msg.From.ID, "bytes": len(data), "chars": len(text)})
	return text, true
}
