package speech

import (
	"bytes"
	"strings"
)

// formats are the containers a transcription server accepts, by MIME type.
var formats = map[string]string{
	"audio/ogg": "ogg", "audio/opus": "ogg", "audio/mpeg": "mp3", "audio/mp3": "mp3",
	"audio/mp4": "m4a", "audio/x-m4a": "m4a", "audio/m4a": "m4a", "audio/aac": "m4a",
	"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
	"audio/webm": "webm", "video/webm": "webm", "audio/flac": "flac", "audio/x-flac": "flac",
}

// FormatForMIME returns the container of a MIME type ("audio/webm;
// codecs=opus" → "webm"), or "" when it is not supported.
func FormatForMIME(mime string) string {
	return formats[strings.ToLower(strings.TrimSpace(strings.Split(mime, ";")[0]))]
}

// Sniff names the audio container of data from its first bytes, or "".
// A recording whose bytes are not what its type claims is refused.
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
