package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/channeltest"
	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// checkingPlatform is the in-memory platform under another name, with a
// connection test whose answer the test sets.
type checkingPlatform struct {
	*channeltest.Platform
	name string

	mu   sync.Mutex // guards the fields below
	who  string
	err  error
	hang bool // Check waits for its context to end
}

func (p *checkingPlatform) Name() string { return p.name }

func (p *checkingPlatform) set(who string, err error, hang bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.who, p.err, p.hang = who, err, hang
}

func (p *checkingPlatform) Check(ctx context.Context) (string, error) {
	p.mu.Lock()
	who, err, hang := p.who, p.err, p.hang
	p.mu.Unlock()
	if hang {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return who, err
}

// doctorResult runs the daemon's checks as hestia doctor does and returns
// the one named name.
func doctorResult(t *testing.T, a *App, name string) doctor.Result {
	t.Helper()
	checks, err := a.Checks()
	if err != nil {
		t.Fatal(err)
	}
	var mine []doctor.Check
	for _, c := range checks {
		if c.Name == name {
			mine = append(mine, c)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("%d doctor checks named %q", len(mine), name)
	}
	return doctor.Run(context.Background(), mine, 3*time.Second)[0]
}

// channelTest posts to the Settings connection test with token tok.
func channelTest(t *testing.T, base, tok, name string) (int, channelTestResult, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/settings/channels/"+name+"/test", nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var res channelTestResult
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatalf("answer %s: %v", body, err)
		}
	}
	return resp.StatusCode, res, string(body)
}

// Doctor runs each channel's connection test beside the outbox figures,
// bounded so a silent platform still gets a report; the Settings route
// runs the same test for the admin, answers why a channel did not start,
// and refuses everyone else. A channel that cannot start leaves the
// daemon running.
func TestChannelDoctorAndConnectionTest(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t)
	checking := &checkingPlatform{Platform: channeltest.New(), name: "checking", who: "@hestia_bot"}
	plain := channeltest.New()
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.extraChannels = []channelBuilder{
		{key: "channels.checking", label: "Checking", enabled: true, owners: []string{"U1"},
			build: func(context.Context) (channels.Platform, error) { return checking, nil }},
		{key: "channels.fake", label: "Fake", enabled: true, owners: []string{"U1"},
			build: func(context.Context) (channels.Platform, error) { return plain, nil }},
		{key: "channels.broken", label: "Broken", enabled: true, owners: []string{"U1"},
			build: func(context.Context) (channels.Platform, error) {
				return nil, errors.New("channels.broken.token_file is readable by other users; run chmod 600 on it")
			}},
		{key: "channels.badcontact", label: "Bad", enabled: true, owners: []string{"U1"}, contacts: []string{":chat"},
			build: func(context.Context) (channels.Platform, error) {
				t.Error("built despite a bad contact")
				return nil, nil
			}},
	}
	base, stop := start(t, a)
	defer stop()

	r := doctorResult(t, a, "channel checking")
	if r.Status != doctor.OK || r.Detail != "connected as @hestia_bot; 1 allowed identit(ies); outbox: 0 waiting, 0 given up (of the last 0)" {
		t.Errorf("ok: %+v", r)
	}
	if r := doctorResult(t, a, "channel fake"); r.Status != doctor.OK || strings.Contains(r.Detail, "connected") || !strings.Contains(r.Detail, "outbox") {
		t.Errorf("no connection test: %+v", r)
	}
	if r := doctorResult(t, a, "channel broken"); r.Status != doctor.Fail || !strings.Contains(r.Detail, "not started: channels.broken: channels.broken.token_file is readable") {
		t.Errorf("not started: %+v", r)
	}
	if r := doctorResult(t, a, "channel badcontact"); r.Status != doctor.Fail || !strings.Contains(r.Detail, "channels.badcontact.contacts") {
		t.Errorf("bad contact: %+v", r)
	}
	checking.set("", errors.New("slack auth.test: invalid_auth; check channels.slack.token"), false)
	if r := doctorResult(t, a, "channel checking"); r.Status != doctor.Fail ||
		r.Detail != "connection test failed: slack auth.test: invalid_auth; check channels.slack.token; 1 allowed identit(ies); outbox: 0 waiting, 0 given up (of the last 0)" {
		t.Errorf("refused: %+v", r)
	}
	checking.set("", nil, true)
	if r := doctorResult(t, a, "channel checking"); r.Status != doctor.Fail || !strings.Contains(r.Detail, "no answer within") || !strings.Contains(r.Detail, "outbox: 0 waiting") {
		t.Errorf("silent platform: %+v", r)
	}

	owner := a.Token.Value()
	checking.set("@hestia_bot", nil, false)
	for _, c := range []struct {
		name string
		want channelTestResult
	}{
		{"checking", channelTestResult{OK: true, Who: "@hestia_bot"}},
		{"fake", channelTestResult{Error: "the Fake channel has no connection test"}},
		{"broken", channelTestResult{Error: "not started: channels.broken: channels.broken.token_file is readable by other users; run chmod 600 on it"}},
	} {
		code, got, body := channelTest(t, base, owner, c.name)
		if code != http.StatusOK || got != c.want {
			t.Errorf("%s: %d %s", c.name, code, body)
		}
	}
	checking.set("", errors.New("refused"), false)
	if code, got, body := channelTest(t, base, owner, "checking"); code != http.StatusOK || got.OK || got.Error != "refused" {
		t.Errorf("failing test: %d %s", code, body)
	}
	if code, _, body := channelTest(t, base, owner, "nosuch"); code != http.StatusNotFound || !strings.Contains(body, `no channel named \"nosuch\" is on`) {
		t.Errorf("unknown channel: %d %s", code, body)
	}
	if code, _, _ := channelTest(t, base, "", "checking"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	_, phone, err := a.Devices.Create(context.Background(), "Phone", "browser", []devices.Scope{devices.Chat, devices.Approve, devices.Read})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := channelTest(t, base, phone, "checking"); code != http.StatusForbidden || !strings.Contains(body, "admin") {
		t.Errorf("a chat device: %d %s", code, body)
	}
}

