package contacttools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/tools"
)

func TestTools(t *testing.T) {
	ctx := context.Background()
	st, err := contacts.Open(ctx, filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.vcf"), []byte("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Marco Rossi\r\nEMAIL:marco@acme.example\r\nEND:VCARD\r\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.vcf"), []byte("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Marco Verdi\r\nEMAIL:mv@example.net\r\nEND:VCARD\r\n"), 0o644)
	if _, err := st.Sync(ctx, contacts.Source{Name: "book", Path: dir}); err != nil {
		t.Fatal(err)
	}
	d := Deps{Store: st, Now: time.Now}
	byName := map[string]tools.Tool{}
	for _, tl := range Tools(d) {
		s := tl.Spec()
		if !s.ReadOnly || !s.UntrustedOutput || s.Egress || s.Risk != tools.RiskLow {
			t.Errorf("%s spec %+v", s.Name, s)
		}
		byName[s.Name] = tl
	}
	call := func(name, args string) tools.Result {
		tl := byName[name]
		m, canon, err := tools.DecodeArgs(name, args, tl.Spec().Schema)
		if err == nil {
			err = tools.Validate(tl.Spec().Schema, m)
		}
		if err != nil {
			return tools.Result{Content: err.Error(), IsError: true}
		}
		res, err := tl.Run(ctx, tools.Call{Args: canon})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call("resolve_recipient", `{"name":"Marco"}`)
	var r contacts.Resolution
	if res.IsError || json.Unmarshal([]byte(res.Content), &r) != nil || r.Status != contacts.Ambiguous || len(r.Candidates) != 2 {
		t.Fatalf("resolve: %+v", res)
	}
	if res := call("resolve_recipient", `{"name":"Marco Verdi"}`); !strings.Contains(res.Content, `"status":"unique"`) {
		t.Fatalf("unique: %+v", res)
	}
	if res := call("contacts_search", `{"query":"verdi"}`); res.IsError || !strings.Contains(res.Content, "mv@example.net") {
		t.Fatalf("search: %+v", res)
	}
	for name, args := range map[string]string{"resolve_recipient": `{"name":""}`, "contacts_search": `{"query":"   "}`} {
		if res := call(name, args); !res.IsError {
			t.Errorf("%s %s accepted: %+v", name, args, res)
		}
	}
}
