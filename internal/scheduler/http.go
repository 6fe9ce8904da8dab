package scheduler

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/notify"
)

// Routes serves the jobs API.
func (s *Scheduler) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/jobs", s.handleList)
	mux.HandleFunc("POST /api/jobs", s.handleAdd)
	mux.HandleFunc("GET /api/jobs/{name}", s.handleGet)
	mux.HandleFunc("DELETE /api/jobs/{name}", s.handleRemove)
	mux.HandleFunc("POST /api/jobs/{name}/run", s.handleRun)
	mux.HandleFunc("POST /api/jobs/{name}/pause", s.handleEnable(false))
	mux.HandleFunc("POST /api/jobs/{name}/resume", s.handleEnable(true))
	mux.HandleFunc("GET /api/jobs/{name}/runs", s.handleHistory)
	mux.HandleFunc("PUT /api/jobs/{name}/deliver", s.handleDeliver)
	mux.HandleFunc("GET /api/job-runs", s.handleHistory)
}

// JobBody is the wire form of a new user job: one of cron, every (a Go
// duration) or at (RFC 3339), plus the prompt.
type JobBody struct {
	Name    string `json:"name"`
	Cron    string `json:"cron,omitempty"`
	Every   string `json:"every,omitempty"`
	At      string `json:"at,omitempty"`
	Prompt  string `json:"prompt"`
	Timeout string `json:"timeout,omitempty"`
	Jitter  string `json:"jitter,omitempty"`
	// Deliver lists where results go: inbox, push, telegram (or none);
	// empty is inbox and push.
	Deliver []string `json:"deliver,omitempty"`
}

// UserJob converts the body, naming the field of the first bad value.
func (b JobBody) UserJob() (UserJob, error) {
	u := UserJob{Name: b.Name, Prompt: b.Prompt, Schedule: Schedule{Cron: b.Cron}, Deliver: b.Deliver}
	dur := func(field, v string) (Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fieldErr(field, "%q is not a duration such as 90s, 15m or 2h", v)
		}
		return Duration(d), nil
	}
	var err error
	if u.Schedule.Every, err = dur("every", b.Every); err != nil {
		return UserJob{}, err
	}
	if u.Timeout, err = dur("timeout", b.Timeout); err != nil {
		return UserJob{}, err
	}
	if u.Jitter, err = dur("jitter", b.Jitter); err != nil {
		return UserJob{}, err
	}
	if _, err := notify.ParseDeliver(b.Deliver); err != nil {
		return UserJob{}, err
	}
	if b.At != "" {
		if u.Schedule.At, err = time.Parse(time.RFC3339, b.At); err != nil {
			return UserJob{}, fieldErr("at", "%q is not an RFC 3339 time such as 2026-03-09T08:00:00+01:00", b.At)
		}
	}
	return u, nil
}

func (s *Scheduler) handleList(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.List(r.Context())
	writeResult(w, r, http.StatusOK, map[string]any{"jobs": jobs}, err)
}

func (s *Scheduler) handleGet(w http.ResponseWriter, r *http.Request) {
	j, err := s.Get(r.Context(), r.PathValue("name"))
	writeResult(w, r, http.StatusOK, j, err)
}

func (s *Scheduler) handleAdd(w http.ResponseWriter, r *http.Request) {
	var b JobBody
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	u, err := b.UserJob()
	if err == nil {
		var j Job
		j, err = s.Add(r.Context(), u)
		if err == nil {
			j, err = s.Get(r.Context(), j.Name)
		}
		writeResult(w, r, http.StatusCreated, j, err)
		return
	}
	writeResult(w, r, 0, nil, err)
}

func (s *Scheduler) handleRemove(w http.ResponseWriter, r *http.Request) {
	err := s.Remove(r.Context(), r.PathValue("name"))
	writeResult(w, r, http.StatusOK, map[string]any{"removed": r.PathValue("name")}, err)
}

func (s *Scheduler) handleRun(w http.ResponseWriter, r *http.Request) {
	id, err := s.RunNow(r.Context(), r.PathValue("name"))
	writeResult(w, r, http.StatusAccepted, map[string]any{"run_id": id}, err)
}

// handleDeliver sets where a job's results go: {"deliver": [...]}, an
// empty list restoring the default.
func (s *Scheduler) handleDeliver(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Deliver []string `json:"deliver"`
	}
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	j, err := s.SetDeliver(r.Context(), r.PathValue("name"), b.Deliver)
	writeResult(w, r, http.StatusOK, j, err)
}

func (s *Scheduler) handleEnable(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		j, err := s.SetEnabled(r.Context(), r.PathValue("name"), on)
		writeResult(w, r, http.StatusOK, j, err)
	}
}

func (s *Scheduler) handleHistory(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "limit: must be an integer from 1 to 1000")
			return
		}
		limit = n
	}
	runs, err := s.History(r.Context(), r.PathValue("name"), limit)
	writeResult(w, r, http.StatusOK, map[string]any{"runs": runs}, err)
}

func writeResult(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	switch {
	case errors.Is(err, ErrRunning):
		err = httpjson.Conflict("running", err)
	case errors.Is(err, ErrBuiltin):
		httpjson.Error(w, http.StatusForbidden, "builtin", err.Error())
		return
	}
	httpjson.Respond(w, r, status, v, err)
}
