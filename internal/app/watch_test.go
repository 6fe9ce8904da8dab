package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/heldcall"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// smtpSink is a real SMTP server on loopback that requires AUTH PLAIN and
// records what it accepted.
type smtpSink struct {
	mu    sync.Mutex
	rcpts [][]string
	data  []string
}

func (s *smtpSink) NewSession(*smtp.Conn) (smtp.Session, error) { return &smtpSess{s: s}, nil }

type smtpSess struct {
	s     *smtpSink
	authd bool
	rcpt  []string
}

func (x *smtpSess) AuthMechanisms() []string { return []string{sasl.Plain} }
func (x *smtpSess) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "me@example.org" || pass != "s3cret" {
			return errors.New("bad credentials")
		}
		x.authd = true
		return nil
	}), nil
}
func (x *smtpSess) Mail(string, *smtp.MailOptions) error {
	if !x.authd {
		return errors.New("authenticate first")
	}
	return nil
}
func (x *smtpSess) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.rcpt = append(x.rcpt, to)
	return nil
}
func (x *smtpSess) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	x.s.mu.Lock()
	x.s.rcpts = append(x.s.rcpts, x.rcpt)
	x.s.data = append(x.s.data, string(b))
	x.s.mu.Unlock()
	return err
}
func (x *smtpSess) Reset()        { x.rcpt = nil }
func (x *smtpSess) Logout() error { return nil }

func startSMTP(t *testing.T) (*smtpSink, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sink := &smtpSink{}
	srv := smtp.NewServer(sink)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sink, ln.Addr().(*net.TCPAddr).Port
}

const e2eTrainRef = "S01700/9544/1767571200000"

