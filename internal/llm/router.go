package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// DefaultTimeout is the old single deadline, now DefaultTurnTimeout.
//
// Deprecated: use Timeouts.
const DefaultTimeout = DefaultTurnTimeout

// DefaultEmbedBatch is how many inputs go to a remote embedder per call.
const DefaultEmbedBatch = 32

// CallRecord is the one terminal row the router reports per request.
// Fallback attempts are not separate rows: Attempts counts them.
type CallRecord struct {
	Start    time.Time
	Service  string // "unknown" when the caller gave none
	Action   string
	Kind     string // "chat" or "embed"
	Stream   bool
	Tier     Tier
	Provider string // the target that answered (or failed last)
	Model    string
	Usage    Usage
	Duration time.Duration
	// Outcome is "ok", "canceled" or the error Code.
	Outcome  string
	Attempts int
}

// Recorder receives one CallRecord per terminal request (the usage ledger
// implements it). It must not block for long; it gets a context that is
// not cancelled with the request.
type Recorder interface {
	RecordCall(ctx context.Context, rec CallRecord)
}

// RouterConfig configures a Router.
type RouterConfig struct {
	// Tiers maps each tier to its ordered targets. An unmapped LocalEmbed
	// uses the built-in LocalEmbedder.
	Tiers map[Tier][]Target
	// Timeouts are the per-call budgets (zero fields take the defaults).
	Timeouts Timeouts
	// Timeout, when set and Timeouts.Turn is not, is the whole-call
	// budget (the old single deadline).
	Timeout time.Duration
	// ContextWindow, when > 0, is every target's window (llm.context_window)
	// instead of what discovery finds.
	ContextWindow int
	EmbedBatch    int          // 0 means DefaultEmbedBatch
	HTTPClient    *http.Client // nil means NewHTTPClient()
	Recorder      Recorder     // nil records nothing
	Logger        *slog.Logger // nil discards
	Now           func() time.Time
}

// Router implements Client and Embedder over capability tiers, falling back
// across each tier's targets:
//
//   - Complete and Embed try the next target when one fails with a
//     retryable error (anything but bad_request).
//   - Stream does the same only while nothing has reached the caller's
//     callback; after the first event a failure ends the request, so
//     visible output never switches provider midway.
//   - Timeouts bound each call: connect, first token (longer on local
//     endpoints), silence between chunks, and the whole call across its
//     attempts; each failure names its setting.
//   - On local endpoints, background calls wait for foreground ones
//     (gate.go).
//   - Streams are watched for tool calls written as text (recover.go) and
//     for runaway repetition (repeat.go).
type Router struct {
	mu            sync.RWMutex // guards tiers (chat tiers can be replaced live)
	tiers         map[Tier][]backend
	hc            *http.Client
	to            Timeouts
	contextWindow int
	batch         int
	rec           Recorder
	log           *slog.Logger
	now           func() time.Time
	gate          *priorityGate
	win           windowCache
}

