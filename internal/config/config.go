package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is the whole effective configuration. Each section lives in its own
// type; a domain adds its section here and in its own file.
//
// Field tags: `toml` names the key; `secret:"true"` masks the value in
// `config show`; `env:"NAME"` adds an extra environment variable besides the
// generated HESTIA_<SECTION>_<KEY>.
type Config struct {
	Server ServerConfig `toml:"server"`
	Log    LogConfig    `toml:"log"`
	LLM    LLMConfig    `toml:"llm"`
	Budget BudgetConfig `toml:"budget"`
	Safety SafetyConfig `toml:"safety"`
	Mail   MailConfig   `toml:"mail"`
	Wiki   WikiConfig   `toml:"wiki"`
	Agent  AgentConfig  `toml:"agent"`
	Policy PolicyConfig `toml:"policy"`
	MCP    MCPConfig    `toml:"mcp"`
	// Web and Docs: local.go.
	Web  WebConfig  `toml:"web"`
	Docs DocsConfig `toml:"docs"`
	// Calendar and Contacts: calendar.go.
	Calendar CalendarConfig `toml:"calendar"`
	Contacts ContactsConfig `toml:"contacts"`
	Telegram TelegramConfig `toml:"telegram"`
	Watch    WatchConfig    `toml:"watch"` // watch.go
	// Channels: channels.go, one file per channel.
	Channels ChannelsConfig `toml:"channels"`
	OAuth    OAuthConfig    `toml:"oauth"` // oauth.go
	Voice    VoiceConfig    `toml:"voice"` // voice_sip.go
}

// ServerConfig configures the daemon's HTTP listener.
type ServerConfig struct {
	Addr        string `toml:"addr"`
	AllowRemote bool   `toml:"allow_remote"` // required for a non-loopback bind
	TLSCert     string `toml:"tls_cert"`
	TLSKey      string `toml:"tls_key"`
	// Remote is the LAN listener beside this one (remote.go).
	Remote RemoteConfig `toml:"remote"`
	// ShutdownTimeout bounds how long in-flight requests may take to finish.
	ShutdownTimeout Duration `toml:"shutdown_timeout"`
}

// LogConfig configures logging.
type LogConfig struct {
	Level      string `toml:"level"`
	MaxSizeMB  int    `toml:"max_size_mb"`
	MaxBackups int    `toml:"max_backups"`
}

// Default returns the configuration used when nothing is configured.
func Default() Config {
	return Config{
		Server:   ServerConfig{Addr: "127.0.0.1:4317", ShutdownTimeout: Duration(10 * time.Second)},
		Log:      LogConfig{Level: "info", MaxSizeMB: 20, MaxBackups: 5},
		LLM:      defaultLLM(),
		Budget:   defaultBudget(),
		Safety:   defaultSafety(),
		Agent:    defaultAgent(),
		Policy:   defaultPolicy(),
		Mail:     defaultMail(),
		Calendar: defaultCalendar(),
		Wiki:     defaultWiki(),
		MCP:      MCPConfig{Serve: true},
		Telegram: defaultTelegram(),
		Channels: defaultChannels(),
		Watch:    defaultWatch(),
		Docs:     defaultDocs(),
		Voice:    defaultVoice(),
	}
}

// Duration is a time.Duration written as a Go duration string ("90s", "5m").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration like 30s or 5m")
	}
	*d = Duration(v)
	return nil
}

// Error is a configuration problem naming the key, the offending value and
// what is allowed. Its text is safe to show the user (secrets are masked).
type Error struct {
	Source  string // "config.toml", "environment" or ""
	Key     string // dotted key, e.g. server.addr
	Value   string
	Allowed string
}

func (e *Error) Error() string {
	src := ""
	if e.Source != "" {
		src = e.Source + ": "
	}
	return fmt.Sprintf("%sinvalid value %q for %s: %s", src, e.Value, e.Key, e.Allowed)
}

// Load reads the configuration file (absent is fine) and applies environment
// overrides, then validates the result.
func Load(paths Paths, env Env) (Config, error) {
	cfg := Default()
	path := paths.ConfigFile()
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Config{}, fmt.Errorf("reading %s: %w", path, err)
	default:
		if err := decodeFile(data, &cfg); err != nil {
			return Config{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := applyEnv(&cfg, env); err != nil {
		return Config{}, err
	}
	cfg.OAuth.applyPackagedClients(env)
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func decodeFile(data []byte, cfg *Config) error {
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(cfg)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return fmt.Errorf("line %d: %s", perr.Position.Line, perr.Message)
		}
		return err
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		return fmt.Errorf("unknown key %s (see `hestia config show` for the known keys)", strings.Join(keys, ", "))
	}
	return nil
}

// Validate checks every section.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.Server.validate()...)
	errs = append(errs, c.Log.validate()...)
	errs = append(errs, c.LLM.validate()...)
	errs = append(errs, c.Budget.validate()...)
	errs = append(errs, c.Safety.validate()...)
	errs = append(errs, c.Mail.validate()...)
	errs = append(errs, c.Calendar.validate()...)
	errs = append(errs, c.Contacts.validate()...)
	errs = append(errs, c.Wiki.validate()...)
	errs = append(errs, c.Agent.validate()...)
	errs = append(errs, c.Watch.validate()...)
	errs = append(errs, c.Policy.validate()...)
	errs = append(errs, c.MCP.validate()...)
	errs = append(errs, c.Telegram.validate()...)
	errs = append(errs, c.Channels.validate()...)
	errs = append(errs, c.Web.validate()...)
	errs = append(errs, c.Docs.validate()...)
	errs = append(errs, c.OAuth.validate()...)
	errs = append(errs, c.Voice.validate()...)
	errs = append(errs, c.validateAccountAuth()...)
	errs = append(errs, c.validateGraph()...)
	return errors.Join(errs...)
}