// TestTrainWatchSendsOneGrantedMail is the end-to-end watch story: a chat
// creates an agent watch on a train (the user approves its grant), the
// recorded ViaggiaTreno answers are replayed, and the arrival makes the
// model send to the exact recipient. mail_send is high risk, so the grant
// cannot pre-approve it: the send waits for a card naming the watch, and
// approved it goes through a real SMTP server once; a repeat asks nothing
// new, a send to another recipient waits as a held call, and a restart
// replaying everything sends nothing more.
func TestTrainWatchSendsOneGrantedMail(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	fixture := "1.json"
	vt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := fixture
		mu.Unlock()
		if r.URL.Path != "/andamentoTreno/"+e2eTrainRef {
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join("..", "watch", "testdata", "train", f))
		if err != nil {
			t.Error(err)
		}
		w.Write(b)
	}))
	defer vt.Close()
	setFixture := func(f string) { mu.Lock(); fixture = f; mu.Unlock() }
	sink, smtpPort := startSMTP(t)

	create := `{"source":"train","ref":"` + e2eTrainRef + `","instruction":"when I arrive in Rome, email Ann that I have arrived","rules":[{"id":"arr","event":"train.arrived","once":true,"grants":[{"tool":"mail_send","max":1,"args":{"to":{"exact":["ann@example.org"]},"subject":{"template":"Train {{event.train}} arrived"},"body":{"exact":"I have arrived."}}}]}]}`
	send := func(id, to string) llmtest.ToolCall {
		return llmtest.Call(id, "mail_send", `{"to":["`+to+`"],"subject":"Train 9544 arrived","body":"I have arrived."}`)
	}
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("c1", "watch_create_agent", create)),
		llmtest.Text("Watching train 9544; I will email Ann when you arrive."),
		// The arrival event: the granted send, the same again, another recipient.
		llmtest.ToolCalls(send("s1", "ann@example.org"), send("s2", "ann@example.org"), send("s3", "eve@attacker.test")),
		llmtest.Text("You arrived in Rome; I emailed Ann."),
	)
	home := t.TempDir()
	pwFile := filepath.Join(t.TempDir(), "smtp-password")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	configure := func(a *App) {
		a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
		a.Config.Watch.TrainBaseURL = vt.URL
		a.Config.Watch.Interval = config.Duration(time.Hour) // the test drives the passes
		a.Config.Mail.Accounts = []config.MailAccount{{Name: "me", Address: "me@example.org", PasswordFile: pwFile,
			SMTPHost: "127.0.0.1", SMTPPort: smtpPort, SMTPSecurity: "none"}}
	}
	a := testApp(t, home)
	configure(a)
	base, stop := start(t, a)
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	evResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer evResp.Body.Close()
	go io.Copy(io.Discard, bufio.NewReader(evResp.Body))

	// Mail's send/confirm work runs as a built-in scheduler job.
	if _, b := call("GET", "/api/jobs", ""); !strings.Contains(b, `"name":"mail.ops","builtin":true`) {
		t.Fatalf("jobs: %s", b)
	}
	_, body := call("POST", "/api/chats", `{}`)
	var ch struct{ ID string }
	json.Unmarshal([]byte(body), &ch)
	done := make(chan string, 1)
	go func() {
		_, b := call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"watch my train 9544 and email Ann when I arrive","wait":true}`)
		done <- b
	}()
	var card struct{ ID, Tool, Preview string }
	deadline := time.Now().Add(20 * time.Second)
	for card.ID == "" {
		if time.Now().After(deadline) {
			t.Fatal("no approval card for watch_create_agent")
		}
		time.Sleep(20 * time.Millisecond)
		_, b := call("GET", "/api/approvals", "")
		var p struct {
			Approvals []struct{ ID, Tool, Preview string }
		}
		json.Unmarshal([]byte(b), &p)
		if len(p.Approvals) > 0 {
			card = p.Approvals[0]
		}
	}
	if card.Tool != "watch_create_agent" || !strings.Contains(card.Preview, "mail_send") || !strings.Contains(card.Preview, "ann@example.org") {
		t.Fatalf("card %+v", card)
	}
	if code, b := call("POST", "/api/approvals/"+card.ID, `{"decision":"approve"}`); code != 200 {
		t.Fatalf("approve: %d %s", code, b)
	}
	if b := <-done; !strings.Contains(b, "Watching train 9544") {
		t.Fatalf("turn: %s", b)
	}
	_, b := call("GET", "/api/watches", "")
	var list struct {
		Watches []struct{ ID, State, ChatID string }
	}
	json.Unmarshal([]byte(b), &list)
	if len(list.Watches) != 1 || list.Watches[0].State != "active" {
		t.Fatalf("watches %s", b)
	}
	wid := list.Watches[0].ID

	pctx := context.Background()
	for _, f := range []string{"2.json", "3.json", "4.json", "5.json", "6.json"} {
		setFixture(f)
		if err := a.Watches.Pass(pctx); err != nil {
			t.Fatal(err)
		}
	}
	// mail_send is high risk: the grant cannot pre-approve it (the
	// high-risk floor), so the call waits for a card that names the watch.
	var card2 struct{ ID, Tool, Origin string }
	for deadline := time.Now().Add(20 * time.Second); card2.ID == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no card for the granted high-risk mail_send")
		}
		_, b := call("GET", "/api/approvals", "")
		var p struct {
			Approvals []struct {
				ID, Tool, Origin string
				Args             json.RawMessage
			}
		}
		json.Unmarshal([]byte(b), &p)
		for _, c := range p.Approvals {
			if c.Tool == "mail_send" && strings.Contains(string(c.Args), "ann@example.org") {
				card2.ID, card2.Tool, card2.Origin = c.ID, c.Tool, c.Origin
			}
		}
	}
	if !strings.Contains(card2.Origin, "watch") {
		t.Fatalf("the card does not name the watch: %+v", card2)
	}
	if code, b := call("POST", "/api/approvals/"+card2.ID, `{"decision":"approve"}`); code != 200 {
		t.Fatalf("approve: %d %s", code, b)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		sink.mu.Lock()
		n := len(sink.rcpts)
		sink.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
	}
	sink.mu.Lock()
	if len(sink.rcpts) != 1 || strings.Join(sink.rcpts[0], ",") != "ann@example.org" || !strings.Contains(sink.data[0], "Subject: Train 9544 arrived") {
		t.Fatalf("SMTP got %v", sink.rcpts)
	}
	sink.mu.Unlock()
	_, b = call("GET", "/api/watches/"+wid, "")
	var det struct {
		State        string
		Claims       []struct{ Tool, State string }
		RecentEvents []struct{ Type, Message string } `json:"recent_events"`
	}
	json.Unmarshal([]byte(b), &det)
	// No claim: the grant could not cover a high-risk send, so the call
	// went to the user as a held call instead of running under the grant.
	if det.State != "completed" || len(det.Claims) != 0 || len(det.RecentEvents) != 1 || det.RecentEvents[0].Message != "You arrived in Rome; I emailed Ann." {
		t.Fatalf("watch detail %s", b)
	}
	// The send to another recipient waits for the user instead of running.
	var pend struct {
		Approvals []struct {
			Tool     string
			Args     json.RawMessage
			NoExpiry bool `json:"no_expiry"`
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for len(pend.Approvals) == 0 && time.Now().Before(deadline) {
		_, b = call("GET", "/api/approvals", "")
		json.Unmarshal([]byte(b), &pend)
		time.Sleep(20 * time.Millisecond)
	}
	if len(pend.Approvals) != 1 || pend.Approvals[0].Tool != "mail_send" || !strings.Contains(string(pend.Approvals[0].Args), "eve@attacker.test") || !pend.Approvals[0].NoExpiry {
		t.Fatalf("gated call: %+v", pend)
	}
	// The chat got the message.
	_, b = call("GET", "/api/chats/"+ch.ID, "")
	if !strings.Contains(b, "You arrived in Rome; I emailed Ann.") {
		t.Fatalf("chat lacks the watch message: %s", b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Restart and replay everything: nothing fires or sends again.
	a2 := testApp(t, home)
	configure(a2)
	base2, stop2 := start(t, a2)
	a2.Watches.Stop(pctx, "nothing") // unknown ids change nothing
	for _, f := range []string{"1.json", "3.json", "5.json", "6.json"} {
		setFixture(f)
		if err := a2.Watches.Pass(pctx); err != nil {
			t.Fatal(err)
		}
	}
	sink.mu.Lock()
	if len(sink.rcpts) != 1 {
		t.Fatalf("after the restart SMTP got %v", sink.rcpts)
	}
	sink.mu.Unlock()
	if n := len(up.ChatRequests()); n != 4 {
		t.Fatalf("model requests %d, want 4", n)
	}

	// The call outside the grant survived the restart: it is asked again,
	// and once the user approves it, it is sent exactly once.
	call2 := func(method, path, body string) string {
		req, _ := http.NewRequest(method, base2+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a2.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	var again struct {
		Approvals []struct {
			ID, Tool string
			Args     json.RawMessage
			NoExpiry bool `json:"no_expiry"`
		}
	}
	for deadline := time.Now().Add(20 * time.Second); len(again.Approvals) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held call was not asked again after the restart")
		}
		json.Unmarshal([]byte(call2("GET", "/api/approvals", "")), &again)
	}
	if len(again.Approvals) != 1 || again.Approvals[0].Tool != "mail_send" || !strings.Contains(string(again.Approvals[0].Args), "eve@attacker.test") || !again.Approvals[0].NoExpiry {
		t.Fatalf("re-asked: %+v", again)
	}
	call2("POST", "/api/approvals/"+again.Approvals[0].ID, `{"decision":"approve"}`)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		sink.mu.Lock()
		n := len(sink.rcpts)
		sink.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approved held send did not reach SMTP (%d messages)", n)
		}
	}
	// Two held calls, both sent once: Ann's (the grant could not pre-approve
	// a high-risk send, so it waited for its card) and the outside one.
	var held []heldcall.Call
	allDone := func() bool {
		for _, c := range held {
			if c.State != heldcall.StateDone {
				return false
			}
		}
		return len(held) == 2
	}
	for deadline := time.Now().Add(20 * time.Second); !allDone(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("held calls %+v", held)
		}
		held, _ = a2.core.held.List(pctx, "")
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	a3 := testApp(t, home)
	configure(a3)
	_, stop3 := start(t, a3)
	defer stop3()
	if err := a3.core.held.Resume(pctx); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.rcpts) != 2 || strings.Join(sink.rcpts[1], ",") != "eve@attacker.test" || len(a3.core.approvals.Pending("")) != 0 {
		t.Fatalf("after a third start: SMTP %v, cards %+v", sink.rcpts, a3.core.approvals.Pending(""))
	}
}
