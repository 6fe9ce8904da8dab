package speech

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"
)

// Espeak is the zero-configuration local text-to-speech: the espeak-ng
// program, used when it is installed and no tts tier is mapped. Its voice
// is robotic but it needs no model, no network and no setup. The text goes
// in on stdin (never through a shell or the argument list, so nothing in
// it is read as an option) and WAV comes out on stdout.
type Espeak struct {
	Path string // the espeak-ng binary
	// Voice is espeak-ng's -v (default "en"); Speed its -s in words per
	// minute (default 175).
	Voice string
	Speed int
	// Timeout bounds one run (default 20 s): a wedged synthesiser must not
	// hold a voice conversation forever.
	Timeout time.Duration
}

// EspeakModel is the model name usage rows and doctor show for espeak-ng.
const EspeakModel = "espeak-ng"

// FindEspeak returns the espeak-ng on PATH, or nil when it is not
// installed.
func FindEspeak() *Espeak {
	p, err := exec.LookPath("espeak-ng")
	if err != nil {
		return nil
	}
	return &Espeak{Path: p}
}

// Speak synthesises text and returns a WAV file (16-bit mono PCM at
// espeak-ng's 22,050 Hz).
func (e *Espeak) Speak(ctx context.Context, text string) ([]byte, error) {
	if e == nil {
		return nil, ErrTTSNotConfigured
	}
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("there is no text to speak")
	}
	if n := utf8.RuneCountInString(text); n > MaxSpeechInput {
		return nil, fmt.Errorf("the text is %d characters; at most %d can be spoken at once", n, MaxSpeechInput)
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	voice := e.Voice
	if voice == "" {
		voice = "en"
	}
	speed := e.Speed
	if speed <= 0 {
		speed = 175
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Path, "--stdin", "--stdout", "-v", voice, "-s", fmt.Sprint(speed))
	cmd.Stdin = strings.NewReader(text)
	out, errOut := &capped{max: MaxAudio}, &capped{max: 4096}
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.WaitDelay = time.Second // a child holding stdout open must not outlive the timeout
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("espeak-ng took longer than %s", timeout)
	case err != nil:
		msg := strings.TrimSpace(errOut.buf.String())
		if msg != "" {
			return nil, fmt.Errorf("running espeak-ng: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("running espeak-ng: %w", err)
	case out.over:
		return nil, fmt.Errorf("espeak-ng wrote more than %d MB of audio", MaxAudio>>20)
	}
	return fixWAVSizes(out.buf.Bytes())
}

// capped keeps at most max bytes and notes whether more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// fixWAVSizes sets the RIFF and data chunk sizes: espeak-ng writing to a
// pipe cannot seek back, so it leaves placeholders there (0x7ffff024),
// which some decoders read as a truncated file.
func fixWAVSizes(wav []byte) ([]byte, error) {
	if len(wav) < 12 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" {
		return nil, errors.New("espeak-ng did not write a WAV file")
	}
	binary.LittleEndian.PutUint32(wav[4:8], uint32(len(wav)-8))
	// Walk the chunks to the data chunk; its size is the rest of the file.
	for off := 12; off+8 <= len(wav); {
		id := string(wav[off : off+4])
		size := int(binary.LittleEndian.Uint32(wav[off+4 : off+8]))
		if id == "data" {
			binary.LittleEndian.PutUint32(wav[off+4:off+8], uint32(len(wav)-off-8))
			return wav, nil
		}
		if size < 0 || off+8+size > len(wav) {
			break
		}
		off += 8 + size + size&1
	}
	return nil, errors.New("espeak-ng's WAV output has no data chunk")
}
