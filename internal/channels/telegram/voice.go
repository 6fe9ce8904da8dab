package telegram

import "github.com/hestia-dev/hestia/internal/speech"

// Sniff names the audio container of data from its first bytes, or "".
func Sniff(data []byte) string { return speech.Sniff(data) }
