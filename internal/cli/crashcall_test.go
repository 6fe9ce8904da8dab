package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// TestDaemonKilledMidCallLeavesUnknown kills a real daemon (kill -9) while
// a tool call runs (a web_fetch of a page that never answers). The audit
// trail holds its decision and start; the next start closes it with a
// tool.run row whose status is unknown, and the chain still verifies.
func TestDaemonKilledMidCallLeavesUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	home := t.TempDir()
	files := filepath.Join(t.TempDir(), "files")
	os.MkdirAll(files, 0o700)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[agent]\nfile_roots = ["+strconv.Quote(files)+"]\n[web]\nallow_hosts = [\"127.0.0.1\"]\n"), 0o600)
	srv := llmtest.New(t, llmtest.ToolCalls(llmtest.Call("f1", "web_fetch", `{"url":`+strconv.Quote(slow.URL+"/page")+`}`)), llmtest.Text("never"))
	env := map[string]string{"HOME": files, "HESTIA_LLM_BASE_URL": srv.URL, "HESTIA_LLM_API_KEY": "k", "HESTIA_LLM_MODEL": "llmtest-model"}
	cmd, base, tok := startDaemonProc(t, home, env)
	var ch struct{ ID string }
	apiCall(t, base, tok, "POST", "/api/chats", `{}`, &ch)
	apiCall(t, base, tok, "POST", "/api/chats/"+ch.ID+"/messages", `{"text":"fetch the page"}`, nil)
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the fetch never reached the page")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	_, base, tok = startDaemonProc(t, home, env)
	type event struct {
		Type string
		Tool string
		Data json.RawMessage
	}
	var started, unknown int
	var list struct{ Events []event }
	apiCall(t, base, tok, "GET", "/api/audit?tool=web_fetch&limit=100", "", &list)
	keys := map[string]string{}
	for _, e := range list.Events {
		var d struct {
			Key    string `json:"call_key"`
			Status string `json:"status"`
		}
		json.Unmarshal(e.Data, &d)
		switch {
		case e.Type == "tool.started":
			started++
			keys[d.Key] += "s"
		case e.Type == "tool.run" && d.Status == "unknown":
			unknown++
			keys[d.Key] += "u"
		}
	}
	if started != 1 || unknown != 1 || len(keys) != 1 {
		t.Fatalf("after kill -9 mid-call: %d starts, %d unknown results, keys %v; events %+v", started, unknown, keys, list.Events)
	}
	var v struct {
		OK bool `json:"ok"`
	}
	apiCall(t, base, tok, "GET", "/api/audit/verify", "", &v)
	if !v.OK {
		t.Fatal("the audit chain does not verify after closing the unknown call")
	}
}
