package devices

import (
	"context"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/server"
)

// adminAlways are routes about who may connect: devices and pairing. A
// device without admin may not reach them, even to read the device list
// (which would show every other device's name and use).
var adminAlways = []string{"/api/devices", "/api/pair/"}

// adminWrites are routes whose changes decide what the assistant may do:
// policy rules, budgets, configuration, backups, account sign-ins.
// Reading them is "read".
var adminWrites = []string{"/api/policy", "/api/budget", "/api/config", "/api/settings", "/api/backup", "/api/accounts"}

// RequiredScope is the scope a request needs. The mapping is code, not
// configuration, so that a paired phone can never widen its own authority:
//
//   - /api/devices/self (a device reading its own record): read
//   - devices and pairing: admin, for every method
//   - any other GET or HEAD: read
//   - POST /api/policy/test, a dry run: read
//   - writes to policy, budgets, configuration, backups: admin
//   - deciding an approval or setting a chat's temporary mode (which lets
//     gated calls run unasked): approve
//   - every other write (chats, messages, cancel, the /v1 gateway): chat
//
// A few routes need more than their route's scope depending on the body,
// which this table cannot see; their handlers call Require. Creating a
// watch whose rules grant tools (POST /api/watches with grants), or
// resuming one, needs approve: a grant is an approval given in advance.
func RequiredScope(method, path string) Scope {
	read := method == "GET" || method == "HEAD"
	switch {
	case path == "/api/devices/self" && read:
		return Read
	case hasAnyPrefix(path, adminAlways):
		return Admin
	case read:
		return Read
	case method == "POST" && path == "/api/policy/test":
		return Read
	case hasAnyPrefix(path, adminWrites):
		return Admin
	case strings.HasPrefix(path, "/api/approvals/"):
		return Approve
	case strings.HasPrefix(path, "/api/chats/") && strings.HasSuffix(path, "/mode"):
		return Approve
	}
	return Chat
}

// ScopeError is a caller lacking a scope. Its text is safe to show the
// caller; it matches server.ErrForbidden with errors.Is.
type ScopeError struct{ msg string }

func (e *ScopeError) Error() string { return e.msg }

// Unwrap makes a ScopeError a server.ErrForbidden.
func (e *ScopeError) Unwrap() error { return server.ErrForbidden }

// Require returns nil when the caller of ctx holds scope s, and otherwise
// a *ScopeError naming the device, the scope and what needed it. It fails
// closed: a request with no identity (no Authenticator ran, or an
// in-process call that did not say who it acts for) holds no scope.
func Require(ctx context.Context, s Scope, what string) error {
	id, ok := FromContext(ctx)
	if !ok {
		return &ScopeError{fmt.Sprintf("the %s scope is needed to %s, and the request carries no device identity", s, what)}
	}
	if !Has(id.Scopes, s) {
		return &ScopeError{fmt.Sprintf("device %q lacks the %s scope to %s", id.Name, s, what)}
	}
	return nil
}

func hasAnyPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
