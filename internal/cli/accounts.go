package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth"
)

const accountsUsage = "usage: hestia accounts list [--json] | connect NAME [--device] [--no-browser] [--port N] [--timeout 5m] | disconnect NAME"

// runAccounts is `hestia accounts`: the OAuth accounts of
// [[oauth.accounts]] — sign in (a browser on this machine, or --device for
// one without), show their state, forget them. Tokens are never printed.
func runAccounts(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", accountsUsage)
	}
	switch args[0] {
	case "list", "ls":
		return accountsList(env, args[1:])
	case "connect":
		return accountsConnect(ctx, env, args[1:])
	case "disconnect":
		return accountsDisconnect(ctx, env, args[1:])
	}
	return usagef("unknown accounts command %q\n%s", args[0], accountsUsage)
}

// accountsManager opens the app for its OAuth manager.
func (env *Env) accountsManager() (*oauth.Manager, func(), error) {
	a, err := env.openApp()
	if err != nil {
		return nil, nil, err
	}
	m, err := a.OAuth()
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return m, func() { a.Close() }, nil
}

func accountsList(env *Env, args []string) error {
	fs := env.flags("accounts list")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	m, done, err := env.accountsManager()
	if err != nil {
		return err
	}
	defer done()
	list := []oauth.Status{}
	for _, name := range m.Names() {
		st, err := m.Status(name)
		if err != nil {
			return err
		}
		list = append(list, st)
	}
	if *asJSON {
		return printJSON(env.Stdout, map[string]any{"accounts": list})
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "No OAuth accounts are configured: add [[oauth.accounts]] to config.toml (see docs/oauth.md).")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROVIDER\tSTATUS\tTOKEN EXPIRES\tSCOPES")
	for _, st := range list {
		exp := "-"
		if !st.Expiry.IsZero() {
			exp = st.Expiry.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Account, st.Provider, st.State, exp, strings.Join(st.Scopes, " "))
	}
	tw.Flush()
	for _, st := range list {
		switch st.State {
		case oauth.StateReconnect:
			fmt.Fprintf(env.Stdout, "\n%s: %s\n", st.Account, st.Detail)
		case oauth.StateNotConnected:
			fmt.Fprintf(env.Stdout, "\n%s: not connected yet; run: hestia accounts connect %s\n", st.Account, st.Account)
		}
	}
	return nil
}

func accountsConnect(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("accounts connect")
	device := fs.Bool("device", false, "sign in on another device with a code (for a machine without a browser)")
	noBrowser := fs.Bool("no-browser", false, "print the sign-in URL without opening a browser")
	port := fs.Int("port", 0, "listen for the sign-in redirect on this port (to forward it over SSH: ssh -L PORT:127.0.0.1:PORT)")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the sign-in")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia accounts connect NAME [--device] [--no-browser] [--port N] [--timeout 5m]")
	}
	if *port < 0 || *port > 65535 {
		return usagef("--port: %d is not a port", *port)
	}
	name := fs.Arg(0)
	m, done, err := env.accountsManager()
	if err != nil {
		return err
	}
	defer done()
	acct, err := m.Account(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var st oauth.Status
	if *device {
		st, err = m.ConnectDevice(ctx, name, oauth.DeviceOptions{Show: func(dc oauth.DeviceCode) error {
			fmt.Fprintf(env.Stdout, "To connect %s, open this page on any device with a browser:\n\n  %s\n\nand enter the code:  %s\n\n", name, dc.VerificationURI, dc.UserCode)
			if dc.VerificationURIComplete != "" {
				fmt.Fprintf(env.Stdout, "(or open %s, which fills the code in)\n\n", dc.VerificationURIComplete)
			}
			fmt.Fprintln(env.Stdout, "Waiting for the sign-in…")
			return nil
		}})
	} else {
		st, err = m.ConnectLoopback(ctx, name, oauth.LoopbackOptions{Port: *port, Timeout: *timeout, Open: func(u string) error {
			fmt.Fprintf(env.Stdout, "To connect %s (%s), sign in with your browser at:\n\n  %s\n\n", name, acct.Provider.Name, u)
			if !*noBrowser {
				if err := openBrowser(u); err != nil {
					fmt.Fprintf(env.Stdout, "(could not open a browser: %v; open the address yourself)\n", err)
				}
			}
			fmt.Fprintln(env.Stdout, "Waiting for the sign-in…")
			return nil
		}})
	}
	if err != nil {
		if errors.Is(err, oauth.ErrExpired) && !*device {
			return fmt.Errorf("%w\n(on a machine without a browser, use --device, or --port N with ssh -L N:127.0.0.1:N; see docs/oauth.md)", err)
		}
		return err
	}
	fmt.Fprintf(env.Stdout, "Connected %s (%s). Scopes: %s\n", st.Account, st.Provider, strings.Join(st.Scopes, " "))
	return nil
}

// openBrowser starts the desktop's browser on u without waiting for it.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; xdg-open returns once the browser has it
	return nil
}

func accountsDisconnect(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("accounts disconnect")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia accounts disconnect NAME")
	}
	name := fs.Arg(0)
	m, done, err := env.accountsManager()
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := m.Disconnect(ctx, name)
	if err != nil {
		return err
	}
	switch {
	case res.Revoked:
		fmt.Fprintf(env.Stdout, "Disconnected %s: the provider revoked Hestia's access and the tokens are deleted.\n", name)
	case res.RevokeErr != nil:
		fmt.Fprintf(env.Stdout, "Disconnected %s: the tokens are deleted, but revoking them at the provider failed (%v).\n", name, res.RevokeErr)
	default:
		fmt.Fprintf(env.Stdout, "Disconnected %s: the tokens are deleted. The provider has no revocation endpoint.\n", name)
	}
	if res.ManageURL != "" {
		fmt.Fprintf(env.Stdout, "To remove Hestia's access there too, visit %s\n", res.ManageURL)
	}
	return nil
}
