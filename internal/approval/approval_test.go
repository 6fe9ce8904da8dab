package approval

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type recorder struct {
	mu   sync.Mutex
	reqs []Request
	res  []Decision
}

func (r *recorder) Requested(q Request) { r.mu.Lock(); r.reqs = append(r.reqs, q); r.mu.Unlock() }
func (r *recorder) Resolved(q Request, d Decision) {
	r.mu.Lock()
	r.res = append(r.res, d)
	r.mu.Unlock()
}

func waitPending(t *testing.T, b *Broker) Request {
	t.Helper()
	for i := 0; i < 5000; i++ {
		if p := b.Pending(""); len(p) > 0 {
			return p[0]
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("nothing pending")
	return Request{}
}

func TestFirstDecisionWins(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	b := New(Options{Notify: rec})
	done := make(chan Decision, 1)
	go func() {
		_, d := b.Ask(context.Background(), Request{Tool: "write_file", Args: json.RawMessage(`{"a":1}`)}, false)
		done <- d
	}()
	req := waitPending(t, b)
	var wg sync.WaitGroup
	var wins, conflicts int
	var mu sync.Mutex
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.Decide(req.ID, Decision{Outcome: Deny, Note: "no"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrAlreadyDecided):
				conflicts++
			default:
				t.Errorf("unexpected %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 19 {
		t.Fatalf("wins %d conflicts %d", wins, conflicts)
	}
	if d := <-done; d.Outcome != Deny || d.Note != "no" {
		t.Errorf("decision %+v", d)
	}
	if _, err := b.Decide("a_missing", Decision{Outcome: Approve}); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if len(rec.reqs) != 1 || len(rec.res) != 1 {
		t.Errorf("notified %d/%d", len(rec.reqs), len(rec.res))
	}
}

func TestTimeoutCancelNoApprover(t *testing.T) {
	t.Parallel()
	b := New(Options{Timeout: 30 * time.Millisecond})
	if _, d := b.Ask(context.Background(), Request{}, false); d.Outcome != Timeout || d.Runs() {
		t.Errorf("timeout: %+v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, d := New(Options{}).Ask(ctx, Request{}, false); d.Outcome != Cancelled {
		t.Errorf("cancel: %+v", d)
	}
	nobody := New(Options{Approvers: func() int { return 0 }})
	req, d := nobody.Ask(context.Background(), Request{}, false)
	if d.Outcome != NoApprover || len(nobody.Pending("")) != 0 {
		t.Errorf("no approver: %+v", d)
	}
	if _, err := nobody.Decide(req.ID, Decision{Outcome: Approve}); !errors.Is(err, ErrAlreadyDecided) {
		t.Errorf("deciding a resolved request: %v", err)
	}
	if _, d := New(Options{}).Ask(context.Background(), Request{}, true); d.Outcome != NoApprover {
		t.Errorf("headless: %+v", d)
	}
}

func TestEditValidatedAndHTTP(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	mux := http.NewServeMux()
	b.Routes(mux)
	done := make(chan Decision, 1)
	go func() {
		_, d := b.Ask(context.Background(), Request{ChatID: "c1", Tool: "write_file", Args: json.RawMessage(`{"path":"a"}`), Validate: func(a json.RawMessage) (json.RawMessage, error) {
			if !strings.Contains(string(a), `"path"`) {
				return nil, errors.New(`missing required field "path"`)
			}
			return json.RawMessage(`{"path":"edited"}`), nil
		}}, false)
		done <- d
	}()
	req := waitPending(t, b)
	post := func(body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("POST", "/api/approvals/"+req.ID, strings.NewReader(body)))
		return w
	}
	list := httptest.NewRecorder()
	mux.ServeHTTP(list, httptest.NewRequest("GET", "/api/approvals?chat=c1", nil))
	if !strings.Contains(list.Body.String(), req.ID) || strings.Contains(list.Body.String(), "Validate") {
		t.Errorf("list: %s", list.Body)
	}
	for body, want := range map[string]string{
		`{"decision":"edit","args":{"x":1}}`: "invalid_args",
		`{"decision":"edit"}`:                "invalid_args",
		`{"decision":"approve","args":{}}`:   "bad_request",
		`{"decision":"timeout"}`:             "bad_request",
		`{"decision":"answer","answer":"x"}`: "bad_request",
		`{"decision":"maybe"}`:               "bad_request",
		`{"decision":"approve","mode":"x"}`:  "bad_request",
		`{"decision":"approve","extra":1}`:   "bad_request",
	} {
		if w := post(body); w.Code != 400 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s → %d %s", body, w.Code, w.Body)
		}
	}
	if w := post(`{"decision":"edit","args":{"path":"b"}}`); w.Code != 200 {
		t.Fatalf("edit: %d %s", w.Code, w.Body)
	}
	if w := post(`{"decision":"approve"}`); w.Code != 409 {
		t.Errorf("second decision: %d %s", w.Code, w.Body)
	}
	if d := <-done; d.Outcome != Edit || string(d.Args) != `{"path":"edited"}` {
		t.Errorf("effective args %+v", d)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/api/approvals/a_nope", strings.NewReader(`{"decision":"approve"}`)))
	if w.Code != 404 {
		t.Errorf("unknown id: %d", w.Code)
	}
}

func TestQuestions(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	done := make(chan Decision, 1)
	go func() {
		_, d := b.Ask(context.Background(), Request{Kind: KindQuestion, Question: "Which?"}, false)
		done <- d
	}()
	req := waitPending(t, b)
	if _, err := b.Decide(req.ID, Decision{Outcome: Approve}); !errors.Is(err, ErrInvalid) {
		t.Errorf("approve on a question: %v", err)
	}
	if _, err := b.Decide(req.ID, Decision{Outcome: Answer, Answer: "that one"}); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d.Answer != "that one" {
		t.Errorf("%+v", d)
	}
}

func TestApproversForIsAskedPerChat(t *testing.T) {
	t.Parallel()
	// Only chat A has someone who could answer: chat B's request resolves
	// at once instead of waiting for a timeout nobody can beat.
	b := New(Options{Timeout: time.Minute, Approvers: func() int { return 1 },
		ApproversFor: func(chatID string) int {
			if chatID == "A" {
				return 1
			}
			return 0
		}})
	start := time.Now()
	if _, d := b.Ask(context.Background(), Request{ChatID: "B", Tool: "write_file"}, false); d.Outcome != NoApprover {
		t.Fatalf("chat B: %+v", d)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("chat B waited for an approver it does not have")
	}
	done := make(chan Decision, 1)
	go func() {
		_, d := b.Ask(context.Background(), Request{ChatID: "A", Tool: "write_file"}, false)
		done <- d
	}()
	req := waitPending(t, b)
	if _, err := b.Decide(req.ID, Decision{Outcome: Deny}); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d.Outcome != Deny {
		t.Fatalf("chat A: %+v", d)
	}
}

func TestNoExpiryWaitsWithoutApproversOrTimeout(t *testing.T) {
	t.Parallel()
	b := New(Options{Timeout: 10 * time.Millisecond, Approvers: func() int { return 0 }})
	got := make(chan Decision, 1)
	go func() {
		_, d := b.Ask(context.Background(), Request{Tool: "mail_send", NoExpiry: true}, false)
		got <- d
	}()
	p := waitPending(t, b)
	if !p.ExpiresAt.IsZero() || !p.NoExpiry {
		t.Fatalf("background request: %+v", p)
	}
	// Many timeouts pass; it is still pending.
	time.Sleep(50 * time.Millisecond)
	if len(b.Pending("")) != 1 {
		t.Fatal("a background request expired")
	}
	if _, err := b.Decide(p.ID, Decision{Outcome: Approve}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d.Outcome != Approve {
		t.Fatalf("decision %+v", d)
	}
	// The caller ending still cancels it.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { waitPending(t, b); cancel() }()
	if _, d := b.Ask(ctx, Request{NoExpiry: true}, false); d.Outcome != Cancelled {
		t.Fatalf("cancel: %+v", d)
	}
	// An explicit headless turn is still denied at once.
	if _, d := b.Ask(context.Background(), Request{NoExpiry: true}, true); d.Outcome != NoApprover {
		t.Fatalf("headless: %+v", d)
	}
}
