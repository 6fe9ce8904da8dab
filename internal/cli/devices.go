package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/server"
)

// deviceJSON is a device as the daemon returns it.
type deviceJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	Managed    string     `json:"managed,omitempty"`
}

func runDevices(ctx context.Context, env *Env, args []string) error {
	const usage = "usage: hestia devices list [--json] | revoke ID [--json]"
	if len(args) == 0 {
		return usagef(usage)
	}
	switch args[0] {
	case "list", "ls":
		fs := env.flags("devices list")
		asJSON := fs.Bool("json", false, "print the devices as JSON")
		if err := parse(fs, args[1:], 0); err != nil {
			return err
		}
		c, err := env.daemon()
		if err != nil {
			return err
		}
		var res struct {
			Devices []deviceJSON `json:"devices"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/devices", nil, &res); err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(env.Stdout).Encode(res)
		}
		if len(res.Devices) == 0 {
			fmt.Fprintln(env.Stdout, "no paired devices (this machine uses the local admin token; pair one with `hestia pair`)")
			return nil
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tKIND\tSCOPES\tLAST SEEN\tSTATE")
		for _, d := range res.Devices {
			seen := "never"
			if d.LastSeenAt != nil {
				seen = d.LastSeenAt.Local().Format("2006-01-02 15:04")
			}
			state := "active"
			if d.Managed != "" {
				state = "allowed in " + d.Managed // Telegram users: config.toml
			}
			if d.RevokedAt != nil {
				state = "revoked " + d.RevokedAt.Local().Format("2006-01-02 15:04")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Name, d.Kind, strings.Join(d.Scopes, ","), seen, state)
		}
		return tw.Flush()
	case "revoke", "rm":
		fs := env.flags("devices revoke")
		asJSON := fs.Bool("json", false, "print the revoked device as JSON")
		if err := parse(fs, reorder(args[1:]), 1); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("usage: hestia devices revoke ID [--json]")
		}
		c, err := env.daemon()
		if err != nil {
			return err
		}
		var res struct {
			Device deviceJSON `json:"device"`
		}
		if err := c.Do(ctx, http.MethodDelete, "/api/devices/"+url.PathEscape(fs.Arg(0)), nil, &res); err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(env.Stdout).Encode(res)
		}
		fmt.Fprintf(env.Stdout, "revoked %s (%s); its token no longer works and its open streams were closed\n", res.Device.ID, res.Device.Name)
		return nil
	}
	return usagef(usage)
}

func runPair(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("pair")
	name := fs.String("name", "", "name of the device being paired (default: \"paired device\" and the date)")
	scopes := fs.String("scopes", "chat,approve,read", "comma-separated scopes of the new device: chat, approve, read, admin")
	noQR := fs.Bool("no-qr", false, "print only the link and the code, no QR code")
	asJSON := fs.Bool("json", false, "print the code, link and expiry as JSON")
	local := fs.Bool("local", false, "show the codes of browsers on this machine waiting to pair, instead of making a code for another device")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *local {
		var other []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "local" && f.Name != "json" {
				other = append(other, "--"+f.Name)
			}
		})
		if len(other) > 0 {
			return usagef("--local shows waiting browsers' codes; %s applies only to pairing another device", strings.Join(other, ", "))
		}
		return runPairLocal(ctx, env, *asJSON)
	}
	list, err := devices.ParseScopes(strings.Split(*scopes, ","))
	if err != nil {
		return usagef("--scopes: %v", err)
	}
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = string(s)
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	var res struct {
		Code      string    `json:"code"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := c.Do(ctx, http.MethodPost, "/api/pair/codes", map[string]any{"name": *name, "scopes": names}, &res); err != nil {
		return err
	}
	link := c.BaseURL + "/pair#code=" + res.Code
	// With remote access on, the link points at the LAN listener and
	// carries its certificate's fingerprint (the phone's browser shows the
	// same one before the user accepts the self-signed certificate).
	base, fp, err := pairRemoteBase(env)
	if err != nil {
		return err
	}
	if base != "" {
		link = base + "/pair#code=" + res.Code + "&fp=" + strings.ReplaceAll(fp, ":", "")
	}
	if *asJSON {
		out := map[string]any{"code": res.Code, "link": link, "expires_at": res.ExpiresAt, "scopes": names}
		if fp != "" {
			out["fingerprint"] = fp
		}
		return json.NewEncoder(env.Stdout).Encode(out)
	}
	fmt.Fprintf(env.Stdout, "Scan the code or open this link on the device to pair it (single use, valid until %s; scopes %s):\n\n  %s\n\n",
		res.ExpiresAt.Local().Format("15:04"), strings.Join(names, ","), link)
	if fp != "" {
		fmt.Fprintf(env.Stdout, "The phone's browser will warn about Hestia's self-signed certificate: accept it only if its SHA-256 fingerprint is\n  %s\n\n", fp)
	} else {
		fmt.Fprintln(env.Stdout, "This link works only on this machine (the daemon listens on loopback); `hestia remote enable` lets a phone on the LAN reach it.")
		fmt.Fprintln(env.Stdout)
	}
	if !*noQR {
		q, err := devices.TerminalQR(link)
		if err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout, q)
	}
	fmt.Fprintf(env.Stdout, "Or enter the code %s on the pairing screen.\n", res.Code)
	return nil
}

// runPairLocal prints the one-time codes of the browsers on this machine
// that asked to pair. Reading them takes the home's token, which is the
// proof the daemon asks of whoever confirms a local browser.
func runPairLocal(ctx context.Context, env *Env, asJSON bool) error {
	c, err := env.daemon()
	if err != nil {
		return err
	}
	var res struct {
		Requests []server.LocalPairCode `json:"requests"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/pair/local/pending", nil, &res); err != nil {
		return err
	}
	if asJSON {
		if res.Requests == nil {
			res.Requests = []server.LocalPairCode{}
		}
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	if len(res.Requests) == 0 {
		fmt.Fprintf(env.Stdout, "No browser on this machine is waiting to pair. Open %s in a browser here; it asks for a code, which the daemon prints and this command shows.\n", c.BaseURL)
		return nil
	}
	fmt.Fprintln(env.Stdout, "Type the code on the page of the browser that asked (each works once, for that page only):")
	for _, r := range res.Requests {
		agent := ""
		if r.UserAgent != "" {
			agent = ", " + r.UserAgent
		}
		fmt.Fprintf(env.Stdout, "  %s  asked at %s from %s%s, valid until %s\n", server.FormatLocalCode(r.Code),
			r.CreatedAt.Local().Format("15:04:05"), r.Origin, agent, r.ExpiresAt.Local().Format("15:04:05"))
	}
	fmt.Fprintln(env.Stdout, "A request you did not make means another program on this machine asked; do not type its code anywhere.")
	return nil
}
