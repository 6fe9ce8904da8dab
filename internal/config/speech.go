package config

// Speech tiers live in [llm.tiers] beside the chat tiers, but only
// internal/speech uses them: stt = OpenAI-compatible /audio/transcriptions
// targets, tts = /audio/speech targets. The chat router ignores them.
var speechTierNames = []string{"stt", "tts"}

// IsSpeechTier reports whether name is a speech tier key.
func IsSpeechTier(name string) bool {
	for _, n := range speechTierNames {
		if n == name {
			return true
		}
	}
	return false
}
