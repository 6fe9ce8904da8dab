package agent

import (
	"strings"

	"github.com/hestia-dev/hestia/internal/audit"
)

func auditFilter(chatID string) audit.Filter { return audit.Filter{ChatID: chatID, Limit: 500} }

// userText is a user message as the model got it without the turn's
// context note (offer.go).
func userText(s string) string {
	before, _, _ := strings.Cut(s, contextMarker)
	return before
}
