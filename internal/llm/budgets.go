package llm

// DefaultMaxTokens is the reply bound of a request that sets none and whose
// target has no max_tokens: sized per call site, generous for what each
// writes, so a looping model stops in bounded time.
func DefaultMaxTokens(service, action string) int {
	switch service + "/" + action {
	case "agent/chat-turn":
		return 4096
	case "agent/delegate", "agent/research":
		return 4096
	case "actions/plan":
		return 1200
	case "watch/event":
		return 600
	case "memory/propose":
		return 800
	case "mail-promoter/promote":
		return 1500
	case "chat/title":
		return 64
	}
	return 8192
}

// EstimateTokens approximates a request's prompt tokens: about 3.5 bytes a
// token (JSON schemas and tool names tokenise densely) plus a few tokens of
// template per message. It errs high: it plans windows and sizes the
// "reading N tokens" progress, never billing.
func EstimateTokens(req Request) int {
	n := 0
	bytes := 0
	for _, m := range req.Messages {
		n += 4
		bytes += len(m.Content)
		for _, c := range m.ToolCalls {
			n += 8
			bytes += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += 8
		bytes += len(t.Name) + len(t.Description) + len(t.Parameters)
		if len(t.Parameters) == 0 {
			bytes += len(emptySchema)
		}
	}
	return n + bytes*2/7
}
