package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
)

func runPolicy(ctx context.Context, env *Env, args []string) error {
	const usage = "usage: hestia policy test TOOL [ARGS_JSON] [--chat ID] [--json] | rules | add --tool T --decision allow|gate|deny [--pattern P] [--scope DIR] [--priority N] [--note TEXT] | rm ID"
	if len(args) == 0 {
		return usagef(usage)
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	switch args[0] {
	case "test":
		fs := env.flags("policy test")
		chatID := fs.String("chat", "", "evaluate as in this chat (temporary modes)")
		asJSON := fs.Bool("json", false, "print the decision as JSON")
		if err := parse(fs, reorder(args[1:]), 2); err != nil {
			return err
		}
		if fs.NArg() < 1 {
			return usagef(usage)
		}
		body := map[string]any{"tool": fs.Arg(0), "chat_id": *chatID}
		if fs.NArg() == 2 {
			if !json.Valid([]byte(fs.Arg(1))) {
				return usagef("ARGS_JSON %q is not valid JSON", fs.Arg(1))
			}
			body["args"] = json.RawMessage(fs.Arg(1))
		}
		var res struct {
			Tool     string `json:"tool"`
			Decision string `json:"decision"`
			Source   string `json:"source"`
			RuleID   string `json:"rule_id"`
			Risk     string `json:"risk"`
			Reason   string `json:"reason"`
		}
		if err := c.Do(ctx, http.MethodPost, "/api/policy/test", body, &res); err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(env.Stdout).Encode(res)
		}
		fmt.Fprintf(env.Stdout, "decision: %s\nsource:   %s\nrisk:     %s\n", res.Decision, res.Source, res.Risk)
		if res.RuleID != "" {
			fmt.Fprintf(env.Stdout, "rule:     %s\n", res.RuleID)
		}
		fmt.Fprintf(env.Stdout, "reason:   %s\n", res.Reason)
		return nil
	case "rules":
		var res struct {
			AutoApprove  string   `json:"auto_approve"`
			DenyPrefixes []string `json:"deny_prefixes"`
			Rules        []struct {
				ID, Tool, Pattern, Decision, Note string
				PathScope                         string `json:"path_scope"`
				Priority                          int
			} `json:"rules"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/policy", nil, &res); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "auto-approve up to: %s\ndeny prefixes: %v\n", res.AutoApprove, res.DenyPrefixes)
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTOOL\tDECISION\tPRIORITY\tPATTERN\tSCOPE\tNOTE")
		for _, r := range res.Rules {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.ID, r.Tool, r.Decision, r.Priority, r.Pattern, r.PathScope, r.Note)
		}
		return tw.Flush()
	case "add":
		fs := env.flags("policy add")
		tool := fs.String("tool", "", "tool name, prefix ending in *, or *")
		decision := fs.String("decision", "", "allow, gate or deny")
		pattern := fs.String("pattern", "", "glob over the call's target (path or canonical JSON args)")
		scope := fs.String("scope", "", "absolute directory the call's paths must lie in")
		priority := fs.Int("priority", 100, "higher wins; deny wins ties")
		note := fs.String("note", "", "why")
		if err := parse(fs, args[1:], 0); err != nil {
			return err
		}
		var rule map[string]any
		if err := c.Do(ctx, http.MethodPost, "/api/policy/rules", map[string]any{"tool": *tool, "decision": *decision, "pattern": *pattern, "path_scope": *scope, "priority": *priority, "note": *note}, &rule); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "added rule %v\n", rule["id"])
		return nil
	case "rm":
		if len(args) != 2 {
			return usagef("usage: hestia policy rm ID")
		}
		if err := c.Do(ctx, http.MethodDelete, "/api/policy/rules/"+url.PathEscape(args[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "removed rule %s\n", args[1])
		return nil
	}
	return usagef(usage)
}

// reorder moves flags before positional arguments so `policy test TOOL
// ARGS --json` works with the standard flag package.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' && a != "-" {
			flags = append(flags, a)
			if (a == "--chat" || a == "-chat") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}
