package config

// SafetyConfig configures the deterministic safety layers around tools.
type SafetyConfig struct {
	// Taint, on by default, tightens policy for the rest of a turn once the
	// turn has read untrusted content (mail, web pages, documents, MCP
	// results): tools that write or send data off the machine are gated
	// even where a trust rule or temporary mode would allow them.
	Taint bool `toml:"taint"`
}

func defaultSafety() SafetyConfig { return SafetyConfig{Taint: true} }

func (SafetyConfig) validate() []error { return nil }
