package actions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/taint"
)

// Step states while executing.
const (
	StepPending  = "pending"
	StepRunning  = "running"
	StepAwaiting = "awaiting_approval"
	StepDone     = "done"
	StepDenied   = "denied"
	StepFailed   = "failed"
	StepUnknown  = "unknown" // it was running when the daemon stopped: maybe done
)

// ErrExecuting is returned when an item is already being executed.
var ErrExecuting = errors.New("action is already being executed")

type runner struct {
	mu   sync.Mutex // guards busy
	busy map[int64]bool
	wg   sync.WaitGroup
	// life ends when the daemon's worker stops (or the center closes);
	// executions run under it, not under the HTTP request that started them.
	life context.Context
	stop context.CancelFunc
}

// Execute starts running an item's tool steps in order, in the background.
// Each goes through RunStep (the normal policy); a step that needs approval
// waits for the user however long it takes.
func (c *Center) Execute(ctx context.Context, id int64) (Item, error) {
	it, err := c.Get(ctx, id)
	if err != nil {
		return Item{}, err
	}
	if it.State == StateDone || it.State == StateDismissed {
		return Item{}, fmt.Errorf("%w: action %d is %s", ErrBadTransition, id, it.State)
	}
	if c.opts.RunStep == nil {
		return Item{}, errors.New("executing actions needs the daemon")
	}
	if !c.start(id) {
		return Item{}, fmt.Errorf("action %d: %w", id, ErrExecuting)
	}
	if it.State == StateNew {
		c.db.ExecContext(ctx, `UPDATE items SET state = 'read', updated_at = ? WHERE id = ?`, ms(c.now()), id)
	}
	go c.runSteps(id)
	return c.Get(ctx, id)
}

func (c *Center) start(id int64) bool {
	c.run.mu.Lock()
	defer c.run.mu.Unlock()
	if c.run.busy == nil {
		c.run.busy = map[int64]bool{}
	}
	if c.run.busy[id] {
		return false
	}
	c.run.busy[id] = true
	c.run.wg.Add(1)
	return true
}

func (c *Center) baseCtx() context.Context { return c.run.life }

// finish releases an item taken by start.
func (c *Center) finish(id int64) {
	c.run.mu.Lock()
	delete(c.run.busy, id)
	c.run.mu.Unlock()
	c.run.wg.Done()
}

func (c *Center) runSteps(id int64) {
	defer c.finish(id)
	ctx := c.baseCtx()
	it, err := c.Get(ctx, id)
	if err != nil {
		return
	}
	allDone := true
	for i, s := range it.Steps {
		if s.Manual || s.Tool == "" {
			allDone = false
			continue
		}
		if s.State != StepPending && s.State != StepAwaiting && s.State != "" {
			allDone = allDone && s.State == StepDone
			continue
		}
		if err := c.setStep(ctx, id, i, StepRunning, ""); err != nil {
			c.log.Warn("actionStep", "item", id, "err", err)
			return
		}
		state, result := c.opts.RunStep(ctx, it, i, s, func() {
			if err := c.setStep(ctx, id, i, StepAwaiting, ""); err != nil {
				c.log.Warn("actionStep", "item", id, "err", err)
			}
		})
		if ctx.Err() != nil {
			// Shutting down: a step that was waiting is asked again at the
			// next start; one that was running may have run.
			return
		}
		if err := c.setStep(ctx, id, i, state, snippet(result, 1000)); err != nil {
			c.log.Warn("actionStep", "item", id, "err", err)
			return
		}
		if state != StepDone {
			// Later steps build on this one: stop at the first failure.
			return
		}
	}
	if allDone {
		c.db.ExecContext(ctx, `UPDATE items SET state = 'done', updated_at = ? WHERE id = ? AND state IN ('new','read')`, ms(c.now()), id)
	}
}