// NewRouter builds a router; repeated targets within a tier collapse.
func NewRouter(cfg RouterConfig) (*Router, error) {
	r := &Router{tiers: map[Tier][]backend{}, to: cfg.Timeouts, contextWindow: cfg.ContextWindow, batch: cfg.EmbedBatch, rec: cfg.Recorder, log: cfg.Logger, now: cfg.Now, gate: newPriorityGate()}
	if r.to.Turn <= 0 {
		r.to.Turn = cfg.Timeout
	}
	r.to = r.to.withDefaults()
	if r.batch <= 0 {
		r.batch = DefaultEmbedBatch
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.hc = cfg.HTTPClient
	if r.hc == nil {
		r.hc = newHTTPClient(r.to.Connect)
	}
	tiers, err := r.build(cfg.Tiers)
	if err != nil {
		return nil, err
	}
	r.tiers = tiers
	if len(r.tiers[LocalEmbed]) == 0 {
		r.tiers[LocalEmbed] = []backend{NewLocalEmbedder()}
	}
	return r, nil
}

// build turns tier targets into backends; repeated targets within a tier
// collapse.
func (r *Router) build(in map[Tier][]Target) (map[Tier][]backend, error) {
	out := map[Tier][]backend{}
	for tier, targets := range in {
		if !ValidTier(tier) {
			return nil, fmt.Errorf("unknown tier %q (want tier-1 … tier-6 or local-embed)", tier)
		}
		seen := map[string]bool{}
		for _, t := range targets {
			switch t.Kind {
			case KindOpenAI, KindAnthropic, KindLocal:
			default:
				return nil, fmt.Errorf("tier %s: target %s has unknown kind %q (want openai, anthropic or local)", tier, t.Provider, t.Kind)
			}
			if t.Kind == KindLocal && tier != LocalEmbed {
				return nil, fmt.Errorf("tier %s: the local embedder can only serve local-embed", tier)
			}
			if seen[t.key()] {
				continue
			}
			seen[t.key()] = true
			out[tier] = append(out[tier], newBackend(t, r.hc))
		}
	}
	return out, nil
}

// SetChatTiers replaces the chat tiers (tier-1 … tier-6) of the running
// router with tiers' (Settings applies saved endpoints without a restart).
// local-embed is kept: stored vectors depend on its model. Requests already
// running finish on the backends they started with.
func (r *Router) SetChatTiers(tiers map[Tier][]Target) error {
	chat := map[Tier][]Target{}
	for _, t := range ChatTiers() {
		if len(tiers[t]) > 0 {
			chat[t] = tiers[t]
		}
	}
	built, err := r.build(chat)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	built[LocalEmbed] = r.tiers[LocalEmbed]
	r.tiers = built
	return nil
}

// ValidTier reports whether t is one of the known tiers.
func ValidTier(t Tier) bool {
	switch t {
	case Tier1, Tier2, Tier3, Tier4, Tier5, Tier6, LocalEmbed:
		return true
	}
	return false
}

// TierInfo describes a tier's targets for listings (GET /v1/models, doctor).
type TierInfo struct {
	Tier    Tier
	Targets []Target // APIKey cleared
}

// Tiers lists the configured tiers in order, chat tiers first.
func (r *Router) Tiers() []TierInfo {
	var out []TierInfo
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, t := range append(ChatTiers(), LocalEmbed) {
		bs := r.tiers[t]
		if len(bs) == 0 {
			continue
		}
		info := TierInfo{Tier: t}
		for _, b := range bs {
			tg := b.target()
			tg.APIKey = ""
			info.Targets = append(info.Targets, tg)
		}
		out = append(out, info)
	}
	return out
}

func (r *Router) backends(tier Tier) ([]backend, error) {
	if !ValidTier(tier) {
		return nil, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("Unknown tier %q; use tier-1 to tier-6 or local-embed.", tier)}
	}
	r.mu.RLock()
	bs := r.tiers[tier]
	r.mu.RUnlock()
	if len(bs) == 0 {
		return nil, &Error{Code: CodeModelUnavailable, Message: fmt.Sprintf("No model is configured for %s; set HESTIA_LLM_BASE_URL and HESTIA_LLM_MODEL or map the tier in [llm.tiers].", tier)}
	}
	return bs, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Stream implements Client.
func (r *Router) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	return r.chat(ctx, req, fn)
}

// Complete implements Client.
func (r *Router) Complete(ctx context.Context, req Request) (Response, error) {
	return r.chat(ctx, req, nil)
}

