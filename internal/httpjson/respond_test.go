package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/store"
)

type fieldErr struct{ field string }

func (e *fieldErr) Error() string    { return e.field + " is required" }
func (e *fieldErr) HTTPStatus() int  { return http.StatusBadRequest }
func (e *fieldErr) HTTPCode() string { return CodeBadRequest }

func TestRespond(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	for _, c := range []struct {
		name   string
		err    error
		status int
		code   string
		shown  string
	}{
		{"ok", nil, 201, "", ""},
		{"field error", fmt.Errorf("creating watch: %w", &fieldErr{"expires_at"}), 400, CodeBadRequest, "expires_at is required"},
		{"invalid", Invalid(errors.New("limit must be 1-100")), 400, CodeBadRequest, "limit must be 1-100"},
		{"not found", fmt.Errorf("watch w1: %w", store.ErrNotFound), 404, CodeNotFound, "watch w1"},
		{"conflict", Conflict("executing", errors.New("item 3 is executing")), 409, "executing", "item 3 is executing"},
		{"internal", errors.New("disk I/O error at /home/me/.local/share/hestia/db/x.db"), 500, CodeInternal, "error "},
		{"internal named", Internal("listing chats failed", errors.New("disk I/O error at /home/me/x.db")), 500, CodeInternal, "listing chats failed (error "},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/api/x", nil)
			r = r.WithContext(WithLogger(r.Context(), log))
			Respond(rec, r, 201, map[string]string{"ok": "yes"}, c.err)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d", rec.Code, c.status)
			}
			if c.err == nil {
				return
			}
			var b ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || b.Error.Code != c.code || !strings.Contains(b.Error.Message, c.shown) {
				t.Fatalf("body %s", rec.Body)
			}
			if c.status == 500 {
				if strings.Contains(rec.Body.String(), "disk I/O") {
					t.Fatal("a server error's details reached the client")
				}
				if !strings.Contains(logs.String(), "disk I/O") || !strings.Contains(logs.String(), "/api/x") {
					t.Fatalf("the server error was not logged: %s", logs.String())
				}
			} else if logs.Len() > 0 {
				t.Fatalf("a client error was logged as a server error: %s", logs.String())
			}
		})
	}
}
