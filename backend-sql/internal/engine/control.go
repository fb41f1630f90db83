package engine

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/boson-go/boson/core"
)

// Cancel implements core.QueueBackend.
func (e *Engine) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	if err := e.check("cancel"); err != nil {
		return core.Job{}, err
	}
	if reason == "" {
		reason = "cancelled"
	}
	reason = core.TruncateError(reason)
	if !plausibleID(jobID) {
		return core.Job{}, fmt.Errorf("boson/%s: cancel: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var out core.Job
	var changed bool
	err := e.st.WriteTx(ctx, func(q Querier) error {
		changed = false
		j, now, found, err := e.lockJob(ctx, q, jobID)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
		}
		switch j.State {
		case core.StateCancelled:
			out = j
			return nil
		case core.StateSucceeded, core.StateFailed:
			return fmt.Errorf("%w: job %s is %s", core.ErrInvalidState, jobID, j.State)
		}
		out, err = e.cancelJob(ctx, q, j, now, reason)
		if err != nil {
			return err
		}
		changed = true
		return e.d.Notify(ctx, e, q, []string{j.Queue})
	})
	if err != nil {
		return core.Job{}, e.wrap("cancel", err)
	}
	if changed {
		e.hub.signal(out.Queue)
	}
	return out, nil
}

// Retry implements core.QueueBackend.
func (e *Engine) Retry(ctx context.Context, jobID string) (core.Job, error) {
	if err := e.check("retry"); err != nil {
		return core.Job{}, err
	}
	if !plausibleID(jobID) {
		return core.Job{}, fmt.Errorf("boson/%s: retry: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var out core.Job
	err := e.st.WriteTx(ctx, func(q Querier) error {
		j, now, found, err := e.lockJob(ctx, q, jobID)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
		}
		if j.State != core.StateFailed && j.State != core.StateCancelled {
			return fmt.Errorf("%w: job %s is %s; only failed or cancelled jobs can be retried", core.ErrInvalidState, jobID, j.State)
		}
		jobs, err := collectJobs(q.Query(ctx, e.render(`UPDATE {s}jobs SET state = 'queued', run_at = ?, finished_at = 0,
			max_attempts = CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
			WHERE id = ? RETURNING `+JobCols("")), now, jobID))
		if err != nil {
			return err
		}
		if len(jobs) != 1 {
			return fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
		}
		out = jobs[0]
		return e.d.Notify(ctx, e, q, []string{dueJob{queue: out.Queue, prio: out.Priority, runAt: toUS(out.RunAt)}.payload()})
	})
	if err != nil {
		return core.Job{}, e.wrap("retry", err)
	}
	e.cursors.note(out.Queue, out.Priority, toUS(out.RunAt), toUS(out.RunAt))
	e.hub.signal(out.Queue)
	return out, nil
}

// plausibleID reports whether id could name a stored job; others are
// simply not found.
func plausibleID(id string) bool {
	return id != "" && len(id) <= core.MaxNameLength && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}