func (c *Center) setStep(ctx context.Context, id int64, idx int, state, result string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return c.db.Tx(ctx, func(tx *sql.Tx) error {
		var raw string
		if err := tx.QueryRowContext(ctx, `SELECT steps FROM items WHERE id = ?`, id).Scan(&raw); err != nil {
			return err
		}
		var steps []Step
		if err := json.Unmarshal([]byte(raw), &steps); err != nil || idx >= len(steps) {
			return fmt.Errorf("action %d has no step %d", id, idx)
		}
		steps[idx].State, steps[idx].Result = state, result
		b, _ := json.Marshal(steps)
		_, err := tx.ExecContext(ctx, `UPDATE items SET steps = ?, updated_at = ? WHERE id = ?`, string(b), ms(c.now()), id)
		return err
	})
}

// Resume is called when the daemon starts: steps that were waiting for
// approval are asked again (the tool never ran); steps caught running are
// marked unknown and never retried blindly.
func (c *Center) Resume(ctx context.Context) error {
	rows, err := c.db.QueryContext(ctx, `SELECT id, steps FROM items WHERE state IN ('new','read')`)
	if err != nil {
		return err
	}
	type pend struct {
		id      int64
		running []int
		waiting bool
	}
	var ps []pend
	for rows.Next() {
		var p pend
		var raw string
		if err := rows.Scan(&p.id, &raw); err != nil {
			rows.Close()
			return err
		}
		var steps []Step
		json.Unmarshal([]byte(raw), &steps)
		for i, s := range steps {
			switch s.State {
			case StepRunning:
				p.running = append(p.running, i)
			case StepAwaiting:
				p.waiting = true
			}
		}
		if p.waiting || len(p.running) > 0 {
			ps = append(ps, p)
		}
	}
	rows.Close()
	for _, p := range ps {
		// An item already executing in this process (the user pressed
		// Execute before this pass got to it) is live, not left over.
		if !c.start(p.id) {
			continue
		}
		for _, i := range p.running {
			if err := c.setStep(ctx, p.id, i, StepUnknown, "the daemon stopped while this step ran; check before repeating it"); err != nil {
				c.finish(p.id)
				return err
			}
		}
		if p.waiting && c.opts.RunStep != nil {
			go c.runSteps(p.id)
		} else {
			c.finish(p.id)
		}
	}
	return nil
}

// Interval between scans of new mail.
const scanEvery = 5 * time.Minute

// Run is the daemon worker: resume waiting executions, then scan new mail
// every few minutes (Kick scans now).
func (c *Center) Run(ctx context.Context) error {
	defer c.run.wg.Wait()
	stop := context.AfterFunc(ctx, c.run.stop)
	defer stop()
	if err := c.Resume(ctx); err != nil && ctx.Err() == nil {
		c.log.Warn("actionResume", "err", err)
	}
	if c.opts.ScanElsewhere != nil {
		<-ctx.Done()
		return nil
	}
	for {
		if r, err := c.Scan(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("actionScan", "err", err)
		} else if r.Created+r.Updated > 0 {
			c.log.Info("actionScan", "messages", r.Messages, "threads", r.Threads, "created", r.Created, "updated", r.Updated)
		}
		t := time.NewTimer(scanEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-c.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// Kick asks for a scan now.
func (c *Center) Kick() {
	if c.opts.ScanElsewhere != nil {
		c.opts.ScanElsewhere()
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Wait waits for background executions (tests).
func (c *Center) Wait() { c.run.wg.Wait() }

// StepOrigin is an item's step as the authority sees it: a background call
// limited to the item's step tools (the defaults and those its flows
// declare), descending from the mail thread the plan was made from
// (untrusted), so every write or send shows a card naming it.
func StepOrigin(it Item, now time.Time) authority.Origin {
	tools := it.Tools
	if len(tools) == 0 {
		tools = DefaultStepTools
	}
	return authority.Origin{Kind: authority.Action, ID: strconv.FormatInt(it.ID, 10), Label: fmt.Sprintf("Action Center item %d: %s", it.ID, it.Summary),
		ChatID: it.ChatID, TurnID: fmt.Sprintf("action:%d", it.ID), Background: true, Tools: tools,
		Taint: []taint.Source{{Tool: "mail", Detail: fmt.Sprintf("the thread of message %d (%s), which the plan was made from", it.LastMessage, it.ThreadKey), At: now}}}
}
