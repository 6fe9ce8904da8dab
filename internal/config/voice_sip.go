package config

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// VoiceConfig holds the voice settings ([voice]). [voice.sip] is the
// assistant calling the user back over SIP (internal/voice/sipcall).
type VoiceConfig struct {
	SIP SIPConfig `toml:"sip"`
}

// SIPConfig is the SIP account Hestia calls the user from and the number
// it calls ([voice.sip]). Calls are off until number is set.
type SIPConfig struct {
	// Registrar is the provider's or PBX's SIP URI
	// ("sip:sip.example.net", "sips:pbx.lan:5061"); empty to call
	// without registering (number must then be a full SIP URI).
	Registrar string `toml:"registrar"`
	// Username is the account; AuthUsername the digest user name when the
	// provider gives a different one (default username).
	Username     string `toml:"username"`
	AuthUsername string `toml:"auth_username"`
	// Password, or better PasswordFile (readable by the owner only), is
	// the account's password.
	Password     string `toml:"password" secret:"true"`
	PasswordFile string `toml:"password_file"`
	// From is the caller address (default sip:USERNAME@registrar-host).
	From string `toml:"from"`
	// Number is the user's phone number ("+393471234567", an extension
	// "100") dialled at the registrar, or a full SIP URI.
	Number string `toml:"number"`
	// Transport is udp, tcp or tls.
	Transport string `toml:"transport"`
	// ListenPort is the local SIP port (0: one the system picks).
	ListenPort int `toml:"listen_port"`
	// LocalIP is the address announced to the provider (default: the one
	// the system routes to it from).
	LocalIP string `toml:"local_ip"`
	// RTPPortMin and RTPPortMax bound the audio ports (both 0: any), for
	// a firewall or NAT forwarding.
	RTPPortMin int `toml:"rtp_port_min"`
	RTPPortMax int `toml:"rtp_port_max"`
	// RingTimeout is how long the phone rings before no_answer.
	RingTimeout Duration `toml:"ring_timeout"`
	// RTPTimeout ends a call whose audio stopped (media_error).
	RTPTimeout Duration `toml:"rtp_timeout"`
	// MaxDuration bounds a call.
	MaxDuration Duration `toml:"max_duration"`
	// Voice is the tts voice for calls ("" for the tier's default).
	Voice string `toml:"voice"`
	// Greeting is said when a call has no opening line of its own.
	Greeting string `toml:"greeting"`
	// BargeIn lets the caller interrupt the assistant by speaking over
	// it, as in the web app's voice mode (on by default). Off, the line
	// is half duplex: the caller's audio is ignored while the assistant
	// speaks and only # skips what it is saying — for a line whose echo
	// of the assistant makes it stop itself.
	BargeIn bool `toml:"barge_in"`
	// Inbound answers calls to Hestia from InboundNumbers (off by
	// default). Caller ID is not authentication — a From header, and even
	// a provider's caller id, can be forged — so every inbound call must
	// enter the PIN in InboundPINFile on the keypad before anything else
	// happens.
	Inbound bool `toml:"inbound"`
	// InboundNumbers are the owner's numbers allowed to call (empty:
	// Number). Compared after dropping a leading + or 00 and spaces.
	InboundNumbers []string `toml:"inbound_numbers"`
	// InboundPINFile is an owner-only file (chmod 600) holding the PIN,
	// 6 to 16 digits; required when Inbound is on.
	InboundPINFile string `toml:"inbound_pin_file"`
}

// PIN lengths accepted in voice.sip.inbound_pin_file.
const (
	minSIPPIN = 6
	maxSIPPIN = 16
)

// Enabled reports whether calls are configured.
func (c SIPConfig) Enabled() bool { return strings.TrimSpace(c.Number) != "" }

func defaultVoice() VoiceConfig {
	return VoiceConfig{SIP: SIPConfig{
		Transport:   "udp",
		RingTimeout: Duration(30 * time.Second),
		RTPTimeout:  Duration(15 * time.Second),
		MaxDuration: Duration(20 * time.Minute),
		BargeIn:     true,
	}}
}

func (v VoiceConfig) validate() []error { return v.SIP.validate() }

// sipNumberRe is a dialable number or extension: digits with an optional
// leading + and the keypad's * and #.
var sipNumberRe = lazyre.New(`^\+?[0-9*#]{2,20}$`)

