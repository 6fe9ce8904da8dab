// Package server is the daemon's HTTP surface: the listener, graceful
// shutdown, the Host-header guard, bearer-token auth in front of every
// /api and /v1 route, /health, and browser pairing. Domain packages register
// their own routes on the authenticated mux returned by API.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// listener, graceful shutdown, Host-header guard (DNS rebinding), bearer auth in front of `/api/`
// and `/v1/`, `/health`, browser pairing (local: a one-time code the daemon prints, bound to the
// browser's request; other devices: `hestia pair` codes limited per client).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/metrics"
)

// Options configure a Server.
type Options struct {
	Config  config.ServerConfig
	Token   authtoken.Token
	Version string
	Logger  *slog.Logger
	// UI serves the web app at /. Nil serves a short text page.
	UI  http.Handler
	Now func() time.Time
	// Auth, when set, authenticates requests besides Token (auth.go).
	Auth Authenticator
	// Routes, when set, records per-route latency (GET /api/system,
	// /api/metrics).
	Routes *metrics.Routes
	// LocalPairCode, when set, shows the user the code of each local
	// pairing request (the daemon prints it on its terminal; see
	// pairlocal.go). It must not write the code where others can read it.
	LocalPairCode func(LocalPairCode)
}

// Server owns the HTTP listener and the route tables.
type Server struct {
	opts    Options
	log     *slog.Logger
	api     *http.ServeMux // behind auth
	root    *http.ServeMux
	pairing *pairing
	local   *localPairing
	started time.Time
	// remoteLn is the [server.remote] listener Listen opened; Serve
	// serves it with TLS beside the main one (remote.go).
	remoteLn net.Listener
}

// New builds a server; register routes on API() before calling Serve.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		api:     http.NewServeMux(),
		root:    http.NewServeMux(),
		pairing: newPairing(opts.Now),
		local:   newLocalPairing(opts.Now),
		started: opts.Now(),
	}
	s.root.HandleFunc("GET /health", s.health)
	s.root.HandleFunc("POST /api/pair/local/start", s.pairLocalStart)
	s.root.HandleFunc("POST /api/pair/local", s.pairLocal)
	s.root.HandleFunc("POST /api/pair/exchange", s.pairExchange)
	s.api.HandleFunc("POST /api/pair/codes", s.pairCreateCode)
	s.api.HandleFunc("GET /api/pair/local/pending", s.pairLocalPending)
	authed := s.authenticate(s.api)
	s.root.Handle("/api/", authed)
	s.root.Handle("/v1/", authed)
	ui := opts.UI
	if ui == nil {
		ui = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "Hestia is running. The web UI is not part of this build; run `make web` and rebuild.")
		})
	}
	s.root.Handle("/", ui)
	// Unknown /api paths would otherwise fall to the mux's text 404; keep
	// the JSON error shape for API clients.
	s.api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Error(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s
}

// API is the authenticated mux; domain packages add their routes here.
func (s *Server) API() *http.ServeMux { return s.api }

// Started is when the server was built, for uptime.
func (s *Server) Started() time.Time { return s.started }

// Handler is the complete handler chain, exposed for tests.
func (s *Server) Handler() http.Handler {
	var h http.Handler = s.root
	if s.opts.Routes != nil {
		h = s.opts.Routes.Middleware(s.routeLabel, h)
	}
	return s.recoverPanics(s.guardHost(s.securityHeaders(h)))
}

// routeLabel is the pattern a request matches, looked up in the same muxes
// that will serve it, so labels are bounded by the registered routes.
func (s *Server) routeLabel(r *http.Request) string {
	_, p := s.root.Handler(r)
	if p == "/api/" || p == "/v1/" {
		_, p = s.api.Handler(r)
	}
	if p == "" {
		p = "unmatched"
	}
	return p
}

// Listen opens the configured address. Separate from Serve so the caller can
// learn the bound port (":0" in tests) and fail fast before starting work.
func (s *Server) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.opts.Config.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", s.opts.Config.Addr, err)
	}
	if r := s.opts.Config.Remote; r.Enabled {
		rl, err := net.Listen("tcp", r.Addr)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("listening for remote devices on %s (server.remote.addr): %w", r.Addr, err)
		}
		s.remoteLn = rl
	}
	return ln, nil
}

// RemoteAddr is the address the remote listener bound, nil when remote
// access is off or Listen has not run.
func (s *Server) RemoteAddr() net.Addr {
	if s.remoteLn == nil {
		return nil
	}
	return s.remoteLn.Addr()
}

