package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

func runAudit(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		return runAuditVerify(ctx, env, args[1:]) // audit_verify.go
	}
	fs := env.flags("audit")
	typ := fs.String("type", "", "event type, e.g. tool.run or policy.* ")
	chatID := fs.String("chat", "", "only this chat")
	tool := fs.String("tool", "", "only this tool")
	since := fs.Duration("since", 0, "only events newer than this (e.g. 24h)")
	q := fs.String("q", "", "text the summary or data contains")
	limit := fs.Int("limit", 50, "how many events (1-500)")
	asJSON := fs.Bool("json", false, "print events as JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > 500 {
		return usagef("--limit must be from 1 to 500")
	}
	v := url.Values{}
	for k, s := range map[string]string{"type": *typ, "chat": *chatID, "tool": *tool, "q": *q} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if *since > 0 {
		v.Set("since", time.Now().Add(-*since).UTC().Format(time.RFC3339Nano))
	}
	v.Set("limit", strconv.Itoa(*limit))
	var res struct {
		Events []struct {
			ID      int64           `json:"id"`
			TS      time.Time       `json:"ts"`
			Type    string          `json:"type"`
			ChatID  string          `json:"chat_id"`
			Tool    string          `json:"tool"`
			Summary string          `json:"summary"`
			Data    json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/audit?"+v.Encode(), nil, &res); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res.Events)
	}
	for i := len(res.Events) - 1; i >= 0; i-- { // oldest first reads naturally
		e := res.Events[i]
		fmt.Fprintf(env.Stdout, "%6d %s %-20s %s\n", e.ID, e.TS.Local().Format("2006-01-02 15:04:05"), e.Type, e.Summary)
	}
	return nil
}
