package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// MCPConfig configures Model Context Protocol servers whose tools the
// agent may use ([mcp.servers.NAME]) and Hestia's own MCP endpoint.
type MCPConfig struct {
	Servers map[string]MCPServer `toml:"servers"`
	// Serve exposes Hestia's tools to outside MCP clients at /api/mcp on
	// the daemon (bearer token required, every call under the policy).
	Serve bool `toml:"serve"`
}

// MCPServer is one configured server: a local program spoken to over
// stdio (Command) or a streamable HTTP endpoint (URL), never both.
//
// A stdio server gets only the environment variables named in Env (plus
// PATH, HOME, LANG and TMPDIR), never Hestia's whole environment. HTTP
// header values are read from environment variables (HeadersEnv) or files
// (HeadersFile) so that tokens never sit in the configuration.
type MCPServer struct {
	Command     string            `toml:"command"`
	Args        []string          `toml:"args"`
	Env         []string          `toml:"env"`
	Dir         string            `toml:"dir"`
	URL         string            `toml:"url"`
	HeadersEnv  map[string]string `toml:"headers_env"`
	HeadersFile map[string]string `toml:"headers_file"`
	// Timeout bounds one tool call (default 60s).
	Timeout  Duration `toml:"timeout"`
	Disabled bool     `toml:"disabled"`
}

var (
	mcpNameRE   = lazyre.New(`^[a-z][a-z0-9_]{0,23}$`)
	envNameRE   = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerKeyRE = lazyre.New("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// MCPServerNames returns the configured server names, sorted.
func (m MCPConfig) MCPServerNames() []string {
	names := make([]string, 0, len(m.Servers))
	for n := range m.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (m MCPConfig) validate() []error {
	var errs []error
	for _, name := range m.MCPServerNames() {
		s := m.Servers[name]
		key := "mcp.servers." + name
		// Tool names are mcp__NAME__TOOL; a double underscore in NAME would
		// make them ambiguous.
		if !mcpNameRE.MatchString(name) || strings.Contains(name, "__") {
			errs = append(errs, &Error{Key: key, Value: name, Allowed: "a server name of lower-case letters, digits and single underscores, starting with a letter, at most 24 characters"})
		}
		switch {
		case s.Command == "" && s.URL == "":
			errs = append(errs, &Error{Key: key + ".command", Value: "", Allowed: "a program to run over stdio, or set url for a streamable HTTP server"})
		case s.Command != "" && s.URL != "":
			errs = append(errs, &Error{Key: key + ".url", Value: s.URL, Allowed: "either command (stdio) or url (HTTP), not both"})
		case s.URL != "":
			u, err := url.Parse(s.URL)
			switch {
			case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
				errs = append(errs, &Error{Key: key + ".url", Value: s.URL, Allowed: "an http:// or https:// URL"})
			case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
				// Header tokens would cross the network in clear text.
				errs = append(errs, &Error{Key: key + ".url", Value: s.URL, Allowed: "https:// for a server that is not on this machine"})
			case u.User != nil:
				errs = append(errs, &Error{Key: key + ".url", Value: u.Redacted(), Allowed: "a URL without credentials (use headers_env or headers_file)"})
			}
			if len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "" {
				errs = append(errs, &Error{Key: key + ".args", Value: strings.Join(s.Args, " "), Allowed: "args, env and dir only apply to stdio servers (command)"})
			}
		default:
			if len(s.HeadersEnv) > 0 || len(s.HeadersFile) > 0 {
				errs = append(errs, &Error{Key: key + ".headers_env", Value: "", Allowed: "headers only apply to HTTP servers (url)"})
			}
		}
		for _, e := range s.Env {
			if !envNameRE.MatchString(e) {
				errs = append(errs, &Error{Key: key + ".env", Value: e, Allowed: "names of environment variables to pass through (letters, digits, underscores)"})
			}
		}
		if s.Dir != "" && !filepath.IsAbs(s.Dir) {
			errs = append(errs, &Error{Key: key + ".dir", Value: s.Dir, Allowed: "an absolute path"})
		}
		for h, v := range s.HeadersEnv {
			if !headerKeyRE.MatchString(h) || !envNameRE.MatchString(v) {
				errs = append(errs, &Error{Key: key + ".headers_env." + h, Value: v, Allowed: "a header name mapped to the name of an environment variable holding its value"})
			}
		}
		for h, v := range s.HeadersFile {
			if !headerKeyRE.MatchString(h) || !filepath.IsAbs(v) {
				errs = append(errs, &Error{Key: key + ".headers_file." + h, Value: v, Allowed: "a header name mapped to the absolute path of a file holding its value"})
			}
		}
		if s.Timeout != 0 && (s.Timeout.D() < time.Second || s.Timeout.D() > 30*time.Minute) {
			errs = append(errs, &Error{Key: key + ".timeout", Value: s.Timeout.D().String(), Allowed: "a duration between 1s and 30m"})
		}
	}
	return errs
}

// String names the server's transport for status lines.
func (s MCPServer) String() string {
	if s.URL != "" {
		return "http " + s.URL
	}
	return fmt.Sprintf("stdio %s", s.Command)
}
