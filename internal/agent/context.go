package agent

import (
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/llm"
)

// Reducer tiers, applied in order, each idempotent.
const (
	tierTruncateOld  = 1 // old tool results cut to 4000 characters
	tierSummarise    = 2 // older history replaced by a short extract
	tierTruncateAll  = 3 // every tool result (and long message) cut to 1000
	tierLatestOnly   = 4 // only the system prompt and the current turn remain
	maxTier          = tierLatestOnly
	oldResultChars   = 4000
	tightResultChars = 1000
	keepRecentUnits  = 6 // units kept verbatim by the summarise tier
)

// estimate approximates the prompt's token count: about four characters a
// token plus a small per-message overhead. It only has to be conservative
// enough that the provider's rejection stays the exception.
func estimate(msgs []llm.Message, defs []llm.ToolDef) int {
	n := 0
	for _, m := range msgs {
		n += 4 + len(m.Content)/4
		for _, c := range m.ToolCalls {
			n += 8 + (len(c.Name)+len(c.Arguments))/4
		}
	}
	for _, d := range defs {
		n += 8 + (len(d.Name)+len(d.Description)+len(d.Parameters))/4
	}
	return n
}

// unit is a run of messages that must stay together: a user or assistant
// message and the tool results that answer its calls.
type unit struct{ start, end int } // [start, end)

func units(msgs []llm.Message) []unit {
	var us []unit
	for i := 1; i < len(msgs); i++ { // msgs[0] is the system prompt
		if msgs[i].Role == llm.RoleTool && len(us) > 0 {
			us[len(us)-1].end = i + 1
			continue
		}
		us = append(us, unit{i, i + 1})
	}
	return us
}

// currentTurnStart is the index of the last real user message: the current
// turn begins there and is never summarised away.
func currentTurnStart(msgs []llm.Message) int {
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == llm.RoleUser && msgs[i].Content != wrapUpNote {
			return i
		}
	}
	return 1
}

func cutText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("\n[cut to fit the context window: %d of %d characters kept]", n, len(r))
}

// reduceContext applies reducer tier n to msgs and returns the new slice.
func reduceContext(msgs []llm.Message, n int) []llm.Message {
	out := append([]llm.Message(nil), msgs...)
	cur := currentTurnStart(out)
	switch n {
	case tierTruncateOld:
		for i := 1; i < cur; i++ {
			if out[i].Role == llm.RoleTool {
				out[i].Content = cutText(out[i].Content, oldResultChars)
			}
		}
	case tierSummarise:
		us := units(out[:cur])
		if len(us) <= keepRecentUnits {
			return out
		}
		drop := us[:len(us)-keepRecentUnits]
		var b strings.Builder
		b.WriteString("[Earlier conversation, shortened to fit the context window. Extract:]\n")
		for _, u := range drop {
			m := out[u.start]
			if m.Role == llm.RoleTool {
				continue
			}
			line := strings.Join(strings.Fields(m.Content), " ")
			if line == "" && len(m.ToolCalls) > 0 {
				names := make([]string, len(m.ToolCalls))
				for j, c := range m.ToolCalls {
					names[j] = c.Name
				}
				line = "(called " + strings.Join(names, ", ") + ")"
			}
			fmt.Fprintf(&b, "- %s: %s\n", m.Role, cutText(line, 200))
		}
		summary := llm.Message{Role: llm.RoleUser, Content: cutText(b.String(), 8000)}
		end := drop[len(drop)-1].end
		rest := append([]llm.Message{out[0], summary}, out[end:]...)
		return rest
	case tierTruncateAll:
		for i := 1; i < len(out); i++ {
			if out[i].Role == llm.RoleTool || i < cur {
				out[i].Content = cutText(out[i].Content, tightResultChars)
			}
		}
	case tierLatestOnly:
		kept := []llm.Message{out[0], {Role: llm.RoleUser, Content: "[Earlier conversation omitted to fit the context window.]"}}
		return append(kept, out[cur:]...)
	}
	return out
}