func (r *Router) chat(parent context.Context, req Request, fn func(Event) error) (Response, error) {
	start := r.now()
	rec := CallRecord{Start: start, Service: orUnknown(req.Service), Action: orUnknown(req.Action), Kind: "chat", Stream: fn != nil, Tier: req.Tier}
	bs, err := r.backends(req.Tier)
	if err != nil {
		rec.Outcome = string(CodeOf(err))
		r.record(parent, rec)
		return Response{Tier: req.Tier}, err
	}
	local := IsLocal(bs[0].target().BaseURL)
	for {
		ctx := parent
		release := func() {}
		switch {
		case local && req.Background():
			ctx, release, err = r.gate.background(parent)
			if err != nil {
				rec.Outcome, rec.Duration = "canceled", r.now().Sub(start)
				r.record(parent, rec)
				return Response{Tier: req.Tier}, err
			}
		case local:
			release = r.gate.foreground()
		}
		resp, err, delivered := r.attempts(ctx, parent, req, bs, fn, &rec)
		release()
		if err != nil && parent.Err() == nil && !delivered && errors.Is(context.Cause(ctx), errPreempted) {
			r.log.Info("background model call paused for a foreground call", "service", req.Service, "action", req.Action)
			continue
		}
		rec.Duration = r.now().Sub(start)
		switch {
		case err == nil:
			resp.Duration = rec.Duration
			rec.Outcome = "ok"
		case rec.Outcome == "":
			rec.Outcome = string(CodeOf(err))
		}
		r.record(parent, rec)
		return resp, err
	}
}

// attempts runs req on the tier's targets in order until one answers.
// gctx is parent, or the priority gate's context of a background call.
func (r *Router) attempts(gctx, parent context.Context, req Request, bs []backend, fn func(Event) error, rec *CallRecord) (Response, error, bool) {
	ctx, cancel := context.WithTimeout(gctx, r.to.Turn)
	defer cancel()
	var (
		resp      Response
		err       error
		delivered bool // an event reached fn: no more fallback
	)
	for i, b := range bs {
		t := b.target()
		areq := req
		if areq.MaxTokens == 0 {
			areq.MaxTokens = t.MaxTokens
		}
		if areq.MaxTokens == 0 {
			areq.MaxTokens = DefaultMaxTokens(req.Service, req.Action)
		}
		w := r.window(ctx, t)
		if w.Server == "ollama" && w.Tokens > 0 {
			areq.numCtx = w.Tokens
		}
		prompt := EstimateTokens(areq)
		s := &streamState{fn: fn, filter: newCallFilter(req.Tools)}
		if fn != nil {
			tLocal := IsLocal(t.BaseURL)
			actx, wd := startWatchdog(ctx, r.to, tLocal, prompt)
			s.wd = wd
			first := r.to.FirstToken
			if tLocal {
				first = r.to.LocalFirstToken
			}
			if werr := fn(Event{Kind: EventWaiting, Waiting: &Waiting{PromptTokens: prompt, Local: tLocal, Provider: t.Provider, Model: t.Model, FirstTokenTimeout: first}}); werr != nil {
				wd.stop()
				rec.Outcome = "canceled"
				return resp, werr, false
			}
			resp, err = b.Stream(actx, areq, s.handle)
			resp, err = s.finish(resp, err)
			wd.stop()
			if err != nil && s.fnErr == nil && ctx.Err() == nil {
				if we := wd.err(); we != nil {
					e := *we
					e.Provider, e.Model, e.Partial = t.Provider, t.Model, s.delivered
					err = &e
				}
			}
		} else {
			resp, err = b.Complete(ctx, areq)
			if err == nil {
				recoverComplete(&resp, s.filter)
			}
		}
		delivered = delivered || s.delivered
		resp.Provider, resp.Model, resp.Tier, resp.Attempts = t.Provider, t.Model, req.Tier, i+1
		rec.Provider, rec.Model, rec.Attempts, rec.Usage = t.Provider, t.Model, i+1, rec.Usage.Add(resp.Usage)
		if err == nil {
			return resp, nil, delivered
		}
		if s.fnErr != nil || parent.Err() != nil {
			// The caller stopped; nothing failed on the provider side.
			rec.Outcome = "canceled"
			if s.fnErr != nil {
				return resp, s.fnErr, delivered
			}
			return resp, err, delivered
		}
		if gctx.Err() != nil {
			return resp, err, delivered // preempted by the priority gate
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = &Error{Code: CodeTimeout, Message: fmt.Sprintf("The model call did not finish within %s (%s).", r.to.Turn, keyTurn),
				Provider: t.Provider, Model: t.Model, Partial: delivered, Err: err}
		}
		code := CodeOf(err)
		var le *Error
		if errors.As(err, &le) {
			le.Partial = le.Partial || delivered
			if code == CodeContextTooLarge {
				contextError(le, w, prompt)
			}
			r.log.Warn("model attempt failed", "tier", req.Tier, "provider", t.Provider, "model", t.Model,
				"attempt", i+1, "code", code, "status", le.Status, "body", le.Body, "err", le.Err)
		}
		if delivered || !code.retryable() || ctx.Err() != nil || i == len(bs)-1 {
			return resp, err, delivered
		}
	}
	return resp, err, delivered
}

