package server

import "net/http"

// HandlePublic registers a route outside bearer-token auth (still behind
// the host guard, security headers and panic recovery). The handler must
// authenticate its callers itself: the Telegram webhook checks the secret
// token it gave Telegram, in constant time, on every request.
func (s *Server) HandlePublic(pattern string, h http.Handler) { s.root.Handle(pattern, h) }
