package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// sipApp is a daemon whose [voice.sip] calls to, with the speech tiers on
// the fake speech server.
func sipApp(t *testing.T, to string, sp *siptest.Speech, configure func(*config.Config), script ...llmtest.Turn) (*App, string, func() error) {
	t.Helper()
	up := llmtest.New(t, script...)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.LLM.Providers = map[string]config.LLMProvider{"speech": {BaseURL: sp.URL}}
	a.Config.LLM.Tiers = map[string][]string{"stt": {"speech/whisper-1"}, "tts": {"speech/tts-1"}}
	s := &a.Config.Voice.SIP
	s.Number = to
	s.RingTimeout, s.RTPTimeout = config.Duration(5*time.Second), config.Duration(5*time.Second)
	if configure != nil {
		configure(&a.Config)
	}
	base, stop := start(t, a)
	return a, base, stop
}

func sipDo(t *testing.T, base, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// A whole call through the daemon with baresip as the phone: POST
// /api/voice/call rings, the opening line is spoken, the user's words
// (transcribed by the fake stt) become a turn in the call's chat with
// the SIP call origin, the scripted model proposes a gated write, the
// card is read out, the phone presses 1, the file is written once, the
// reply is spoken, and the hang-up is recorded with its outcome in the
// audit trail and the chat.
func TestSIPCallApprovesGatedWriteByKeypad(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	voice := append(siptest.Silence(2500*time.Millisecond, 8000), siptest.Speechlike(time.Second, 8000)...)
	phone := siptest.StartPhone(t, siptest.PhoneOptions{AutoAnswer: true, Voice: voice})
	sp := siptest.NewSpeech(t, "please write the note")
	a, base, stop := sipApp(t, phone.URI, sp, func(c *config.Config) { c.Agent.FileRoots = []string{files} },
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from the phone"}`)),
		llmtest.Text("Done, the note is written."),
	)
	defer stop()

	code, m := sipDo(t, base, a.Token.Value(), "POST", "/api/voice/call", `{"text":"Hello, it is Hestia."}`)
	if code != http.StatusAccepted || m["state"] != "ringing" {
		t.Fatalf("call: %d %v", code, m)
	}
	callID, chatID := m["id"].(string), m["chat_id"].(string)
	ctx := context.Background()
	spoke := func(s string) func() bool {
		return func() bool {
			return slices.ContainsFunc(sp.Spoken(), func(x string) bool { return strings.Contains(x, s) })
		}
	}
	defer func() {
		if t.Failed() {
			entries, _ := a.core.audit.List(ctx, audit.Filter{Limit: 100})
			for _, e := range entries {
				t.Logf("audit %s: %s", e.Type, e.Summary)
			}
			t.Logf("spoken %q", sp.Spoken())
		}
	}()
	if !siptest.WaitFor(ctx, 20*time.Second, spoke("Press 1 to approve")) {
		t.Fatal("the approval was not read out")
	}
	pending := a.core.approvals.Pending(chatID)
	if len(pending) != 1 || pending[0].Tool != "write_file" {
		t.Fatalf("pending %+v", pending)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	if err := phone.Press('1'); err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(ctx, 10*time.Second, spoke("the note is written")) {
		t.Fatal("the reply was not spoken")
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "from the phone" {
		t.Fatalf("file = %q, %v", b, err)
	}
	if code, m := sipDo(t, base, a.Token.Value(), "POST", "/api/voice/calls/"+callID+"/hangup", ""); code != 200 || m["state"] != "ended" {
		t.Fatalf("hangup: %d %v", code, m)
	}
	_, m = sipDo(t, base, a.Token.Value(), "GET", "/api/voice/calls/"+callID, "")
	res, _ := m["result"].(map[string]any)
	if res["outcome"] != "answered" || res["turns"] != float64(1) || res["hung_up_by"] != "hestia" {
		t.Fatalf("result %v", m)
	}

	entries, err := a.core.audit.List(ctx, audit.Filter{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var runs, calls, resolved int
	for _, e := range entries {
		switch {
		case e.Type == audit.TypeToolRun && e.Tool == "write_file":
			runs++
		case e.Type == "voice.call" && e.ChatID == chatID && strings.Contains(e.Summary, "answered"):
			calls++
		case e.Type == audit.TypeApprovalResolved && strings.Contains(e.Summary, "approve"):
			resolved++
		}
	}
	if runs != 1 || calls != 1 || resolved != 1 {
		t.Errorf("audit: %d write_file runs, %d call rows, %d approvals", runs, calls, resolved)
	}
	msgs, err := a.core.chats.Messages(ctx, chatID, 50)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, msg := range msgs {
		if msg.Content != "" {
			lines = append(lines, msg.Role+": "+msg.Content)
		}
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{"assistant: Hello, it is Hestia.", "user: please write the note", "assistant: Done, the note is written.", "answered"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the chat lacks %q:\n%s", want, joined)
		}
	}
}

// The routes' authentication: no token is refused, a paired device needs
// the chat scope to ring (a read-only one may only look), a busy line is
// a conflict; and a job or watch result delivered with "call" rings with
// the result as the opening line, in the result's chat, its outcome
// recorded there.
func TestSIPRoutesAndDelivery(t *testing.T) {
	t.Parallel()
	peer := siptest.StartPeer(t, siptest.PeerOptions{NeverAnswer: true})
	sp := siptest.NewSpeech(t)
	a, base, stop := sipApp(t, peer.URI, sp, nil, llmtest.Text("unused"))
	defer stop()
	ctx := context.Background()
	_, reader, err := a.Devices.Create(ctx, "Wall display", "browser", []devices.Scope{devices.Read})
	if err != nil {
		t.Fatal(err)
	}
	_, phone, err := a.Devices.Create(ctx, "Phone shortcut", "browser", []devices.Scope{devices.Chat})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := sipDo(t, base, "", "POST", "/api/voice/quick-call", ""); code != http.StatusUnauthorized {
		t.Errorf("quick call without a token: %d", code)
	}
	if code, _ := sipDo(t, base, reader, "POST", "/api/voice/quick-call", ""); code != http.StatusForbidden {
		t.Errorf("quick call from a read-only device: %d", code)
	}
	if code, m := sipDo(t, base, reader, "GET", "/api/voice/call", ""); code != 200 || m["to"] != peer.URI {
		t.Errorf("status for a reader: %d %v", code, m)
	}
	if code, m := sipDo(t, base, phone, "POST", "/api/voice/call", `{"text":""}`); code != http.StatusBadRequest {
		t.Errorf("empty text: %d %v", code, m)
	}
	if code, m := sipDo(t, base, phone, "POST", "/api/voice/call", `{"text":"hi","chat_id":"c_nope"}`); code != http.StatusNotFound {
		t.Errorf("unknown chat: %d %v", code, m)
	}
	code, m := sipDo(t, base, phone, "POST", "/api/voice/quick-call", "")
	if code != http.StatusAccepted {
		t.Fatalf("quick call: %d %v", code, m)
	}
	quickChat := m["chat_id"].(string)
	if code, _ := sipDo(t, base, phone, "POST", "/api/voice/quick-call", `{"text":"again"}`); code != http.StatusConflict {
		t.Errorf("a second call while the first rings: %d", code)
	}
	// The phone rings until the caller hangs up (here: the route does).
	hangup := func() {
		t.Helper()
		if !siptest.WaitFor(ctx, 5*time.Second, func() bool { inv, _, _ := peer.Counts(); return a.sip.Status().Current != nil && inv > 0 }) {
			t.Fatal("no call rings")
		}
		id := a.sip.Status().Current.ID
		if code, m := sipDo(t, base, phone, "POST", "/api/voice/calls/"+id+"/hangup", ""); code != 200 || m["state"] != "ended" {
			t.Fatalf("hangup: %d %v", code, m)
		}
	}
	hangup()
	msgs, _ := a.core.chats.Messages(ctx, quickChat, 10)
	if len(msgs) != 2 || !strings.Contains(msgs[0].Content, "Hello, this is Hestia") || !strings.Contains(msgs[1].Content, "no answer") {
		t.Fatalf("quick call chat: %+v", msgs)
	}

	via, err := notify.ParseDeliver([]string{"call", "inbox"})
	if err != nil || !slices.Equal(via, []string{"inbox", "call"}) {
		t.Fatalf("ParseDeliver: %v %v", via, err)
	}
	ch, err := a.core.chats.Create(ctx, "Watches")
	if err != nil {
		t.Fatal(err)
	}
	a.deliverResult(ctx, []string{notify.DeliverCall}, notify.Notification{Kind: notify.KindWatch, Key: "watch-event:7",
		Title: "Watch: train.cancelled", Body: "Your 9:12 train to Milan is cancelled.", ChatID: ch.ID})
	hangup()
	msgs, _ = a.core.chats.Messages(ctx, ch.ID, 10)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Content, "no answer") {
		t.Fatalf("delivery chat: %+v", msgs)
	}
	entries, _ := a.core.audit.List(ctx, audit.Filter{Limit: 100})
	var origins []string
	for _, e := range entries {
		if e.Type == "voice.call" {
			var d map[string]any
			json.Unmarshal(e.Data, &d)
			origins = append(origins, fmt.Sprint(d["origin"], " ", d["outcome"]))
		}
	}
	slices.Sort(origins)
	if !slices.Equal(origins, []string{"quick-call no_answer", "watch-event:7 no_answer"}) {
		t.Errorf("call audit rows: %q", origins)
	}
	if inv, _, _ := peer.Counts(); inv != 2 {
		t.Errorf("the phone was rung %d times", inv)
	}
}

// The owner calls the daemon ([voice.sip] inbound = true): doctor says
// inbound calls are on and from which number; the PIN from the owner-only
// file is asked for, and only after it does what the caller says become a
// turn in a fresh chat; the model's gated write is read out on a card
// that names "SIP call (inbound)", 1 approves it, the reply is spoken, and
// the call is audited as inbound. A PIN file other users can read keeps
// the daemon from starting.
func TestSIPInboundCallWithPIN(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	pinFile := filepath.Join(t.TempDir(), "sip-pin")
	if err := os.WriteFile(pinFile, []byte("975310\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freeUDPPort(t)
	sp := siptest.NewSpeech(t, "please write the note")
	a, _, stop := sipApp(t, "sip:phone@127.0.0.1:9", sp, func(c *config.Config) {
		c.Agent.FileRoots = []string{files}
		s := &c.Voice.SIP
		s.Inbound, s.InboundPINFile, s.InboundNumbers, s.ListenPort = true, pinFile, []string{"+39 347 1234567"}, port
		s.Greeting = "Yes?"
	},
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from my call"}`)),
		llmtest.Text("Done, the note is written."),
	)
	defer stop()
	ctx := context.Background()
	if r := doctorResult(t, a, "sip"); !strings.Contains(r.Detail, "inbound calls on from +39 347 1234567 (PIN required)") {
		t.Errorf("doctor: %+v", r)
	}
	spoke := func(s string) func() bool {
		return func() bool {
			return slices.ContainsFunc(sp.Spoken(), func(x string) bool { return strings.Contains(x, s) })
		}
	}
	defer func() {
		if t.Failed() {
			entries, _ := a.core.audit.List(ctx, audit.Filter{Limit: 100})
			for _, e := range entries {
				t.Logf("audit %s: %s", e.Type, e.Summary)
			}
			t.Logf("spoken %q", sp.Spoken())
		}
	}()
	caller := siptest.StartPeer(t, siptest.PeerOptions{})
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := caller.Call(cctx, fmt.Sprintf("sip:hestia@127.0.0.1:%d", port), siptest.CallOptions{From: "+393471234567"})
	if err != nil || out.Status != 200 {
		t.Fatalf("calling the daemon: %v %+v", err, out)
	}
	if !siptest.WaitFor(ctx, 15*time.Second, spoke("Enter your PIN")) {
		t.Fatal("no PIN prompt")
	}
	if err := out.Press("975310#"); err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(ctx, 15*time.Second, spoke("Yes?")) {
		t.Fatal("no greeting after the PIN")
	}
	time.Sleep(1500 * time.Millisecond) // the prompt's rest is cut; the greeting plays out
	out.Say(siptest.Speechlike(1200*time.Millisecond, 8000))
	if !siptest.WaitFor(ctx, 20*time.Second, spoke("Press 1 to approve")) {
		t.Fatal("the approval was not read out")
	}
	cur := a.sip.Status().Current
	if cur == nil || cur.Direction != "inbound" || cur.ChatID == "" {
		t.Fatalf("current call %+v", cur)
	}
	pending := a.core.approvals.Pending(cur.ChatID)
	if len(pending) != 1 || pending[0].Tool != "write_file" || !strings.Contains(pending[0].Origin, "SIP call (inbound)") {
		t.Fatalf("pending %+v", pending)
	}
	if err := out.Press("1"); err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(ctx, 15*time.Second, spoke("the note is written")) {
		t.Fatal("the reply was not spoken")
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "from my call" {
		t.Fatalf("file = %q, %v", b, err)
	}
	hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
	defer hcancel()
	if err := out.Hangup(hctx); err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(ctx, 10*time.Second, func() bool { return a.sip.Status().Current == nil }) {
		t.Fatal("the call did not end")
	}
	entries, err := a.core.audit.List(ctx, audit.Filter{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	for _, e := range entries {
		if e.Type == "voice.call" && e.ChatID == cur.ChatID {
			var d map[string]any
			json.Unmarshal(e.Data, &d)
			if d["direction"] == "inbound" && d["outcome"] == "answered" && strings.Contains(e.Summary, "Call from +393471234567: answered") {
				calls++
			}
		}
		if strings.Contains(e.Summary+string(e.Data), "975310") {
			t.Errorf("the PIN is in the audit trail: %s %s", e.Summary, e.Data)
		}
	}
	if calls != 1 {
		t.Errorf("%d inbound call rows", calls)
	}

	// A PIN others can read stops the daemon at start, naming the key.
	if err := os.Chmod(pinFile, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := testApp(t, t.TempDir())
	bad.Config.Voice.SIP = a.Config.Voice.SIP
	bad.Config.Voice.SIP.ListenPort = 0
	bad.Config.LLM = a.Config.LLM
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	err = bad.Serve(sctx, ServeOptions{Ready: func(net.Addr) { scancel() }})
	if err == nil || !strings.Contains(err.Error(), "voice.sip.inbound_pin_file") || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable PIN file: %v", err)
	}
}

// freeUDPPort is a loopback UDP port free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
