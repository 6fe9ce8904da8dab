package app

import (
	"context"
	"fmt"
	"os/user"
	"strconv"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/signal"
	"github.com/hestia-dev/hestia/internal/config"
)

// signalChannel builds [channels.signal]: a client of the signal-cli
// daemon the owner runs for the assistant's number. There is no token:
// the socket's permissions (and the adapter's check of who serves it) are
// the credential.
func (a *App) signalChannel() channelBuilder {
	c := a.Config.Channels.Signal
	return channelBuilder{
		key: "channels.signal", label: "Signal", enabled: c.Enabled(), owners: c.Owners, contacts: c.Contacts,
		build: func(ctx context.Context) (channels.Platform, error) {
			var peers []int
			if c.DaemonUser != "" {
				uid, err := lookupUID(c.DaemonUser)
				if err != nil {
					return nil, fmt.Errorf("channels.signal.daemon_user: %w", err)
				}
				peers = append(peers, uid)
			}
			return signal.New(signal.Config{
				Name: "signal", Account: c.Account, Socket: c.Socket, Address: c.Address, PeerUIDs: peers,
				Identities: signalIdentities(c), AttachmentsDir: c.AttachmentsDir, Clock: a.Now,
			}, a.Log.With("component", "signal"))
		},
	}
}

// signalIdentities are the ids listed in owners and contacts: a sender
// listed by account UUID is then reported by it.
func signalIdentities(c config.SignalChannel) []string {
	out := append([]string(nil), c.Owners...)
	for _, ct := range c.Contacts {
		if id, _, err := config.ParseChannelContact(ct); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// lookupUID resolves a user name or numeric uid.
func lookupUID(name string) (int, error) {
	if uid, err := strconv.Atoi(name); err == nil {
		return uid, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(u.Uid)
}
