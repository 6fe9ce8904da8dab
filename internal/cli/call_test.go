package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/voice/sipcall"
	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// callDaemon serves a home whose [voice.sip] rings to, with the speech
// tiers on a fake speech server.
func callDaemon(t *testing.T, to string) (string, map[string]string) {
	t.Helper()
	home := t.TempDir()
	sp := siptest.NewSpeech(t)
	cfg := "[llm.providers.speech]\nbase_url = " + strconv.Quote(sp.URL) + "\n" +
		"[llm.tiers]\nstt = [\"speech/whisper-1\"]\ntts = [\"speech/tts-1\"]\n" +
		"[voice.sip]\nnumber = " + strconv.Quote(to) + "\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HESTIA_SERVER_ADDR": "127.0.0.1:0", "HESTIA_LLM_BASE_URL": "http://127.0.0.1:9/v1", "HESTIA_LLM_MODEL": "m"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		e := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Version: "test", Getenv: func(k string) string {
			if k == "HESTIA_HOME" {
				return home
			}
			return env[k]
		}}
		done <- Main(ctx, []string{"--log-level", "error", "serve"}, e)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, rerr := daemonaddr.Read(filepath.Join(home, daemonaddr.FileName))
		if rerr == nil {
			if conn, err := net.Dial("tcp", rec.Addr); err == nil {
				conn.Close()
				return home, map[string]string{"HESTIA_SERVER_ADDR": rec.Addr}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hestia call: the status, a call waited for with its outcome and exit
// status, a quick call, and the usage errors.
func TestCallCommand(t *testing.T) {
	t.Parallel()
	peer := siptest.StartPeer(t, siptest.PeerOptions{Status: 486, Ring: true})
	home, env := callDaemon(t, peer.URI)
	if r := run(t, home, env, "call", "--status"); r.code != 0 || !strings.Contains(r.stdout, "Calls go to "+peer.URI+" without registering.") || !strings.Contains(r.stdout, "No call in progress.") || !strings.Contains(r.stdout, "Calls to Hestia are declined (voice.sip.inbound is off).") {
		t.Fatalf("status: %+v", r)
	}
	r := run(t, home, env, "call", "Your", "train", "is", "late.", "--wait")
	if r.code != 1 || !strings.Contains(r.stdout, "Calling "+peer.URI) || !strings.Contains(r.stdout, "busy (Busy Here).") {
		t.Fatalf("call --wait: %+v", r)
	}
	r = run(t, home, env, "call", "--json", "--wait")
	var snap sipcall.Snapshot
	if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil || snap.State != sipcall.StateEnded || snap.Result == nil || snap.Result.Outcome != sipcall.Busy || snap.ChatID == "" {
		t.Fatalf("quick call --json --wait: %+v (%v)", r, err)
	}
	for _, bad := range [][]string{{"call", "--chat", "c_1"}, {"call", "--status", "hi"}, {"call", "--frob"}} {
		if r := run(t, home, env, bad...); r.code != 2 {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	if inv, _, _ := peer.Counts(); inv != 2 {
		t.Errorf("the phone rang %d times", inv)
	}
}

// Without [voice.sip] the command says what to configure.
func TestCallNotConfigured(t *testing.T) {
	home, env, _ := daemonEnvWith(t, false)
	for _, args := range [][]string{{"call", "--status"}, {"call", "hello"}} {
		if r := run(t, home, env, args...); r.code != 1 || !strings.Contains(r.stderr, "[voice.sip] number") {
			t.Errorf("%v: %+v", args, r)
		}
	}
}
