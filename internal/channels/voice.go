package channels

import (
	"context"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/speech"
)

// Speaker turns a reply into audio (the tts tier): audio and content type.
type Speaker interface {
	Speak(ctx context.Context, text string) ([]byte, string, error)
}

// Voice reply modes (Config.VoiceReplies).
const (
	VoiceWhenVoice = "voice" // when the person's message was a voice note (default)
	VoiceAlways    = "always"
	VoiceOff       = "off"
)

// transcribe turns a voice note into text, or answers why it cannot and
// reports false. Size and format are checked before anything is fetched
// and again on the bytes; nothing is transcribed for a refused note.
func (r *Relay) transcribe(ctx context.Context, u Update) (string, bool) {
	v := u.Voice
	refuse := func(reason string) (string, bool) {
		r.d.Audit(ctx, "channel.voice_refused", "", "voice note refused: "+reason,
			map[string]any{"channel": r.name, "sender": u.Sender, "size": v.Size, "mime": v.Mime})
		r.reply(ctx, u, "I can't use that voice note: "+reason)
		return "", false
	}
	if r.d.Transcriber == nil {
		return refuse("speech-to-text is not configured (set [llm.tiers] stt to an OpenAI-compatible transcription endpoint).")
	}
	limitMB := r.cfg.MaxVoiceBytes >> 20
	if v.Size > r.cfg.MaxVoiceBytes {
		return refuse(fmt.Sprintf("it is %.1f MB; at most %d MB are accepted.", float64(v.Size)/(1<<20), limitMB))
	}
	mime := strings.ToLower(strings.TrimSpace(strings.Split(v.Mime, ";")[0]))
	ext := speech.FormatForMIME(mime)
	if ext == "" {
		return refuse(fmt.Sprintf("the audio format %q is not supported (ogg/opus, mp3, m4a, wav, webm, flac are).", mime))
	}
	if v.Fetch == nil {
		return refuse("the platform did not hand over the file.")
	}
	data, err := v.Fetch(ctx)
	if err != nil {
		r.d.Log.Warn("fetching a voice note", "channel", r.name, "err", err)
		return refuse("fetching it failed.")
	}
	if int64(len(data)) > r.cfg.MaxVoiceBytes {
		return refuse(fmt.Sprintf("it is larger than %d MB.", limitMB))
	}
	if got := speech.Sniff(data); got == "" || got != ext {
		return refuse("its content is not the audio format it claims to be.")
	}
	text, err := r.d.Transcriber.Transcribe(ctx, data, "voice."+ext, mime)
	if err != nil {
		r.d.Log.Warn("transcribing a voice note", "channel", r.name, "err", err)
		return refuse("transcription failed: " + err.Error())
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return refuse("no speech was recognised in it.")
	}
	// What was heard is shown, so a misheard note is caught before it acts.
	r.reply(ctx, u, "🎤 _"+truncate(text, 3000)+"_")
	r.d.Audit(ctx, "channel.voice", "", "voice note transcribed", map[string]any{"channel": r.name, "sender": u.Sender, "bytes": len(data), "chars": len(text)})
	return text, true
}

// speaks reports whether a reply is spoken, given whether the message it
// answers was a voice note.
func (r *Relay) speaks(voiceNote bool) bool {
	if r.d.Speaker == nil {
		return false
	}
	if _, ok := r.d.Platform.(VoiceSender); !ok {
		return false
	}
	switch r.cfg.VoiceReplies {
	case VoiceAlways:
		return true
	case VoiceWhenVoice, "":
		return voiceNote
	}
	return false
}

// speakReply posts the reply as audio after its text, in the background
// (synthesis takes seconds). A failure is logged and noted in the
// conversation; the text reply is already on its way.
func (r *Relay) speakReply(ctx context.Context, conv, text, replyTo string) {
	spoken := truncate(PlainText(text), speech.MaxSpeechInput)
	if strings.TrimSpace(spoken) == "" {
		return
	}
	vs := r.d.Platform.(VoiceSender)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		audio, ct, err := r.d.Speaker.Speak(ctx, spoken)
		if err == nil {
			err = vs.SendVoice(ctx, conv, audio, ct)
		}
		if err != nil {
			r.d.Log.Warn("speaking a channel reply", "channel", r.name, "err", err)
			r.reply(ctx, Update{ID: "voice:" + conv + ":" + fmt.Sprint(r.d.Clock().UnixNano()), Conv: conv, ReplyTo: replyTo}, "(The spoken reply failed: "+err.Error()+")")
			return
		}
		r.d.Audit(ctx, "channel.voice_reply", "", "reply spoken", map[string]any{"channel": r.name, "conv": conv, "bytes": len(audio), "chars": len(spoken)})
	}()
}

var (
	mdLink    = lazyre.New(`\[([^\]]*)\]\([^)]*\)`)
	mdFence   = lazyre.New("(?m)^```.*$")
	mdHeading = lazyre.New(`(?m)^#{1,6}\s+`)
	mdBullet  = lazyre.New(`(?m)^\s*[-*+]\s+`)
	mdMarks   = strings.NewReplacer("**", "", "__", "", "`", "", "~~", "")
)

// PlainText strips Markdown marks so they are not read aloud (and for
// platforms without formatting): links keep their text; fences, heading
// hashes, bullets and emphasis marks go.
func PlainText(md string) string {
	s := mdLink.ReplaceAllString(md, "$1")
	s = mdFence.ReplaceAllString(s, "")
	s = mdHeading.ReplaceAllString(s, "")
	s = mdBullet.ReplaceAllString(s, "")
	s = mdMarks.Replace(s)
	return strings.TrimSpace(s)
}
