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
	// A refused tool call makes the turn fail for the caller: the model's
	// reply may still claim success ("Saved"), and a script must not.
	var refused []string
	if res.OK {
		var err error
		if refused, err = refusedCalls(ctx, c, chatID, res.TurnID); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if res.OK && len(refused) == 0 {
		fmt.Fprintln(env.Stdout, res.Text)
	}
	if len(refused) > 0 {
		for _, r := range refused {
			fmt.Fprintf(env.Stderr, "hestia chat: not done: %s\n", r)
		}
		return exitError{1}
	}
	if !res.OK {
		if !asJSON && res.Error != nil {
			fmt.Fprintf(env.Stderr, "hestia chat: turn failed: %s (%s)\n", res.Error.Message, res.Error.Code)
		}
		return exitError{1}
	}
	return nil
}

// refusedCalls describes the tool calls of turnID that were not run
// because they were refused (denied, no approver, blocked, timed out).
func refusedCalls(ctx context.Context, c *Client, chatID, turnID string) ([]string, error) {
	var got struct {
		Messages []struct {
			TurnID   string `json:"turn_id"`
			Role     string `json:"role"`
			Content  string `json:"content"`
			ToolName string `json:"tool_name"`
			Tool     *struct {
				Decision string `json:"decision"`
				Note     string `json:"note"`
			} `json:"tool"`
		} `json:"messages"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/chats/"+url.PathEscape(chatID), nil, &got); err != nil {
		return nil, fmt.Errorf("reading the turn's tool calls: %w", err)
	}
	var out []string
	for _, m := range got.Messages {
		if m.TurnID != turnID || m.Tool == nil {
			continue
		}
		switch m.Tool.Decision {
		case "denied", "no_approver", "blocked", "timeout":
			why := m.Tool.Note
			if why == "" {
				why = m.Content
			}
			out = append(out, fmt.Sprintf("%s was refused (%s): %s", m.ToolName, m.Tool.Decision, truncateLine(why, 200)))
		}
	}
	return out, nil
}

func truncateLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
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

// chatSession is one interactive `hestia chat`: the daemon's event stream
// on one side, the user's typed lines on the other.
type chatSession struct {
	env        *Env
	c          *Client
	chatID     string
	overBudget bool
	lines      chan string

	mu       sync.Mutex        // guards queue
	queue    []pendingApproval // approvals waiting for an answer at the prompt
	inTurn   bool
	streamed bool
}

func chatInteractive(ctx context.Context, env *Env, c *Client, chatID string, overBudget bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, closeEvents, err := openChatEvents(ctx, c, chatID)
	if err != nil {
		return err
	}
	defer closeEvents()
	s := &chatSession{env: env, c: c, chatID: chatID, overBudget: overBudget, lines: make(chan string)}
	go s.readLines(ctx)
	fmt.Fprintf(env.Stdout, "chat %s — type a message; /cancel stops a turn, /quit exits.\n> ", chatID)
	for {
		// While a turn runs, typed lines wait until it ends, except answers
		// to an approval or question shown at the prompt.
		s.mu.Lock()
		linesCh := s.lines
		if s.inTurn && len(s.queue) == 0 {
			linesCh = nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			if s.inTurn {
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
			s.event(ev)
		case line, ok := <-linesCh:
			if !ok || s.line(ctx, strings.TrimSpace(line)) {
				return nil
			}
		}
	}
}

// openChatEvents follows the chat's events; closeEvents ends the stream.
func openChatEvents(ctx context.Context, c *Client, chatID string) (<-chan sseEvent, func(), error) {
	req, err := c.Request(ctx, http.MethodGet, "/api/events?chat="+url.QueryEscape(chatID), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, nil, daemonclient.DecodeResponse(resp, nil)
	}
	evs := make(chan sseEvent, 64)
	go func() {
		_ = readSSE(resp.Body, evs)
		close(evs)
	}()
	return evs, func() { resp.Body.Close() }, nil
}

// readLines hands the user's typed lines to the session until stdin ends.
func (s *chatSession) readLines(ctx context.Context) {
	sc := bufio.NewScanner(s.env.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		select {
		case s.lines <- sc.Text():
		case <-ctx.Done():
			return
		}
	}
	close(s.lines)
}

// prompt shows what the user is asked next: the oldest approval or
// question, or the message prompt between turns.
func (s *chatSession) prompt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.env.Stdout
	if len(s.queue) > 0 {
		a := s.queue[0]
		if a.Kind == "question" {
			fmt.Fprintf(out, "\n? %s", a.Question)
			if len(a.Choices) > 0 {
				fmt.Fprintf(out, " [%s]", strings.Join(a.Choices, " / "))
			}
			fmt.Fprint(out, "\nanswer> ")
			return
		}
		fmt.Fprintf(out, "\n! approval needed (%s risk): %s\n  %s %s\n  [y] approve  [n] deny  [e] edit args  [r] ask for a revision\napprove> ", a.Risk, a.Preview, a.Tool, a.Args)
		return
	}
	if !s.inTurn {
		fmt.Fprint(out, "> ")
	}
}

// drop removes an approval from the queue (answered here or elsewhere).
func (s *chatSession) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, a := range s.queue {
		if a.ID == id {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			return
		}
	}
}

// event shows one event of the daemon's stream.
func (s *chatSession) event(ev sseEvent) {
	var e envelope
	if json.Unmarshal(ev.Data, &e) != nil {
		return
	}
	out := s.env.Stdout
	switch ev.Type {
	case "message.delta":
		var d struct {
			Text string `json:"text"`
		}
		json.Unmarshal(e.Data, &d)
		fmt.Fprint(out, d.Text)
		s.streamed = true
	case "tool.started":
		var d struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		}
		json.Unmarshal(e.Data, &d)
		fmt.Fprintf(out, "\n  · %s %s\n", d.Tool, snippetCLI(string(d.Args), 120))
	case "tool.finished":
		var d struct {
			Tool, Decision, Status string
			DurationMS             int64 `json:"duration_ms"`
		}
		json.Unmarshal(e.Data, &d)
		fmt.Fprintf(out, "  · %s: %s (%s, %dms)\n", d.Tool, d.Status, d.Decision, d.DurationMS)
	case "approval.requested":
		var d struct {
			Approval pendingApproval `json:"approval"`
		}
		json.Unmarshal(e.Data, &d)
		s.mu.Lock()
		s.queue = append(s.queue, d.Approval)
		first := len(s.queue) == 1
		s.mu.Unlock()
		if first {
			s.prompt()
		}
	case "approval.resolved":
		var d struct {
			ID string `json:"id"`
		}
		json.Unmarshal(e.Data, &d)
		s.drop(d.ID)
	case "turn.started":
		s.inTurn, s.streamed = true, false
	case "turn.finished":
		var d struct {
			Result turnResult `json:"result"`
		}
		json.Unmarshal(e.Data, &d)
		s.inTurn = false
		switch {
		case !d.Result.OK && d.Result.Error != nil:
			fmt.Fprintf(out, "\n[turn ended: %s]\n", d.Result.Error.Message)
		case !s.streamed && d.Result.Text != "":
			fmt.Fprintln(out, d.Result.Text)
		default:
			fmt.Fprintln(out)
		}
		s.prompt()
	}
}

// line handles one typed line: an answer to the approval at the prompt, a
// command, or a new message. It reports whether the user quit.
func (s *chatSession) line(ctx context.Context, line string) (quit bool) {
	s.mu.Lock()
	var head *pendingApproval
	if len(s.queue) > 0 {
		h := s.queue[0]
		head = &h
	}
	s.mu.Unlock()
	out := s.env.Stdout
	if head != nil {
		if err := answerApproval(ctx, s.env, s.c, *head, line, s.lines); err != nil {
			fmt.Fprintf(out, "  %v\n", err)
		} else {
			s.drop(head.ID)
		}
		s.prompt()
		return false
	}
	chat := "/api/chats/" + url.PathEscape(s.chatID)
	switch line {
	case "":
		s.prompt()
	case "/quit", "/exit":
		return true
	case "/cancel":
		var r map[string]bool
		if err := s.c.Do(ctx, http.MethodPost, chat+"/cancel", nil, &r); err != nil {
			fmt.Fprintf(out, "  %v\n", err)
		}
	default:
		if err := s.c.Do(ctx, http.MethodPost, chat+"/messages", map[string]any{"text": line, "over_budget": s.overBudget}, nil); err != nil {
			fmt.Fprintf(out, "  %v\n> ", err)
		} else {
			s.inTurn = true
		}
	}
	return false
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