func (r *Router) record(ctx context.Context, rec CallRecord) {
	if r.rec != nil {
		r.rec.RecordCall(context.WithoutCancel(ctx), rec)
	}
}

// Embed implements Embedder. Inputs go to the tier's first target in
// batches; a batch that fails is retried item by item, so one bad input
// cannot block the rest. Embeddings do not fall back to another target:
// vectors from different models are not comparable, and an index must not
// mix them. Items that still fail have a nil vector and their error in
// EmbedResponse.Errors; Embed returns an error itself only when no input
// could be embedded.
func (r *Router) Embed(parent context.Context, req EmbedRequest) (EmbedResponse, error) {
	if req.Tier == "" {
		req.Tier = LocalEmbed
	}
	start := r.now()
	rec := CallRecord{Start: start, Service: orUnknown(req.Service), Action: orUnknown(req.Action), Kind: "embed", Tier: req.Tier, Attempts: 1}
	bs, err := r.backends(req.Tier)
	if err != nil {
		rec.Outcome = string(CodeOf(err))
		r.record(parent, rec)
		return EmbedResponse{}, err
	}
	ctx, cancel := context.WithTimeout(parent, r.to.Turn)
	defer cancel()
	b := bs[0]
	t := b.target()
	rec.Provider, rec.Model = t.Provider, t.Model
	out := EmbedResponse{Provider: t.Provider, Model: t.Model, Vectors: make([][]float32, len(req.Inputs))}
	var errs []error
	failed := 0
	setErr := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(req.Inputs))
		}
		errs[i] = err
		failed++
	}
	for lo := 0; lo < len(req.Inputs); lo += r.batch {
		hi := min(lo+r.batch, len(req.Inputs))
		res, err := b.Embed(ctx, EmbedRequest{Tier: req.Tier, Inputs: req.Inputs[lo:hi]})
		if err == nil && r.acceptDim(&out, res) == nil {
			copy(out.Vectors[lo:hi], res.Vectors)
			out.Usage = out.Usage.Add(res.Usage)
			continue
		}
		if ctx.Err() != nil {
			for i := lo; i < len(req.Inputs); i++ {
				setErr(i, classifyTransport(ctx, ctx.Err()))
			}
			break
		}
		r.log.Warn("embedding batch failed; retrying item by item", "tier", req.Tier, "provider", t.Provider, "size", hi-lo, "code", CodeOf(err))
		for i := lo; i < hi; i++ {
			res, err := b.Embed(ctx, EmbedRequest{Tier: req.Tier, Inputs: req.Inputs[i : i+1]})
			if err == nil {
				err = r.acceptDim(&out, res)
			}
			if err != nil {
				setErr(i, err)
				continue
			}
			out.Vectors[i] = res.Vectors[0]
			out.Usage = out.Usage.Add(res.Usage)
		}
	}
	out.Errors = errs
	rec.Usage, rec.Duration = out.Usage, r.now().Sub(start)
	rec.Outcome = "ok"
	if failed > 0 {
		rec.Outcome = string(CodeOf(firstErr(errs)))
	}
	r.record(parent, rec)
	if failed > 0 && failed == len(req.Inputs) {
		return out, firstErr(errs)
	}
	return out, nil
}

// acceptDim checks res against the dimension established so far.
func (r *Router) acceptDim(out *EmbedResponse, res EmbedResponse) error {
	if len(res.Vectors) == 0 {
		return nil
	}
	d := len(res.Vectors[0])
	if out.Dimension == 0 {
		out.Dimension = d
		return nil
	}
	if d != out.Dimension {
		return malformed(fmt.Errorf("embedding dimension changed from %d to %d", out.Dimension, d))
	}
	return nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