// Serve answers requests on ln until ctx is cancelled, then shuts down
// gracefully: new connections are refused and in-flight requests get up to
// the configured shutdown timeout to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	cfg := s.opts.Config
	closeRemote := func() {
		if s.remoteLn != nil {
			s.remoteLn.Close()
		}
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			ln.Close()
			closeRemote()
			return fmt.Errorf("loading TLS certificate %s: %w", cfg.TLSCert, err)
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, hs.TLSConfig)
	}
	servers := []*http.Server{hs}
	listeners := []net.Listener{ln}
	if s.remoteLn != nil {
		rs, err := s.remoteServer(ctx)
		if err != nil {
			ln.Close()
			closeRemote()
			return err
		}
		servers = append(servers, rs)
		listeners = append(listeners, tls.NewListener(s.remoteLn, rs.TLSConfig))
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		// Read before Serve starts: Serve's HTTP/2 set-up writes TLSConfig.
		isTLS := srv.TLSConfig != nil
		go func() { errc <- srv.Serve(listeners[i]) }()
		s.log.Info("listening", "addr", listeners[i].Addr().String(), "tls", isTLS, "remote", i > 0)
	}
	var serveErr error
	pending := len(servers) // results not yet read from errc
	select {
	case err := <-errc:
		serveErr = fmt.Errorf("serving http: %w", err)
		pending--
	case <-ctx.Done():
	}
	s.log.Info("shutting down http server")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout.D())
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			// Long-lived streams (SSE) do not end on their own; close them.
			srv.Close()
			if !errors.Is(err, context.DeadlineExceeded) && serveErr == nil {
				serveErr = fmt.Errorf("shutting down http server: %w", err)
			}
		}
	}
	for range pending {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) && serveErr == nil {
			serveErr = fmt.Errorf("serving http: %w", err)
		}
	}
	return serveErr
}

// health is public. It names the home by a fingerprint of its token and,
// given ?challenge=, proves it holds the token for the address this
// connection reached, so the CLI can check it talks to its own home's
// daemon before sending the token (see package daemonaddr).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	h := daemonaddr.Health{Status: "ok", Version: s.opts.Version, Home: daemonaddr.Fingerprint(s.opts.Token)}
	if c := r.URL.Query().Get("challenge"); c != "" {
		if !daemonaddr.ValidChallenge(c) {
			httpjson.Error(w, http.StatusBadRequest, "bad_challenge", "challenge must be 32 to 128 hexadecimal characters")
			return
		}
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if local == nil {
			httpjson.Error(w, http.StatusInternalServerError, "internal", "no local address for this connection")
			return
		}
		h.Proof = daemonaddr.Proof(s.opts.Token, c, local.String())
	}
	httpjson.Write(w, http.StatusOK, h)
}

// requireToken rejects requests without the right bearer token with one
// uniform 401: no hint whether the header was missing, malformed or wrong.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		const prefix = "Bearer "
		ok := len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) && s.opts.Token.Equal(h[len(prefix):])
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hestia"`)
			httpjson.Error(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardHost defends the loopback listener against DNS rebinding: a page on
// evil.example resolving to 127.0.0.1 sends Host: evil.example, which we
// refuse. With [server.remote] enabled its hosts are accepted too, and
// nothing else. A main bind opened to all names (allow_remote, TLS)
// accepts any Host.
func (s *Server) guardHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Config.AllowRemote && !loopbackHost(r.Host) && !s.opts.Config.Remote.AllowsHost(hostOnly(r.Host)) {
			msg := "requests must address the daemon by a loopback name such as 127.0.0.1 or localhost"
			if s.opts.Config.Remote.Enabled {
				msg += " or one of server.remote.hosts (" + strings.Join(s.opts.Config.Remote.Hosts, ", ") + ")"
			}
			httpjson.Error(w, http.StatusForbidden, "forbidden_host", msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	return config.IsLoopbackHost(hostOnly(hostport))
}

// hostOnly is the lowercased host of a Host header, without port,
// brackets or a trailing dot.
func hostOnly(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

func (s *Server) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				httpjson.Error(w, http.StatusInternalServerError, "internal", "internal error")
			}
		}()
		// Handlers answer through httpjson.Respond, which logs server
		// errors here rather than sending them to the client.
		next.ServeHTTP(w, r.WithContext(httpjson.WithLogger(r.Context(), s.log)))
	})
}