func (s ServerConfig) validate() []error {
	var errs []error
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		errs = append(errs, &Error{Key: "server.addr", Value: s.Addr, Allowed: "host:port, e.g. 127.0.0.1:4317"})
	} else {
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			errs = append(errs, &Error{Key: "server.addr", Value: s.Addr, Allowed: "a port between 0 and 65535"})
		}
		if !IsLoopbackHost(host) {
			if !s.AllowRemote {
				errs = append(errs, &Error{Key: "server.addr", Value: s.Addr, Allowed: "a loopback address; binding to another interface needs server.allow_remote = true plus server.tls_cert and server.tls_key"})
			} else if s.TLSCert == "" || s.TLSKey == "" {
				errs = append(errs, &Error{Key: "server.tls_cert", Value: s.TLSCert, Allowed: "a non-loopback bind requires both server.tls_cert and server.tls_key"})
			}
		}
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		errs = append(errs, &Error{Key: "server.tls_key", Value: s.TLSKey, Allowed: "set both server.tls_cert and server.tls_key, or neither"})
	}
	if s.ShutdownTimeout.D() <= 0 || s.ShutdownTimeout.D() > 10*time.Minute {
		errs = append(errs, &Error{Key: "server.shutdown_timeout", Value: s.ShutdownTimeout.D().String(), Allowed: "a duration between 1ms and 10m"})
	}
	errs = append(errs, s.Remote.validate()...)
	return errs
}

// IsLoopbackHost reports whether host names the loopback interface.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (l LogConfig) validate() []error {
	var errs []error
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, &Error{Key: "log.level", Value: l.Level, Allowed: "one of debug, info, warn, error"})
	}
	if l.MaxSizeMB < 1 || l.MaxSizeMB > 1024 {
		errs = append(errs, &Error{Key: "log.max_size_mb", Value: strconv.Itoa(l.MaxSizeMB), Allowed: "an integer from 1 to 1024"})
	}
	if l.MaxBackups < 0 || l.MaxBackups > 100 {
		errs = append(errs, &Error{Key: "log.max_backups", Value: strconv.Itoa(l.MaxBackups), Allowed: "an integer from 0 to 100"})
	}
	return errs
}

// applyEnv walks the sections and sets every scalar field whose environment
// variable is present: HESTIA_<SECTION>_<KEY>, plus any `env` tag alias.
func applyEnv(cfg *Config, env Env) error {
	var errs []error
	toEnv := strings.NewReplacer(".", "_", "-", "_") // built once: each builds a table on first use
	walkFields(reflect.ValueOf(cfg).Elem(), "", func(key string, f reflect.StructField, v reflect.Value) {
		names := []string{"HESTIA_" + strings.ToUpper(toEnv.Replace(key))}
		if alias := f.Tag.Get("env"); alias != "" {
			names = append(names, alias)
		}
		for _, name := range names {
			raw := env(name)
			if raw == "" {
				continue
			}
			if err := setFromString(v, raw); err != nil {
				shown := raw
				if f.Tag.Get("secret") == "true" {
					shown = "(hidden)"
				}
				errs = append(errs, &Error{Source: "environment " + name, Key: key, Value: shown, Allowed: err.Error()})
			}
		}
	})
	return errors.Join(errs...)
}

// walkFields calls fn for every scalar (non-struct, non-map) leaf field.
func walkFields(v reflect.Value, prefix string, fn func(key string, f reflect.StructField, v reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("toml"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(Duration(0)) {
			walkFields(fv, key, fn)
			continue
		}
		if fv.Kind() == reflect.Map || (fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct) {
			continue
		}
		fn(key, f, fv)
	}
}

func setFromString(v reflect.Value, raw string) error {
	if v.Type() == reflect.TypeOf(Duration(0)) {
		d, err := time.ParseDuration(raw)
		if err != nil {
			return errors.New("a duration like 30s or 5m")
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errors.New("true or false")
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return errors.New("an integer")
		}
		v.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return errors.New("a number")
		}
		v.SetFloat(n)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return errors.New("cannot be set from the environment")
		}
		var parts []string
		for _, p := range strings.Split(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	default:
		return errors.New("cannot be set from the environment")
	}
	return nil
}

// Masked returns a copy with every secret field replaced by a marker saying
// whether it is set, for display.
func (c Config) Masked() Config {
	out := c
	maskSecrets(reflect.ValueOf(&out).Elem())
	return out
}

func maskSecrets(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			fv := v.Field(i)
			if f.Tag.Get("secret") == "true" && fv.Kind() == reflect.String {
				if fv.String() != "" {
					fv.SetString("********")
				}
				continue
			}
			maskSecrets(fv)
		}
	case reflect.Map:
		// Maps of structs hold copies; rebuild each value masked.
		if v.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			maskSecrets(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(s, v)
		for i := 0; i < s.Len(); i++ {
			maskSecrets(s.Index(i))
		}
		v.Set(s)
	}
}

// TOML renders the configuration as TOML (call Masked first for display).
func (c Config) TOML() (string, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(c); err != nil {
		return "", fmt.Errorf("encoding configuration: %w", err)
	}
	return buf.String(), nil
}