// Telegram's doctor check runs getMe beside the outbox figures, and the
// connection test answers for it; a token file others can read keeps
// Telegram down (said by doctor and the test) but not the daemon.
func TestTelegramDoctorAndConnectionTest(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t)
	tg := tgtest.New(t)
	a := telegramApp(t, up, tg, t.TempDir())
	base, stop := start(t, a)
	r := doctorResult(t, a, "telegram")
	if r.Status != doctor.OK || r.Detail != "connected as @"+tgtest.BotUsername+"; 2 allowed identit(ies); outbox: 0 waiting, 0 given up (of the last 0) (long polling)" {
		t.Errorf("doctor: %+v", r)
	}
	if code, got, body := channelTest(t, base, a.Token.Value(), "telegram"); code != http.StatusOK || !got.OK || got.Who != "@"+tgtest.BotUsername {
		t.Errorf("connection test: %d %s", code, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	down := testApp(t, t.TempDir())
	down.Config.LLM.BaseURL, down.Config.LLM.Model = up.URL, "llama3"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(tgtest.Token), 0o644); err != nil {
		t.Fatal(err)
	}
	down.Config.Telegram = config.TelegramConfig{TokenFile: file, APIURL: tg.URL, OwnerID: tgOwner, PollTimeout: config.Duration(time.Second), MaxVoiceMB: 20}
	base, stop2 := start(t, down)
	defer stop2()
	if r := doctorResult(t, down, "telegram"); r.Status != doctor.Fail || !strings.Contains(r.Detail, "not started: telegram.token_file") || strings.Contains(r.Detail, tgtest.Token) {
		t.Errorf("doctor: %+v", r)
	}
	if code, got, body := channelTest(t, base, down.Token.Value(), "telegram"); code != http.StatusOK || got.OK || !strings.Contains(got.Error, "chmod 600") {
		t.Errorf("connection test: %d %s", code, body)
	}
}
