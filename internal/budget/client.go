package budget

import (
	"context"

	"github.com/hestia-dev/hestia/internal/llm"
)

// Client wraps an llm.Client so that every call is checked against the
// budget first. Wrap the router once in the wiring and hand the wrapper to
// every caller (agent, services, gateway); then no call path can skip it.
type Client struct {
	Inner llm.Client
	Guard *Guard
}

var _ llm.Client = (*Client)(nil)

// Stream implements llm.Client.
func (c *Client) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	if err := c.Guard.Check(ctx, Call{Service: req.Service, Action: req.Action}); err != nil {
		return llm.Response{Tier: req.Tier}, err
	}
	resp, err := c.Inner.Stream(ctx, req, fn)
	c.Guard.Observe(context.WithoutCancel(ctx))
	return resp, err
}

// Complete implements llm.Client.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := c.Guard.Check(ctx, Call{Service: req.Service, Action: req.Action}); err != nil {
		return llm.Response{Tier: req.Tier}, err
	}
	resp, err := c.Inner.Complete(ctx, req)
	c.Guard.Observe(context.WithoutCancel(ctx))
	return resp, err
}

// Embedder wraps an llm.Embedder the same way, except for the local-embed
// tier: the built-in local embedder costs nothing and must keep working
// when a cap is reached (local search degrades gracefully, it does not
// stop). A local-embed tier configured to a remote target is still not
// checked; caps on it would stop indexing, not spending.
type Embedder struct {
	Inner llm.Embedder
	Guard *Guard
}

var _ llm.Embedder = (*Embedder)(nil)

// Embed implements llm.Embedder.
func (e *Embedder) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResponse, error) {
	if req.Tier == llm.LocalEmbed || req.Tier == "" {
		return e.Inner.Embed(ctx, req)
	}
	if err := e.Guard.Check(ctx, Call{Service: req.Service, Action: req.Action}); err != nil {
		return llm.EmbedResponse{}, err
	}
	resp, err := e.Inner.Embed(ctx, req)
	e.Guard.Observe(context.WithoutCancel(ctx))
	return resp, err
}
