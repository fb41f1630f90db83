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
	if !plausibleID(jobID) {
		return core.Job{}, fmt.Errorf("boson/%s: cancel: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var out core.Job
	var changed bool
	err := e.st.WriteTx(ctx, func(q Querier) error {
		var err error
		out, changed, err = e.cancelIn(ctx, q, jobID, reason)
		return err
	})
	if err != nil {
		return core.Job{}, e.wrap("cancel", err)
	}
	if changed {
		e.hub.signal(out.Queue)
	}
	return out, nil
}

// cancelIn is the body of Cancel on q, a write transaction: it locks the
// job, cancels it when its state allows, queues the store's notification
// on q, and reports whether the job changed.
func (e *Engine) cancelIn(ctx context.Context, q Querier, jobID, reason string) (core.Job, bool, error) {
	reason = core.CancelReason(reason)
	j, now, found, err := e.lockJob(ctx, q, jobID)
	if err != nil {
		return core.Job{}, false, err
	}
	if !found {
		return core.Job{}, false, fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
	}
	switch j.State {
	case core.StateCancelled:
		return j, false, nil
	case core.StateSucceeded, core.StateFailed:
		return core.Job{}, false, fmt.Errorf("%w: job %s is %s", core.ErrInvalidState, jobID, j.State)
	}
	out, err := e.cancelJob(ctx, q, j, now, reason)
	if err != nil {
		return core.Job{}, false, err
	}
	return out, true, e.d.Notify(ctx, e, q, []string{j.Queue})
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
	retry := func(q Querier) error {
		var err error
		out, err = e.retryIn(ctx, q, jobID)
		return err
	}
	err := e.st.WriteTx(ctx, retry)
	if isUniqueViolation(err) {
		// A while-active job's key was taken by an enqueue that committed
		// after retakeKey looked: run again, so that the check sees the
		// holder and names it.
		if err = e.st.WriteTx(ctx, retry); isUniqueViolation(err) {
			err = fmt.Errorf("%w: job %s cannot take its key again: another job took it meanwhile", core.ErrIdempotencyConflict, jobID)
		}
	}
	if err != nil {
		return core.Job{}, e.wrap("retry", err)
	}
	e.cursors.note(out.Queue, out.Priority, toUS(out.RunAt), toUS(out.RunAt))
	e.hub.signal(out.Queue)
	return out, nil
}

// retryIn is the body of Retry on q, a write transaction: it locks the
// job, queues it again when it failed or was cancelled, and queues the
// store's notification on q.
func (e *Engine) retryIn(ctx context.Context, q Querier, jobID string) (core.Job, error) {
	j, now, found, err := e.lockJob(ctx, q, jobID)
	if err != nil {
		return core.Job{}, err
	}
	if !found {
		return core.Job{}, fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
	}
	if j.State != core.StateFailed && j.State != core.StateCancelled {
		return core.Job{}, fmt.Errorf("%w: job %s is %s; only failed or cancelled jobs can be retried", core.ErrInvalidState, jobID, j.State)
	}
	if err := e.retakeKey(ctx, q, j); err != nil {
		return core.Job{}, err
	}
	jobs, err := collectJobs(q.Query(ctx, e.render(`UPDATE {s}jobs SET state = 'queued', run_at = ?, finished_at = 0,
		max_attempts = CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END`+flowRetrySet+awaitRetrySet+`
		WHERE id = ? RETURNING `+JobCols("")), now, jobID))
	if err != nil {
		return core.Job{}, err
	}
	if len(jobs) != 1 {
		return core.Job{}, fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
	}
	out := jobs[0]
	if err := e.flowAfter(ctx, q, []flowRef{refOf(j)}); err != nil {
		return core.Job{}, err
	}
	return out, e.d.Notify(ctx, e, q, []string{dueJob{queue: out.Queue, prio: out.Priority, runAt: toUS(out.RunAt)}.payload()})
}

// plausibleID reports whether id could name a stored job; others are
// simply not found.
func plausibleID(id string) bool {
	return id != "" && len(id) <= core.MaxNameLength && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}
