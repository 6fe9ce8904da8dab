package telegram

import (
	"context"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/speech"
)

// speaks reports whether a reply is spoken, given whether the message it
// answers was a voice note.
func (b *Bot) speaks(voiceNote bool) bool {
	if b.d.Speaker == nil {
		return false
	}
	switch b.cfg.VoiceReplies {
	case VoiceAlways:
		return true
	case VoiceWhenVoice:
		return voiceNote
	}
	return false
}

// speakReply sends the reply as a voice note after its text, in the
// background (speech synthesis takes seconds). A failure is logged and
// noted in the chat; the text reply has already arrived.
func (b *Bot) speakReply(ctx context.Context, chat int64, text string) {
	spoken := Truncate(PlainText(text), speech.MaxSpeechInput)
	if strings.TrimSpace(spoken) == "" {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		audio, ct, err := b.d.Speaker.Speak(ctx, spoken)
		if err != nil {
			b.d.Log.Warn("speaking a telegram reply", "err", err)
			b.send(ctx, chat, Escape("(The spoken reply failed: "+err.Error()+")"), nil)
			return
		}
		// Ogg/Opus shows as a voice note; other formats go as audio files.
		format := speech.Sniff(audio)
		asAudio := format != "ogg"
		if format == "" {
			format = "bin"
		}
		if _, err := b.d.API.SendVoice(ctx, chat, audio, "reply."+format, ct, asAudio); err != nil {
			b.d.Log.Warn("sending a telegram voice reply", "err", err)
			return
		}
		b.d.Audit(ctx, "telegram.voice_reply", "", "reply spoken", map[string]any{"tg_chat_id": chat, "bytes": len(audio), "chars": len(spoken)})
	}()
}

var (
	mdLink    = lazyre.New(`\[([^\]]*)\]\([^)]*\)`)
	mdFence   = lazyre.New("(?m)^```.*$")
	mdHeading = lazyre.New(`(?m)^#{1,6}\s+`)
	mdBullet  = lazyre.New(`(?m)^\s*[-*+]\s+`)
	mdMarks   = strings.NewReplacer("**", "", "__", "", "`", "", "~~", "")
)

// PlainText strips Markdown marks so they are not read aloud: links keep
// their text, fences, headings' hashes, bullets and emphasis marks go.
func PlainText(md string) string {
	s := mdLink.ReplaceAllString(md, "$1")
	s = mdFence.ReplaceAllString(s, "")
	s = mdHeading.ReplaceAllString(s, "")
	s = mdBullet.ReplaceAllString(s, "")
	s = mdMarks.Replace(s)
	return strings.TrimSpace(s)
}
