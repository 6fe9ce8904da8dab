package devices

import "strings"

// adminPrefixes are the routes that change who may do what: devices and
// pairing, policy rules and modes' defaults, budgets, configuration and
// backups. A device without admin may not reach them, even to read the
// device list (which would show every other device's name and use).
var adminPrefixes = []string{
	"/api/devices", "/api/pair/", "/api/policy", "/api/budget", "/api/config", "/api/settings", "/api/backup",
}

// RequiredScope is the scope a request needs. The mapping is code, not
// configuration, so that a paired phone can never widen its own authority:
//
//   - /api/devices/self (a device reading its own record): read
//   - administrative prefixes (above): admin, for every method, except
//     POST /api/policy/test, a dry run that only reads
//   - any other GET or HEAD: read
//   - deciding an approval or setting a chat's temporary mode (which lets
//     gated calls run unasked): approve
//   - every other write (chats, messages, cancel, the /v1 gateway): chat
func RequiredScope(method, path string) Scope {
	read := method == "GET" || method == "HEAD"
	switch {
	case path == "/api/devices/self" && read:
		return Read
	case method == "POST" && path == "/api/policy/test":
		return Read
	case hasAnyPrefix(path, adminPrefixes):
		return Admin
	case read:
		return Read
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
