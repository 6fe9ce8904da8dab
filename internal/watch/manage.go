package watch

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// SourceEvents maps each adapter to the event types its rules may name
// (the UI's watch form offers them).
func (e *Engine) SourceEvents() map[string][]string {
	out := map[string][]string{}
	for n, a := range e.adapters {
		out[n] = append([]string{}, a.EventTypes()...)
	}
	return out
}

// SetPaused pauses an active watch (it is not polled, but still expires)
// or resumes a paused one. Resuming keeps the last snapshot, so a change
// made while paused fires at the next poll rather than being lost. Any
// other state is an error naming it: an ended watch cannot come back.
func (e *Engine) SetPaused(ctx context.Context, id string, paused bool) (Watch, error) {
	w, err := e.Get(ctx, id)
	if err != nil {
		return Watch{}, err
	}
	from, to := StateActive, StatePaused
	if !paused {
		from, to = StatePaused, StateActive
	}
	if w.State == to {
		return w, nil
	}
	if w.State != from {
		verb := "paused"
		if !paused {
			verb = "resumed"
		}
		return Watch{}, fieldErr("state", "watch %s is %s; only a %s watch can be %s", id, w.State, from, verb)
	}
	if _, err := e.db.ExecContext(ctx, `UPDATE watches SET state = ? WHERE id = ? AND state = ?`, to, id, from); err != nil {
		return Watch{}, fmt.Errorf("changing watch %s to %s: %w", id, to, err)
	}
	if !paused {
		e.Kick() // an expiry passed while paused is applied by the pass
	}
	return e.Get(ctx, id)
}

// Delete removes a watch with its events and claims. It waits for a pass
// in progress, so a delivery never runs against a half-deleted watch.
func (e *Engine) Delete(ctx context.Context, id string) error {
	if _, err := e.Get(ctx, id); err != nil {
		return err
	}
	e.poll.Lock()
	defer e.poll.Unlock()
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE watch_id = ?`, id); err != nil {
		return fmt.Errorf("deleting claims of watch %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM event_rules WHERE watch_id = ?`, id); err != nil {
		return fmt.Errorf("deleting events of watch %s: %w", id, err)
	}
	// events go with the watch (ON DELETE CASCADE).
	if _, err := tx.ExecContext(ctx, `DELETE FROM watches WHERE id = ?`, id); err != nil {
		return fmt.Errorf("deleting watch %s: %w", id, err)
	}
	return tx.Commit()
}

func (e *Engine) handleSetPaused(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wt, err := e.SetPaused(r.Context(), r.PathValue("id"), paused)
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field == "state" {
			httpjson.Error(w, http.StatusConflict, "bad_state", fe.Error())
			return
		}
		write(w, r, http.StatusOK, wt, err)
	}
}

func (e *Engine) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := e.Delete(r.Context(), id)
	write(w, r, http.StatusOK, map[string]any{"deleted": id}, err)
}
