package agent

import "github.com/hestia-dev/hestia/internal/audit"

func auditFilter(chatID string) audit.Filter { return audit.Filter{ChatID: chatID, Limit: 500} }
