package matrix_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/matrix"
	"github.com/hestia-dev/hestia/internal/channels/matrix/matrixtest"
)

var _ channels.Checker = (*matrix.Adapter)(nil)

// The connection test asks whoami each time, so a token revoked after a
// good check fails the next one, naming the setting but not the token.
func TestCheck(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	a := newAdapter(t, srv, opts{})
	who, err := a.Check(context.Background())
	if err != nil || who != matrixtest.Bot {
		t.Fatalf("Check = %q, %v", who, err)
	}
	srv.RevokeToken()
	_, err = a.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "M_UNKNOWN_TOKEN") || !strings.Contains(err.Error(), "channels.matrix.token") || strings.Contains(err.Error(), matrixtest.Token) {
		t.Errorf("revoked token: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	gone, err := matrix.New(matrix.Config{Homeserver: dead, Token: matrixtest.Token}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "channels.matrix.homeserver") {
		t.Errorf("unreachable: %v", err)
	}
}
