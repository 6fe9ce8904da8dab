package config

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// SignalChannel configures the signal channel ([channels.signal]); see
// internal/channels/signal. Signal has no bot API: the owner registers (or
// links) a number for the assistant with signal-cli and runs it as a daemon
// speaking JSON-RPC on a UNIX socket (`signal-cli -a +NUMBER daemon
// --socket PATH --receive-mode=manual`) or on a loopback TCP port
// (`--tcp 127.0.0.1:7583`); Hestia connects to it as a client. No token is
// involved: whoever can reach the socket can send as the number, so the
// socket's own permissions are the credential.
type SignalChannel struct {
	// Account is the assistant's own Signal number in international
	// format with "+" ("+393471234567"): the channel is on when it is set.
	Account string `toml:"account"`
	// Owners are the owner's Signal identities: a number ("+393471234567")
	// or, for someone who hides their number, the account's UUID (ACI) as
	// signal-cli prints it. They chat, approve and read.
	Owners []string `toml:"owners"`
	// Contacts are trusted people as "ID" (chat and read) or
	// "ID:scope+scope"; their messages are untrusted content.
	Contacts []string `toml:"contacts"`
	// Socket is the path of signal-cli's UNIX socket (daemon --socket).
	Socket string `toml:"socket"`
	// Address is signal-cli's TCP address (daemon --tcp), loopback only:
	// the JSON-RPC port has no authentication of its own.
	Address string `toml:"address"`
	// DaemonUser is the system user signal-cli runs as (a name or a
	// numeric uid) when that is not the user running Hestia; a socket
	// served by anyone else (or by root, which socket activation
	// covers) is refused. Empty: only Hestia's own user and root.
	DaemonUser string `toml:"daemon_user"`
	// AttachmentsDir is signal-cli's attachments folder (DATA/attachments),
	// read for voice notes only when the daemon is too old to hand them
	// out itself (the getAttachment method). Empty: not read.
	AttachmentsDir string `toml:"attachments_dir"`
}

// Enabled reports whether the channel is configured.
func (c SignalChannel) Enabled() bool { return strings.TrimSpace(c.Account) != "" }

func defaultSignal() SignalChannel { return SignalChannel{} }

var (
	signalNumberRe = lazyre.New(`^\+[1-9][0-9]{6,14}$`)
	signalUUIDRe   = lazyre.New(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
	signalUserRe   = lazyre.New(`^([a-z_][a-z0-9_.-]{0,31}\$?|[0-9]{1,10})$`)
)

// SignalIdentity reports whether id names a Signal account the way
// signal-cli reports senders: an E.164 number with "+" or a UUID (ACI).
func SignalIdentity(id string) bool {
	return signalNumberRe.MatchString(id) || signalUUIDRe.MatchString(id)
}

const signalIDAllowedMsg = `a Signal number in international format with + and no spaces ("+393471234567") or an account UUID as signal-cli prints it`

func (c SignalChannel) validate() []error {
	const key = "channels.signal"
	var errs []error
	errs = append(errs, validateIdentity(key, c.Enabled(), c.Owners, c.Contacts)...)
	if c.Account != "" && !signalNumberRe.MatchString(c.Account) {
		errs = append(errs, &Error{Key: key + ".account", Value: c.Account, Allowed: `the assistant's own Signal number in international format with + and no spaces ("+393471234567"), as given to signal-cli -a`})
	}
	// The relay matches ids exactly: "+39 347…" or "0039…" would never
	// match what signal-cli reports, silently.
	for _, o := range c.Owners {
		if o = strings.TrimSpace(o); o != "" && !SignalIdentity(o) {
			errs = append(errs, &Error{Key: key + ".owners", Value: o, Allowed: signalIDAllowedMsg})
		}
		if o == c.Account && o != "" {
			errs = append(errs, &Error{Key: key + ".owners", Value: o, Allowed: "your own number, not the assistant's (channels.signal.account): the assistant ignores its own messages"})
		}
	}
	for _, ct := range c.Contacts {
		if id, _, err := ParseChannelContact(ct); err == nil && !SignalIdentity(id) {
			errs = append(errs, &Error{Key: key + ".contacts", Value: ct, Allowed: signalIDAllowedMsg + ", optionally followed by :scope+scope"})
		}
	}
	switch {
	case c.Socket != "" && c.Address != "":
		errs = append(errs, &Error{Key: key + ".address", Value: c.Address, Allowed: "empty when channels.signal.socket is set (one way to reach signal-cli)"})
	case c.Enabled() && c.Socket == "" && c.Address == "":
		errs = append(errs, &Error{Key: key + ".socket", Value: "", Allowed: "the path of signal-cli's socket (signal-cli -a NUMBER daemon --socket PATH), or set channels.signal.address"})
	}
	if c.Socket != "" && !filepath.IsAbs(c.Socket) {
		errs = append(errs, &Error{Key: key + ".socket", Value: c.Socket, Allowed: "an absolute path"})
	}
	if c.Address != "" && !LoopbackHostPort(c.Address) {
		errs = append(errs, &Error{Key: key + ".address", Value: c.Address, Allowed: "a loopback host:port such as 127.0.0.1:7583 (signal-cli's TCP port has no authentication; use the socket, or an SSH tunnel, to reach another machine)"})
	}
	if c.DaemonUser != "" && !signalUserRe.MatchString(c.DaemonUser) {
		errs = append(errs, &Error{Key: key + ".daemon_user", Value: c.DaemonUser, Allowed: "a system user name or a numeric uid"})
	}
	if c.AttachmentsDir != "" && !filepath.IsAbs(c.AttachmentsDir) {
		errs = append(errs, &Error{Key: key + ".attachments_dir", Value: c.AttachmentsDir, Allowed: "an absolute path (signal-cli's DATA/attachments folder)"})
	}
	return errs
}

// LoopbackHostPort reports whether addr is host:port with a loopback IP
// or "localhost" and a port from 1 to 65535.
func LoopbackHostPort(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
