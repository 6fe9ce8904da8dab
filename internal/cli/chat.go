package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/cli/daemonclient"
)

// turnResult mirrors agent.Result on the wire.
type turnResult struct {
	TurnID       string `json:"turn_id"`
	ChatID       string `json:"chat_id"`
	OK           bool   `json:"ok"`
	MessageID    string `json:"message_id"`
	Text         string `json:"text"`
	Steps        int    `json:"steps"`
	StepLimitHit bool   `json:"step_limit_hit"`
	Aborted      bool   `json:"aborted"`
	Error        *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type chatInfo struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

func runChat(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("chat")
	once := fs.String("once", "", "send one message, print the reply and exit (gated calls are denied)")
	chatID := fs.String("chat", "", "continue this chat instead of starting a new one")
	asJSON := fs.Bool("json", false, "with --once: print the turn result as JSON")
	overBudget := fs.Bool("over-budget", false, "continue past a reached model budget cap ([budget]) for the messages sent")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *asJSON && *once == "" {
		return usagef("--json needs --once")
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	// A chat that cannot run is not created: say how to configure a model.
	var st struct {
		ModelReady bool `json:"model_ready"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/settings", nil, &st); err == nil && !st.ModelReady {
		return errors.New("no model is configured, so there is nothing to chat with yet: pick one on the web UI's Settings page, " +
			"or set HESTIA_LLM_BASE_URL and HESTIA_LLM_MODEL (and HESTIA_LLM_API_KEY) and restart `hestia serve`")
	}
	id := *chatID
	if id == "" {
		var ch chatInfo
		if err := c.Do(ctx, http.MethodPost, "/api/chats", map[string]string{}, &ch); err != nil {
			return err
		}
		id = ch.ID
	} else if err := c.Do(ctx, http.MethodGet, "/api/chats/"+url.PathEscape(id)+"/mode", nil, nil); err != nil {
		return err
	}
	if *once != "" {
		return chatOnce(ctx, env, c, id, *once, *asJSON, *overBudget)
	}
	return chatInteractive(ctx, env, c, id, *overBudget)
}

func chatOnce(ctx context.Context, env *Env, c *Client, chatID, text string, asJSON, overBudget bool) error {
	var res turnResult
	// Nobody at a one-shot prompt can answer an approval, so gated calls are
	// denied at once rather than waiting for the timeout.
	body := map[string]any{"text": text, "wait": true, "approver": "none", "over_budget": overBudget}
	if err := c.Do(ctx, http.MethodPost, "/api/chats/"+url.PathEscape(chatID)+"/messages", body, &res); err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if res.OK {
		fmt.Fprintln(env.Stdout, res.Text)
	}
	if !res.OK {
		if !asJSON && res.Error != nil {
			fmt.Fprintf(env.Stderr, "hestia chat: turn failed: %s (%s)\n", res.Error.Message, res.Error.Code)
		}
		return exitError{1}
	}
	return nil
}

// sseEvent is one event from /api/events.
type sseEvent struct {
	ID   string
	Type string
	Data json.RawMessage
}

// readSSE parses an event stream, sending events until the body ends.
func readSSE(r io.Reader, out chan<- sseEvent) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var ev sseEvent
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type != "" || data.Len() > 0 {
				ev.Data = json.RawMessage(data.String())
				out <- ev
			}
			ev, data = sseEvent{}, strings.Builder{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			ev.Type = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[5:], " "))
		}
	}
	return sc.Err()
}

type envelope struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

type pendingApproval struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Risk     string          `json:"risk"`
	Preview  string          `json:"preview"`
	Question string          `json:"question"`
	Choices  []string        `json:"choices"`
}

func chatInteractive(ctx context.Context, env *Env, c *Client, chatID string, overBudget bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := c.Request(ctx, http.MethodGet, "/api/events?chat="+url.QueryEscape(chatID), nil)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("opening the event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return daemonclient.DecodeResponse(resp, nil)
	}
	defer resp.Body.Close()
	evs := make(chan sseEvent, 64)
	go func() {
		_ = readSSE(resp.Body, evs)
		close(evs)
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(env.Stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()
	fmt.Fprintf(env.Stdout, "chat %s — type a message; /cancel stops a turn, /quit exits.\n> ", chatID)
	var (
		mu       sync.Mutex
		queue    []pendingApproval // approvals waiting for an answer at the prompt
		inTurn   bool
		streamed bool
	)
	prompt := func() {
		mu.Lock()
		defer mu.Unlock()
		if len(queue) > 0 {
			a := queue[0]
			if a.Kind == "question" {
				fmt.Fprintf(env.Stdout, "\n? %s", a.Question)
				if len(a.Choices) > 0 {
					fmt.Fprintf(env.Stdout, " [%s]", strings.Join(a.Choices, " / "))
				}
				fmt.Fprint(env.Stdout, "\nanswer> ")
				return
			}
			fmt.Fprintf(env.Stdout, "\n! approval needed (%s risk): %s\n  %s %s\n  [y] approve  [n] deny  [e] edit args  [r] ask for a revision\napprove> ", a.Risk, a.Preview, a.Tool, a.Args)
			return
		}
		if !inTurn {
			fmt.Fprint(env.Stdout, "> ")
		}
	}
	for {
		// While a turn runs, typed lines wait until it ends, except answers
		// to an approval or question shown at the prompt.
		mu.Lock()
		linesCh := lines
		if inTurn && len(queue) == 0 {
			linesCh = nil
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
			if inTurn {
				// Leaving mid-turn (Ctrl-C) stops the turn too: nobody is
				// left to read it or to answer its approvals.
				cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_ = c.Do(cctx, http.MethodPost, "/api/chats/"+url.PathEscape(chatID)+"/cancel", nil, nil)
				ccancel()
			}
			return nil
		case ev, ok := <-evs:
			if !ok {
				return errors.New("the daemon closed the event stream")
			}
			var e envelope
			if json.Unmarshal(ev.Data, &e) != nil {
				continue
			}
			switch ev.Type {
			case "message.delta":
				var d struct {
					Text string `json:"text"`
				}
				json.Unmarshal(e.Data, &d)
				fmt.Fprint(env.Stdout, d.Text)
				streamed = true
			case "tool.started":
				var d struct {
					Tool string          `json:"tool"`
					Args json.RawMessage `json:"args"`
				}
				json.Unmarshal(e.Data, &d)
				fmt.Fprintf(env.Stdout, "\n  · %s %s\n", d.Tool, snippetCLI(string(d.Args), 120))
			case "tool.finished":
				var d struct {
					Tool, Decision, Status string
					DurationMS             int64 `json:"duration_ms"`
				}
				json.Unmarshal(e.Data, &d)
				fmt.Fprintf(env.Stdout, "  · %s: %s (%s, %dms)\n", d.Tool, d.Status, d.Decision, d.DurationMS)
			case "approval.requested":
				var d struct {
					Approval pendingApproval `json:"approval"`
				}
				json.Unmarshal(e.Data, &d)
				mu.Lock()
				queue = append(queue, d.Approval)
				first := len(queue) == 1
				mu.Unlock()
				if first {
					prompt()
				}
			case "approval.resolved":
				var d struct {
					ID       string `json:"id"`
					Decision string `json:"decision"`
				}
				json.Unmarshal(e.Data, &d)
				mu.Lock()
				for i, a := range queue {
					if a.ID == d.ID {
						queue = append(queue[:i], queue[i+1:]...)
						break
					}
				}
				mu.Unlock()
			case "turn.started":
				inTurn, streamed = true, false
			case "turn.finished":
				var d struct {
					Result turnResult `json:"result"`
				}
				json.Unmarshal(e.Data, &d)
				inTurn = false
				switch {
				case !d.Result.OK && d.Result.Error != nil:
					fmt.Fprintf(env.Stdout, "\n[turn ended: %s]\n", d.Result.Error.Message)
				case !streamed && d.Result.Text != "":
					fmt.Fprintln(env.Stdout, d.Result.Text)
				default:
					fmt.Fprintln(env.Stdout)
				}
				prompt()
			}
		case line, ok := <-linesCh:
			if !ok {
				return nil
			}
			line = strings.TrimSpace(line)
			mu.Lock()
			var head *pendingApproval
			if len(queue) > 0 {
				h := queue[0]
				head = &h
			}
			mu.Unlock()
			if head != nil {
				if err := answerApproval(ctx, env, c, *head, line, lines); err != nil {
					fmt.Fprintf(env.Stdout, "  %v\n", err)
					prompt()
					continue
				}
				mu.Lock()
				for i, a := range queue {
					if a.ID == head.ID {
						queue = append(queue[:i], queue[i+1:]...)
						break
					}
				}
				mu.Unlock()
				prompt()
				continue
			}
			switch line {
			case "":
				prompt()
			case "/quit", "/exit":
				return nil
			case "/cancel":
				var r map[string]bool
				if err := c.Do(ctx, http.MethodPost, "/api/chats/"+url.PathEscape(chatID)+"/cancel", nil, &r); err != nil {
					fmt.Fprintf(env.Stdout, "  %v\n", err)
				}
			default:
				if err := c.Do(ctx, http.MethodPost, "/api/chats/"+url.PathEscape(chatID)+"/messages", map[string]any{"text": line, "over_budget": overBudget}, nil); err != nil {
					fmt.Fprintf(env.Stdout, "  %v\n> ", err)
				} else {
					inTurn = true
				}
			}
		}
	}
}

func answerApproval(ctx context.Context, env *Env, c *Client, a pendingApproval, line string, lines <-chan string) error {
	path := "/api/approvals/" + url.PathEscape(a.ID)
	if a.Kind == "question" {
		return c.Do(ctx, http.MethodPost, path, map[string]any{"decision": "answer", "answer": line}, nil)
	}
	readLine := func(label string) (string, error) {
		fmt.Fprint(env.Stdout, label)
		select {
		case l, ok := <-lines:
			if !ok {
				return "", errors.New("input ended")
			}
			return strings.TrimSpace(l), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	switch strings.ToLower(line) {
	case "y", "yes":
		return c.Do(ctx, http.MethodPost, path, map[string]any{"decision": "approve"}, nil)
	case "n", "no":
		note, err := readLine("note for the assistant (optional)> ")
		if err != nil {
			return err
		}
		return c.Do(ctx, http.MethodPost, path, map[string]any{"decision": "deny", "note": note}, nil)
	case "r":
		note, err := readLine("what should change?> ")
		if err != nil {
			return err
		}
		return c.Do(ctx, http.MethodPost, path, map[string]any{"decision": "revise", "note": note}, nil)
	case "e":
		args, err := readLine("replacement args as JSON> ")
		if err != nil {
			return err
		}
		if !json.Valid([]byte(args)) {
			return errors.New("that is not valid JSON; answer y, n, e or r again")
		}
		return c.Do(ctx, http.MethodPost, path, map[string]any{"decision": "edit", "args": json.RawMessage(args)}, nil)
	}
	return errors.New("answer y (approve), n (deny), e (edit) or r (revise)")
}

func snippetCLI(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