func (c SIPConfig) validate() []error {
	const key = "voice.sip"
	var errs []error
	bad := func(k, v, allowed string) {
		errs = append(errs, &Error{Key: key + "." + k, Value: v, Allowed: allowed})
	}
	switch c.Transport {
	case "udp", "tcp", "tls":
	default:
		bad("transport", c.Transport, "udp, tcp or tls")
	}
	if c.Registrar != "" {
		host, scheme, ok := sipURIHost(c.Registrar)
		switch {
		case !ok:
			bad("registrar", c.Registrar, `your provider's or PBX's SIP URI, such as "sip:sip.example.net" or "sip:pbx.lan:5060"`)
		case scheme == "sips" && c.Transport != "tls":
			bad("registrar", c.Registrar, `a sips: URI needs transport = "tls"`)
		case strings.Contains(c.Registrar, "@") && host != "":
			bad("registrar", c.Registrar, `the registrar's URI without a user part ("sip:`+host+`")`)
		}
		if strings.TrimSpace(c.Username) == "" {
			bad("username", c.Username, "the account's user name, needed to register")
		}
	}
	number := strings.TrimSpace(c.Number)
	switch {
	case number == "":
		// Calls are off; the rest is checked all the same.
	case strings.HasPrefix(number, "sip:") || strings.HasPrefix(number, "sips:"):
		if _, _, ok := sipURIHost(number); !ok || !strings.Contains(number, "@") {
			bad("number", c.Number, `a SIP URI with user and host, such as "sip:100@pbx.lan"`)
		}
	case !sipNumberRe.MatchString(number):
		bad("number", c.Number, `your phone number in international format without spaces ("+393471234567"), an extension ("100"), or a SIP URI`)
	case c.Registrar == "":
		bad("number", c.Number, "a full SIP URI, since no voice.sip.registrar is set to dial the number at")
	}
	if c.From != "" {
		if _, _, ok := sipURIHost(c.From); !ok || !strings.Contains(c.From, "@") {
			bad("from", c.From, `a SIP URI such as "sip:alice@sip.example.net"`)
		}
	}
	if c.Password != "" && c.PasswordFile != "" {
		bad("password", "***", "empty when voice.sip.password_file is set (one source for the password)")
	}
	if c.PasswordFile != "" && !filepath.IsAbs(c.PasswordFile) {
		bad("password_file", c.PasswordFile, "an absolute path to a file only you can read (chmod 600)")
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listen_port", strconv.Itoa(c.ListenPort), "0 (any) or a port from 1 to 65535")
	}
	if c.LocalIP != "" {
		if ip, err := netip.ParseAddr(c.LocalIP); err != nil || ip.IsUnspecified() || ip.IsMulticast() {
			bad("local_ip", c.LocalIP, "an IP address of this machine")
		}
	}
	switch {
	case c.RTPPortMin == 0 && c.RTPPortMax == 0:
	case c.RTPPortMin < 1024 || c.RTPPortMax > 65535 || c.RTPPortMax-c.RTPPortMin < 1:
		bad("rtp_port_min", fmt.Sprintf("%d-%d", c.RTPPortMin, c.RTPPortMax), "both 0 (any port), or a range of at least two ports within 1024-65535 (rtp_port_min < rtp_port_max)")
	}
	checkDur := func(k string, d Duration, lo, hi time.Duration) {
		if d.D() < lo || d.D() > hi {
			bad(k, d.D().String(), fmt.Sprintf("a duration from %s to %s", lo, hi))
		}
	}
	checkDur("ring_timeout", c.RingTimeout, 5*time.Second, 5*time.Minute)
	checkDur("rtp_timeout", c.RTPTimeout, 3*time.Second, 5*time.Minute)
	checkDur("max_duration", c.MaxDuration, time.Minute, 4*time.Hour)
	if len(c.Greeting) > 500 {
		bad("greeting", c.Greeting[:40]+"…", "at most 500 characters")
	}
	errs = append(errs, c.validateInbound()...)
	return errs
}

