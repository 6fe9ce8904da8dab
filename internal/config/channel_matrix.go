package config

// MatrixChannel configures the matrix channel ([channels.matrix]); see
// internal/channels/matrix.
type MatrixChannel struct {
	// Owners are the owner's ids on this platform: chat, approve, read.
	Owners []string `toml:"owners"`
	// Contacts are trusted people as "ID" (chat and read) or
	// "ID:scope+scope"; their messages are untrusted content.
	Contacts []string `toml:"contacts"`
	// APIURL is the platform's API root (tests point it at a fake).
	APIURL string `toml:"api_url"`
	// Token or TokenFile (owner-only) holds the credential.
	Token     string `toml:"token" secret:"true"`
	TokenFile string `toml:"token_file"`
}

// Enabled reports whether the channel is configured.
func (c MatrixChannel) Enabled() bool { return c.Token != "" || c.TokenFile != "" }

func defaultMatrix() MatrixChannel { return MatrixChannel{} }

func (c MatrixChannel) validate() []error {
	var errs []error
	errs = append(errs, validateIdentity("channels.matrix", c.Enabled(), c.Owners, c.Contacts)...)
	errs = append(errs, validateSecretFile("channels.matrix.token_file", c.TokenFile)...)
	errs = append(errs, validateHTTPURL("channels.matrix.api_url", c.APIURL, "https://…")...)
	return errs
}
