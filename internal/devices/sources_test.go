package devices

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Telegram users (a Source) are listed with their scopes beside paired
// devices, cannot be revoked through the registry, and write requests of
// paired devices are audited with the device that made them.
func TestSourcesAndPerDeviceAudit(t *testing.T) {
	t.Parallel()
	r, local := openRegistry(t, t.TempDir())
	var mu sync.Mutex
	var rows []map[string]any
	r.SetAudit(func(ctx context.Context, typ, summary string, data any) {
		mu.Lock()
		defer mu.Unlock()
		if typ != "device.request" {
			t.Errorf("audit type %q", typ)
		}
		rows = append(rows, data.(map[string]any))
	})
	r.AddSource(func(ctx context.Context) ([]Device, error) {
		return []Device{{ID: "tg_42", Name: "Telegram @anna (42)", Kind: "telegram", Scopes: []Scope{Chat, Approve, Read}, Managed: "config"}}, nil
	})
	phone, tok, err := r.Create(context.Background(), "Anna phone", "browser", []Scope{Chat, Read})
	if err != nil {
		t.Fatal(err)
	}
	list, err := r.List(context.Background())
	if err != nil || len(list) != 2 || list[0].ID != phone.ID || list[1].ID != "tg_42" || list[1].Managed != "config" || len(list[1].Scopes) != 3 {
		t.Fatalf("list %+v %v", list, err)
	}
	if _, err := r.Revoke(context.Background(), "tg_42"); !errors.Is(err, ErrManaged) || !strings.Contains(err.Error(), "config.toml") {
		t.Fatalf("revoking a Telegram user: %v", err)
	}
	if _, err := r.Revoke(context.Background(), "d_nope"); errors.Is(err, ErrManaged) || err == nil {
		t.Fatalf("revoking an unknown device: %v", err)
	}

	mux := http.NewServeMux()
	r.Routes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(http.StatusNoContent) })
	call := func(cred, method, path string) int {
		req := httptest.NewRequest(method, path+"?secret=zzz", nil)
		ctx, release, err := r.Authenticate(req, cred)
		if err != nil {
			return http.StatusUnauthorized
		}
		defer release()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req.WithContext(ctx))
		return rec.Code
	}
	call(tok, "GET", "/api/chats")
	call(tok, "POST", "/api/chats/c_1/messages")
	call(local.Value(), "POST", "/api/chats/c_1/messages")
	if code := call(local.Value(), "DELETE", "/api/devices/tg_42"); code != http.StatusConflict {
		t.Fatalf("revoke route for a Telegram user: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rows) != 1 {
		t.Fatalf("audited %v, want the device's one write request", rows)
	}
	got := rows[0]
	if got["device_id"] != phone.ID || got["device_name"] != "Anna phone" || got["method"] != "POST" || got["path"] != "/api/chats/c_1/messages" {
		t.Fatalf("audit row %v", got)
	}
}