// validateInbound checks the inbound keys. The PIN file is read here, not
// only when the daemon starts, so that a PIN others can read is refused
// by every command that loads the configuration; it is read only when
// inbound calls are on.
func (c SIPConfig) validateInbound() []error {
	const key = "voice.sip"
	var errs []error
	bad := func(k, v, allowed string) {
		errs = append(errs, &Error{Key: key + "." + k, Value: v, Allowed: allowed})
	}
	for _, n := range c.InboundNumbers {
		if !sipNumberRe.MatchString(compactNumber(n)) {
			bad("inbound_numbers", n, `a phone number or extension allowed to call ("+393471234567", "100"); spaces are ignored`)
		}
	}
	if c.InboundPINFile != "" && !filepath.IsAbs(c.InboundPINFile) {
		bad("inbound_pin_file", c.InboundPINFile, "an absolute path to a file only you can read (chmod 600) holding the PIN")
	}
	if !c.Inbound {
		return errs
	}
	number := strings.TrimSpace(c.Number)
	switch {
	case number == "":
		bad("inbound", "true", "false while voice.sip.number is not set (inbound calls are part of the SIP calls)")
	case len(c.InboundNumbers) == 0:
		if user := sipNumberUser(number); !sipNumberRe.MatchString(compactNumber(user)) {
			bad("inbound_numbers", "[]", fmt.Sprintf("the numbers allowed to call, since voice.sip.number's user part %q is not a phone number", user))
		}
	}
	switch {
	case c.InboundPINFile == "":
		bad("inbound_pin_file", "", fmt.Sprintf("the absolute path of a file only you can read (chmod 600) holding a PIN of %d to %d digits; required when voice.sip.inbound = true, since caller ID can be forged", minSIPPIN, maxSIPPIN))
	case filepath.IsAbs(c.InboundPINFile):
		if _, err := c.InboundPIN(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// InboundPIN reads the PIN of voice.sip.inbound_pin_file: a regular file
// that only its owner may read or write (no group or other permission
// bits), holding 6 to 16 digits. Errors are *Error naming the key.
func (c SIPConfig) InboundPIN() (string, error) {
	const k = "voice.sip.inbound_pin_file"
	path := c.InboundPINFile
	bad := func(allowed string) error { return &Error{Key: k, Value: path, Allowed: allowed} }
	if path == "" || !filepath.IsAbs(path) {
		return "", bad("an absolute path to a file only you can read (chmod 600) holding the PIN")
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return "", bad(fmt.Sprintf("a file that exists and can be read (%v)", err))
	case !info.Mode().IsRegular():
		return "", bad("a regular file holding the PIN")
	case info.Mode().Perm()&0o077 != 0:
		return "", bad(fmt.Sprintf("a file only you can read: it is %s, readable or writable by other users; run chmod 600 on it", info.Mode().Perm()))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", bad(fmt.Sprintf("a file that can be read (%v)", err))
	}
	pin := strings.TrimSpace(string(b))
	if len(pin) < minSIPPIN || len(pin) > maxSIPPIN || strings.Trim(pin, "0123456789") != "" {
		// The value is the path, never the file's content.
		return "", bad(fmt.Sprintf("a file holding only a PIN of %d to %d digits (0-9), entered on the keypad", minSIPPIN, maxSIPPIN))
	}
	return pin, nil
}

// compactNumber drops the spaces and separators people write in numbers.
func compactNumber(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '-', '.', '(', ')', '/':
			return -1
		}
		return r
	}, strings.TrimSpace(s))
}

// sipNumberUser is the number part of voice.sip.number: the user part of
// a SIP URI, or the number itself.
func sipNumberUser(number string) string {
	rest, ok := strings.CutPrefix(number, "sip:")
	if !ok {
		rest, ok = strings.CutPrefix(number, "sips:")
	}
	if !ok {
		return number
	}
	user, _, found := strings.Cut(rest, "@")
	if !found {
		return ""
	}
	user, _, _ = strings.Cut(user, ";")
	return user
}

// sipURIHost reads the scheme and host of a sip: or sips: URI
// ("sip:user@host:port;params").
func sipURIHost(s string) (host, scheme string, ok bool) {
	scheme, rest, found := strings.Cut(s, ":")
	if !found || (scheme != "sip" && scheme != "sips") {
		return "", "", false
	}
	if i := strings.IndexAny(rest, ";?"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		if i == 0 {
			return "", "", false
		}
		rest = rest[i+1:]
	}
	host = rest
	if strings.HasPrefix(host, "[") {
		end := strings.Index(host, "]")
		if end < 0 {
			return "", "", false
		}
		h, port := host[1:end], host[end+1:]
		if _, err := netip.ParseAddr(h); err != nil || (port != "" && !validPort(strings.TrimPrefix(port, ":"))) {
			return "", "", false
		}
		return h, scheme, true
	}
	if h, port, has := strings.Cut(host, ":"); has {
		if !validPort(port) {
			return "", "", false
		}
		host = h
	}
	if host == "" || strings.ContainsAny(host, " /\\@") {
		return "", "", false
	}
	return host, scheme, true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}
