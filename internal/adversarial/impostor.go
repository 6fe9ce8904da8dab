package adversarial

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/server"
)

// CatImpostor covers the CLI's side of the token: whatever answers at the
// recorded daemon address must prove it is this home's daemon before the
// CLI sends the token (package daemonaddr).
const CatImpostor = "send the token to an impostor daemon"

// impostor is a listener that pretends to be the daemon.
type impostor struct {
	name  string
	serve func(real *httptest.Server, tok authtoken.Token) http.HandlerFunc
}

func impostors() []impostor {
	return []impostor{
		{"a plain listener on the port", func(*httptest.Server, authtoken.Token) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"status":"ok","version":"1"}`) }
		}},
		{"another home's daemon", func(*httptest.Server, authtoken.Token) http.HandlerFunc {
			other, _ := authtoken.New()
			return server.New(server.Options{Config: config.Default().Server, Token: other}).Handler().ServeHTTP
		}},
		{"a listener replaying this home's public fingerprint", func(_ *httptest.Server, tok authtoken.Token) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"status":"ok","home":"`+daemonaddr.Fingerprint(tok)+`","proof":"`+strings.Repeat("0", 64)+`"}`)
			}
		}},
		{"a relay to the real daemon", func(real *httptest.Server, _ authtoken.Token) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				resp, err := http.Get(real.URL + r.URL.RequestURI())
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				defer resp.Body.Close()
				io.Copy(w, resp.Body)
			}
		}},
	}
}

// impostorCases point the home's daemon record at each impostor and check
// that connecting fails and the impostor never sees a credential. The real
// daemon (the install's server code, with the sandbox's token) must still be
// reachable the same way.
func impostorCases() []Case {
	var cs []Case
	for _, imp := range impostors() {
		var problems []string
		cs = append(cs, Case{
			Name:     "impostor: " + imp.name + " at the recorded daemon address",
			Category: CatImpostor,
			Setup: func(ctx context.Context, sb *Sandbox) error {
				tok, err := authtoken.FromString(sb.Secrets["auth token"])
				if err != nil {
					return err
				}
				real := httptest.NewServer(server.New(server.Options{Config: config.Default().Server, Token: tok}).Handler())
				defer real.Close()
				var mu sync.Mutex
				var creds []string
				fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					if a := r.Header.Get("Authorization") + r.Header.Get("Cookie"); a != "" {
						creds = append(creds, a)
					}
					mu.Unlock()
					imp.serve(real, tok)(w, r)
				}))
				defer fake.Close()
				rec := filepath.Join(sb.Paths.Data, daemonaddr.FileName)
				if err := daemonaddr.Write(rec, daemonaddr.Record{Addr: strings.TrimPrefix(real.URL, "http://")}); err != nil {
					return err
				}
				if _, err := daemonaddr.Connect(ctx, http.DefaultClient, rec, tok); err != nil {
					problems = append(problems, "the real daemon was refused: "+err.Error())
				}
				if err := daemonaddr.Write(rec, daemonaddr.Record{Addr: strings.TrimPrefix(fake.URL, "http://")}); err != nil {
					return err
				}
				if _, err := daemonaddr.Connect(ctx, http.DefaultClient, rec, tok); !errors.Is(err, daemonaddr.ErrImpostor) {
					problems = append(problems, "the impostor was accepted as this home's daemon")
				}
				mu.Lock()
				defer mu.Unlock()
				if len(creds) > 0 {
					problems = append(problems, "the impostor received credentials")
				}
				return nil
			},
			Check: func(*Sandbox, *Outcome) []string { return problems },
		})
	}
	return cs
}
