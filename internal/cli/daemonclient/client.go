// Package daemonclient talks to the home's running daemon over its HTTP
// API with the home's token: at the TCP address it recorded (Connect), or
// on its Unix socket (Socket, package clisock) for the read-only queries
// that fall back to the stores when no daemon runs.
package daemonclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"syscall"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/lock"
)

// Client talks to the running daemon with the home's token.
type Client struct {
	BaseURL string
	Token   authtoken.Token
	HTTP    *http.Client
}

// Connect returns a client for the running daemon of the home getenv
// names. It dials the address the daemon recorded at listen time, not the
// configured one, and sends the token only after the daemon proved it
// holds it (daemonaddr): another home's daemon or a hostile listener on
// the configured port must never receive this home's token.
//
// It takes no context so every command keeps one call shape; the check is
// bounded by its own timeout.
func Connect(getenv config.Env) (*Client, error) {
	ctx := context.Background()
	paths, err := config.ResolvePaths(getenv)
	if err != nil {
		return nil, err
	}
	tok, err := authtoken.Load(paths.TokenFile())
	if err != nil {
		return nil, fmt.Errorf("the daemon has not been started on this home yet (start it with `hestia serve`): %w", err)
	}
	if held, _ := lock.Held(paths.LockFile()); !held {
		return nil, fmt.Errorf("the daemon is not running on this home (%s); start it with `hestia serve`", paths.Data)
	}
	hc := &http.Client{}
	rec, err := daemonaddr.Connect(ctx, hc, filepath.Join(paths.Data, daemonaddr.FileName), tok)
	switch {
	case errors.Is(err, daemonaddr.ErrNoRecord):
		return nil, fmt.Errorf("the daemon running on this home did not record its address (an older version?); restart it with `hestia serve`")
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("the daemon recorded for this home is not answering (%v); restart it with `hestia serve`", err)
	case err != nil:
		return nil, err
	}
	return &Client{BaseURL: rec.BaseURL(), Token: tok, HTTP: hc}, nil
}

// Socket returns a client for the daemon on the socket of the home at
// paths, without connecting: a request fails with an error wrapping
// clisock.ErrNoDaemon when no daemon listens there, and the caller then
// does the work itself. A home whose daemon never ran (no token) gets
// ErrNoDaemon at once.
func Socket(paths config.Paths) (*Client, error) {
	tok, err := authtoken.Load(paths.TokenFile())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", clisock.ErrNoDaemon, err)
	}
	return socketClient(clisock.Path(paths.Data), tok), nil
}

// socketClient speaks HTTP on the socket at path. The host name is one
// the daemon's DNS-rebinding guard accepts.
func socketClient(path string, tok authtoken.Token) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return clisock.Dial(ctx, path) },
	}
	return &Client{BaseURL: "http://localhost", Token: tok, HTTP: &http.Client{Transport: tr}}
}

// Request builds an authenticated request; body, when non-nil, is sent as
// JSON.
func (c *Client) Request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token.Value())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Do sends a JSON request and decodes a JSON answer into out (when non-nil).
// Error answers become errors carrying the daemon's message.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.Request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if errors.Is(err, clisock.ErrNoDaemon) {
			return err
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("the daemon is not running at %s (start it with `hestia serve`)", c.BaseURL)
		}
		return fmt.Errorf("calling the daemon: %w", err)
	}
	defer resp.Body.Close()
	return DecodeResponse(resp, out)
}

// APIError is an error answer of the daemon's API.
type APIError struct {
	Status        int
	Code, Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Code) }

// DecodeResponse turns an HTTP answer into out or an error.
func DecodeResponse(resp *http.Response, out any) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading daemon answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e httpjson.ErrorBody
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return &APIError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
		}
		return fmt.Errorf("daemon answered %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding daemon answer: %w", err)
	}
	return nil
}
