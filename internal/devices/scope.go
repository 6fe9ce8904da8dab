package devices

import "strings"

// adminAlways are routes about who may connect: devices and pairing. A
// device without admin may not reach them, even to read the device list
// (which would show every other device's name and use).
var adminAlways = []string{"/api/devices", "/api/pair/"}

// adminWrites are routes whose changes decide what the assistant may do:
// policy rules, budgets, configuration, backups. Reading them is "read".
var adminWrites = []string{"/api/policy", "/api/budget", "/api/config", "/api/settings", "/api/backup"}

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

func hasAnyPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
