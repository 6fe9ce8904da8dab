// Command fakeoauth runs the fake authorization server of
// internal/oauth/oauthtest as a process, for the web app's browser tests:
// a daemon under test names it as a provider = "custom" OAuth account and
// the browser clicks through its Allow/Deny consent page.
//
//	fakeoauth [-client-id hestia-test] [-auto]
//
// It prints one JSON line {"url":"http://127.0.0.1:P","client_id":"…",
// "auth_url":"…/authorize","token_url":"…/token","revoke_url":"…/revoke",
// "device_url":"…/device"} and serves until stdin closes or it is killed.
// -auto consents at once instead of showing the consent page. Nothing it
// issues is good anywhere else: the tokens are random and held in memory.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

func main() {
	clientID := flag.String("client-id", "hestia-test", "the one client id the server knows")
	auto := flag.Bool("auto", false, "consent at once instead of showing an Allow/Deny page")
	flag.Parse()
	srv := oauthtest.New(oauthtest.Options{ClientID: *clientID, ConsentPage: !*auto})
	defer srv.Close()
	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{
		"url": srv.URL, "client_id": srv.ClientID(),
		"auth_url": srv.AuthURL(), "token_url": srv.TokenURL(), "revoke_url": srv.RevokeURL(), "device_url": srv.DeviceAuthURL(),
	}); err != nil {
		log.Fatal(err)
	}
	// Exit when the parent goes away (stdin closes) or asks (a signal), so
	// a crashed test run leaves no server behind.
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
}
