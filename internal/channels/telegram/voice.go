package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// audioFormats are the containers a speech-to-text server accepts, by the
// MIME type Telegram reports; the bytes are checked too (Sniff).
var audioFormats = map[string]string{
	"audio/ogg": "ogg", "audio/opus": "ogg", "audio/mpeg": "mp3", "audio/mp3": "mp3",
	"audio/mp4": "m4a", "audio/x-m4a": "m4a", "audio/m4a": "m4a", "audio/aac": "m4a",
	"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
	"audio/webm": "webm", "audio/flac": "flac", "audio/x-flac": "flac",
}

// Sniff names the audio container of data from its first bytes, or "".
func Sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("OggS")):
		return "ogg"
	case bytes.HasPrefix(data, []byte("ID3")), len(data) > 1 && data[0] == 0xFF && data[1]&0xE0 == 0xE0:
		return "mp3"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WAVE")):
		return "wav"
	case bytes.HasPrefix(data, []byte("fLaC")):
		return "flac"
	case bytes.HasPrefix(data, []byte{0x1A, 0x45, 0xDF, 0xA3}):
		return "webm"
	case len(data) >= 12 && bytes.Equal(data[4:8], []byte("ftyp")):
		return "m4a"
	}
	return ""
}

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
	ext, ok := audioFormats[mime]
	if !ok {
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
	if got := Sniff(data); got == "" || got != ext && !(ext == "m4a" && got == "m4a") {
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
