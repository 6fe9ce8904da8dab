package oauth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func seeds(f *testing.F, glob string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", glob))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseTokenResponse: any answer of a token endpoint parses without
// panicking, and a success always carries an access token and a sane
// expiry, while an error never quotes the access or refresh token.
func FuzzParseTokenResponse(f *testing.F) {
	seeds(f, "token-*.json")
	f.Add([]byte(`access_token=a&expires_in=1e9`))
	f.Add([]byte(`{"access_token":"a","expires_in":99999999999999999999}`))
	f.Add([]byte(`{"error":"x","error_description":"\u0000\n`))
	now := time.Unix(1_000_000, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, ct := range []string{"application/json", "application/x-www-form-urlencoded"} {
			for _, status := range []int{200, 400} {
				r, err := parseTokenResponse(status, ct, body, now, "client-secret")
				if err == nil {
					if r.Access.AccessToken == "" || (!r.Access.Expiry.IsZero() && r.Access.Expiry.Before(now)) {
						t.Fatalf("bad success %+v", r)
					}
					continue
				}
				if strings.Contains(err.Error(), "client-secret") {
					t.Fatalf("error quotes the secret: %v", err)
				}
			}
		}
	})
}

// FuzzDecodeGrant: any token file decodes or fails without panicking, and
// a failure never quotes the file.
func FuzzDecodeGrant(f *testing.F) {
	seeds(f, "grant*.json")
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"account":"a","client_id":"c","refresh_token":"r"}garbage`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := decodeGrant(data)
		if err != nil {
			if len(data) >= 12 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("error quotes the file: %v", err)
			}
			return
		}
		if g.RefreshToken == "" || g.Account == "" || g.Access == nil {
			t.Fatalf("accepted an incomplete grant: %v", g)
		}
	})
}
