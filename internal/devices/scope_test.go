package devices

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/server"
)

func TestRequire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		ctx  context.Context
		want string // "" for allowed
	}{
		{"no identity", ctx, "no device identity"},
		{"chat only", WithIdentity(ctx, Identity{DeviceID: "d_1", Name: "phone", Scopes: []Scope{Chat, Read}}), `device "phone" lacks the approve scope to grant x`},
		{"no scopes", WithIdentity(ctx, Identity{DeviceID: "d_2", Name: "tablet"}), "lacks the approve scope"},
		{"approve", WithIdentity(ctx, Identity{DeviceID: "d_3", Name: "laptop", Scopes: []Scope{Approve}}), ""},
		{"admin", WithIdentity(ctx, Identity{Name: "local", Scopes: []Scope{Admin}}), ""},
	}
	for _, c := range cases {
		err := Require(c.ctx, Approve, "grant x")
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var se *ScopeError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &se) || !errors.Is(err, server.ErrForbidden) {
			t.Errorf("%s: %v, want a forbidden ScopeError containing %q", c.name, err, c.want)
		}
	}
}
