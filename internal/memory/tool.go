package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/tools"
)

// ToolArgs are the memory tool's arguments.
type ToolArgs struct {
	Action  string   `json:"action"`
	Target  string   `json:"target"`
	Text    string   `json:"text,omitempty"`
	Entries []string `json:"entries,omitempty"`
	OldText string   `json:"old_text,omitempty"`
}

const toolSchema = `{"type":"object","additionalProperties":false,"required":["action","target"],"properties":{
"action":{"type":"string","enum":["add","replace","remove"]},
"target":{"type":"string","enum":["user","memory","agent"],"description":"user: facts about the user; memory: facts about their environment; agent: how you should speak"},
"text":{"type":"string","maxLength":1000,"description":"the entry to add, or the replacement"},
"entries":{"type":"array","items":{"type":"string","maxLength":1000},"maxItems":10,"description":"several entries to add at once"},
"old_text":{"type":"string","maxLength":1000,"description":"part of the entry to replace or remove"}}}`

// Tool returns the agent's memory tool. It writes, so policy gates it in a
// turn that read untrusted content; it is low risk otherwise.
func Tool(p *Profile) tools.Tool {
	return &memoryTool{p: p}
}

type memoryTool struct{ p *Profile }

func (t *memoryTool) Spec() tools.Spec {
	return tools.Spec{Name: "memory", Risk: tools.RiskLow, MaxResult: 12000, Schema: json.RawMessage(toolSchema),
		Description: "Keep durable facts across conversations in the profile files (user, memory, agent), which are in your instructions every turn. add (text or entries), replace (old_text → text) or remove (old_text) one entry. Duplicates and paraphrases are skipped. Returns the file's new content."}
}

func (t *memoryTool) Available(context.Context) error { return nil }

// Target is "<file>" so trust rules can name one file.
func (t *memoryTool) Target(args json.RawMessage) string {
	var a ToolArgs
	_ = json.Unmarshal(args, &a)
	tg, _ := Target(a.Target)
	return tg
}

func (t *memoryTool) Preview(_ context.Context, args json.RawMessage) string {
	var a ToolArgs
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	tg, _ := Target(a.Target)
	switch a.Action {
	case "add":
		return fmt.Sprintf("remember in %s: %s", tg, clip(strings.Join(append([]string{a.Text}, a.Entries...), " / ")))
	case "replace":
		return fmt.Sprintf("in %s replace %q with %q", tg, clip(a.OldText), clip(a.Text))
	case "remove":
		return fmt.Sprintf("forget from %s: %q", tg, clip(a.OldText))
	}
	return ""
}

func (t *memoryTool) Run(_ context.Context, c tools.Call) (tools.Result, error) {
	var a ToolArgs
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return tools.Result{Content: "arguments for memory could not be read: " + err.Error(), IsError: true}, nil
	}
	tg, err := Target(a.Target)
	if err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	var res Result
	switch a.Action {
	case "add":
		texts := a.Entries
		if strings.TrimSpace(a.Text) != "" {
			texts = append([]string{a.Text}, texts...)
		}
		if len(texts) == 0 {
			err = errors.New("add needs text or entries")
			break
		}
		res, err = t.p.Add(tg, texts...)
	case "replace":
		res, err = t.p.Replace(tg, a.OldText, a.Text)
	case "remove":
		res, err = t.p.Remove(tg, a.OldText)
	default:
		err = fmt.Errorf("action %q is not add, replace or remove", a.Action)
	}
	if err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: string(b)}, nil
}
