package settings

import (
	"errors"
	"net/http"
	"strings"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes serves the Settings page's endpoints.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/settings", s.handleGet)
	mux.HandleFunc("PATCH /api/settings", s.handlePatch)
	mux.HandleFunc("POST /api/settings/test-provider", s.handleTest)
	mux.HandleFunc("GET /api/settings/local-models", s.handleDetect)
	mux.HandleFunc("GET /api/setup", s.handleSetupStatus)
	mux.HandleFunc("POST /api/setup/dismiss", s.handleSetupDismiss)
	mux.HandleFunc("POST /api/setup/{step}/test", s.handleSetupStep)
	mux.HandleFunc("POST /api/setup/{step}", s.handleSetupStep)
}

func (s *Service) handleSetupStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.SetupStatus(r.Context())
	if err != nil {
		httpjson.Error(w, http.StatusInternalServerError, "config_invalid", err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, st)
}

func (s *Service) handleSetupDismiss(w http.ResponseWriter, r *http.Request) {
	if err := s.DismissSetup(r.Context()); err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("recording the dismissal failed", err))
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"dismissed": true})
}

// handleSetupStep tests (…/test) or tests and saves one step. A failed
// connection answers ok=false with the part that failed, so the page can
// show it next to the step's fields.
func (s *Service) handleSetupStep(w http.ResponseWriter, r *http.Request) {
	var in StepInput
	if err := httpjson.Decode(w, r, &in); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	step, save := r.PathValue("step"), !strings.HasSuffix(r.URL.Path, "/test")
	var (
		out map[string]any
		err error
	)
	if save {
		out, err = s.SaveStep(r.Context(), step, in)
	} else {
		out, err = s.TestStep(r.Context(), step, in)
	}
	var se *StepError
	switch {
	case errors.As(err, &se):
		httpjson.Write(w, http.StatusOK, map[string]any{"ok": false, "part": se.Part, "error": se.Error()})
	case errors.Is(err, ErrStepInput):
		httpjson.Error(w, http.StatusBadRequest, "invalid_input", strings.TrimPrefix(err.Error(), ErrStepInput.Error()+": "))
	case errors.Is(err, ErrInvalid):
		httpjson.Error(w, http.StatusBadRequest, "invalid_config", trimInvalid(err))
	case err != nil:
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("saving the setup step failed", err))
	default:
		out["ok"] = true
		httpjson.Write(w, http.StatusOK, out)
	}
}

func (s *Service) handleGet(w http.ResponseWriter, r *http.Request) {
	v, err := s.Get(r.Context())
	if err != nil {
		httpjson.Error(w, http.StatusInternalServerError, "config_invalid", err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, v)
}

func (s *Service) handlePatch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Changes []Change `json:"changes"`
	}
	if err := httpjson.Decode(w, r, &body); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	v, live, err := s.Apply(r.Context(), body.Changes)
	switch {
	case errors.Is(err, ErrInvalid):
		httpjson.Error(w, http.StatusBadRequest, "invalid_config", trimInvalid(err))
	case err != nil:
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("saving the settings failed", err))
	default:
		if live == nil {
			live = []string{}
		}
		httpjson.Write(w, http.StatusOK, map[string]any{"settings": v, "applied_live": live})
	}
}

// trimInvalid drops the ErrInvalid prefix: the rest is the message the CLI
// prints for the same config.
func trimInvalid(err error) string {
	msg := err.Error()
	prefix := ErrInvalid.Error() + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

func (s *Service) handleTest(w http.ResponseWriter, r *http.Request) {
	var body struct {
		// Provider names a configured provider ("default" for the flat
		// llm.base_url); its stored key is used when APIKey is empty.
		Provider string `json:"provider"`
		Kind     string `json:"kind"`
		BaseURL  string `json:"base_url"`
		APIKey   string `json:"api_key"`
	}
	if err := httpjson.Decode(w, r, &body); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	if body.Provider != "" && (body.APIKey == "" || body.APIKey == masked || body.BaseURL == "") {
		data, _, err := s.read()
		if err == nil {
			var cfg config.Config
			if cfg, err = config.Parse(data, s.Env); err == nil {
				kind, base, key := "openai", cfg.LLM.BaseURL, cfg.LLM.APIKey
				if p, ok := cfg.LLM.Providers[body.Provider]; ok {
					kind, base, key = p.Kind, p.BaseURL, p.APIKey
				} else if body.Provider != "default" {
					httpjson.Error(w, http.StatusNotFound, "not_found", "no provider "+body.Provider+" in the configuration")
					return
				}
				if body.BaseURL == "" {
					body.BaseURL, body.Kind = base, kind
				}
				// The stored key goes only to the URL it was stored for.
				if (body.APIKey == "" || body.APIKey == masked) && body.BaseURL == base {
					body.APIKey = key
				}
			}
		}
	}
	if body.APIKey == masked {
		body.APIKey = ""
	}
	models, err := s.Probe.Models(r.Context(), body.Kind, body.BaseURL, body.APIKey)
	if err != nil {
		httpjson.Write(w, http.StatusOK, map[string]any{"ok": false, "error": err.Error(), "models": []string{}})
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"ok": true, "models": models})
}

func (s *Service) handleDetect(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"found": s.Probe.Detect(r.Context()), "looked_at": s.candidates()})
}

func (s *Service) candidates() []Candidate {
	if s.Probe.Candidates != nil {
		return s.Probe.Candidates
	}
	return DefaultCandidates
}
