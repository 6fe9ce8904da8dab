package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
)

func runStdin(t *testing.T, home, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Version: "test",
		Getenv: func(k string) string {
			if k == "HESTIA_HOME" {
				return home
			}
			return ""
		}}
	code := Main(context.Background(), args, env)
	return result{code, out.String(), errb.String()}
}

// TestSetupDrivenByStdin walks `hestia setup` as a user would: a model
// that is not listed (refused, nothing saved), then the right one, mail
// skipped, a calendar folder that does not exist then one that does,
// contacts skipped, file roots, and Telegram left empty.
func TestSetupDrivenByStdin(t *testing.T) {
	t.Parallel()
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":[{"id":"qwen3:4b"}]}`)
	}))
	defer models.Close()
	home, docs := t.TempDir(), t.TempDir()
	cal := filepath.Join(docs, "cal")
	os.Mkdir(cal, 0o700)
	stdin := strings.Join([]string{
		models.URL + "/v1", "", "nosuchmodel", // refused: not in the list
		models.URL + "/v1", "", "qwen3:4b",
		"skip",                                     // mail
		filepath.Join(docs, "missing"), "personal", // calendar: no such folder
		cal, "personal",
		"", // contacts: default skip
		docs + ", " + cal,
		"", // telegram: empty token
	}, "\n") + "\n"
	r := runStdin(t, home, stdin, "setup")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`✗ model: `, `does not list "nosuchmodel"`, "✓ Model saved", "✗ calendar folder: ", "does not exist", "✓ Calendar saved", "✓ Documents and file roots saved", "3 step(s) saved"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	paths, _ := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	cfg, err := config.Load(paths, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.LLM.Tiers["tier-5"]; len(got) != 1 || got[0] != "main/qwen3:4b" {
		t.Errorf("tier-5 = %v", got)
	}
	if len(cfg.Calendar.Sources) != 1 || cfg.Calendar.Sources[0].Path != cal || len(cfg.Agent.FileRoots) != 2 {
		t.Errorf("calendar %+v, file roots %v", cfg.Calendar.Sources, cfg.Agent.FileRoots)
	}
}

func TestSetupBadStep(t *testing.T) {
	t.Parallel()
	r := runStdin(t, t.TempDir(), "", "setup", "--step", "fax")
	if r.code != 2 || !strings.Contains(r.stderr, `--step "fax": one of model, mail`) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// `hestia setup --step mail` with the Microsoft 365 preset and its OAuth
// sign-in: the account is saved untested with the OAuth account it names
// (created from the client id), and the output says which command signs in.
func TestSetupMailOAuth(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	stdin := strings.Join([]string{
		"microsoft365", "me@contoso.example", "", // preset, address, user name
		"oauth", "", "00000000-1111-2222-3333-444444444444", "organizations", // sign-in, account name, client id, tenant
	}, "\n") + "\n"
	r := runStdin(t, home, stdin, "setup", "--step", "mail")
	if r.code != 0 || !strings.Contains(r.stdout, "✓ Mail saved; not tested") || !strings.Contains(r.stdout, "hestia accounts connect me") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	paths, _ := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	cfg, err := config.Load(paths, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	oa, ok := cfg.OAuth.Account("me")
	if !ok || oa.Provider != "microsoft" || oa.Tenant != "organizations" || len(cfg.Mail.Accounts) != 1 {
		t.Fatalf("oauth %+v mail %+v", cfg.OAuth.Accounts, cfg.Mail.Accounts)
	}
	if a := cfg.Mail.Accounts[0]; !a.UsesOAuth() || a.OAuthAccount != "me" || a.SMTPHost != "smtp.office365.com" || a.SMTPSecurity != "starttls" {
		t.Errorf("mail account %+v", a)
	}
}
