package voice

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// The socket's protocol:
//
// client → daemon
//
//	text   {"type":"hello","format":"s16le","sample_rate":16000,"channels":1}  first, once
//	binary PCM: 16-bit little-endian mono samples at 16 kHz, any even length up to 64 KiB
//	text   {"type":"played","seq":N}  playback finished everything up to audio N
//	text   {"type":"bye"}             the user ended voice mode
//
// daemon → client
//
//	text   {"type":"ready",…}, {"type":"state","state":…}, {"type":"transcript","text":…},
//	       {"type":"approval","id":…,"text":…}, {"type":"approval.resolved","id":…,"decision":…},
//	       {"type":"stop"} (barge-in: stop playback now), {"type":"notice","text":…},
//	       {"type":"timing",…} (the latency split of a turn's first audio)
//	binary one spoken piece: a 4-byte big-endian header length, the JSON
//	       header {"seq":N,"mime":"audio/wav","text":…}, then the audio
//
// A frame that breaks these rules closes the socket with a reason saying
// which rule (close codes 1003 unsupported data, 1008 policy, 1009 too big).

// MaxFrame bounds one client message (64 KiB: two seconds of audio).
const MaxFrame = 64 << 10

// control is a client's text message.
type control struct {
	Type       string `json:"type"`
	Format     string `json:"format,omitempty"`
	SampleRate int    `json:"sample_rate,omitempty"`
	Channels   int    `json:"channels,omitempty"`
	Seq        int64  `json:"seq,omitempty"`
}

// protocolError is a frame that breaks the protocol; its text becomes the
// close reason (at most 123 bytes, the WebSocket limit).
type protocolError struct{ reason string }

func (e *protocolError) Error() string { return e.reason }

func badFrame(format string, args ...any) error {
	r := fmt.Sprintf(format, args...)
	if len(r) > 123 {
		r = r[:123]
	}
	return &protocolError{r}
}

// parseControl decodes and validates a text message. hello reports
// whether the hello was already received.
func parseControl(data []byte, hello bool) (control, error) {
	var c control
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return c, badFrame("text frames must be one JSON object with a known type")
	}
	switch c.Type {
	case "hello":
		if hello {
			return c, badFrame("hello was already sent")
		}
		if c.Format != "s16le" || c.SampleRate != SampleRate || c.Channels != 1 {
			return c, badFrame("only 16 kHz mono s16le audio is accepted (hello: format s16le, sample_rate 16000, channels 1)")
		}
	case "played":
		if c.Seq < 0 {
			return c, badFrame("played needs a seq of zero or more")
		}
	case "bye":
	case "":
		return c, badFrame("a text frame has no type")
	default:
		return c, badFrame("unknown message type %q", truncate(c.Type, 32))
	}
	if !hello && c.Type != "hello" {
		return c, badFrame("send hello first")
	}
	return c, nil
}

// checkAudio validates a binary (PCM) message.
func checkAudio(data []byte, hello bool) error {
	switch {
	case !hello:
		return badFrame("send hello before audio")
	case len(data)%2 != 0:
		return badFrame("audio frames must be 16-bit PCM: an even number of bytes")
	}
	return nil
}

// audioFrame builds the binary message of one spoken piece.
func audioFrame(seq int64, mime, text string, audio []byte) []byte {
	h, _ := json.Marshal(map[string]any{"seq": seq, "mime": mime, "text": text})
	out := make([]byte, 4, 4+len(h)+len(audio))
	binary.BigEndian.PutUint32(out, uint32(len(h)))
	out = append(out, h...)
	return append(out, audio...)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
