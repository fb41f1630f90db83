package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Fail implements core.QueueBackend.
func (e *Engine) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	if err := e.check("fail"); err != nil {
		return "", err
	}
	if err := core.ValidateLease(f.Lease); err != nil {
		return "", err
	}
	msg := core.TruncateError(f.Error)
	var state core.JobState
	var queue string
	var due dueJob
	err := e.st.WriteTx(ctx, func(q Querier) error {
		j, now, err := e.lockFenced(ctx, q, f.Lease)
		if err != nil {
			return err
		}
		queue = j.Queue
		if err := e.endRun(ctx, q, j, core.RunFailed, now, msg); err != nil {
			return err
		}
		if f.Terminal || j.Attempt >= j.MaxAttempts {
			state = core.StateFailed
			hold := false
			if j.SequenceKey != "" {
				if hold, err = e.holdOnFailure(ctx, q, j.Task); err != nil {
					return err
				}
			}
			_, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'failed', finished_at = ?, last_error = ?, seq_hold = ? WHERE id = ?"), now, msg, boolInt(hold), j.ID)
			if err == nil {
				err = e.countAwaited(ctx, q, []string{j.ID}, now, false)
			}
		} else {
			state = core.StateQueued
			runAt := max(toUS(f.RetryAt), now)
			due = dueJob{queue: j.Queue, prio: j.Priority, runAt: runAt}
			_, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'queued', run_at = ?, last_error = ? WHERE id = ?"), runAt, msg, j.ID)
		}
		if err != nil {
			return err
		}
		if err := e.flowAfter(ctx, q, []flowRef{refOf(j)}); err != nil {
			return err
		}
		if state == core.StateQueued {
			return e.d.Notify(ctx, e, q, []string{due.payload()})
		}
		return e.d.Notify(ctx, e, q, []string{j.Queue})
	})
	if err != nil {
		return "", e.wrap("fail", err)
	}
	if state == core.StateQueued {
		e.cursors.noteDue(due)
	}
	e.hub.signal(queue)
	return state, nil
}

// Sleep implements core.QueueBackend.
func (e *Engine) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	if err := e.check("sleep"); err != nil {
		return err
	}
	if err := core.ValidateLease(lease); err != nil {
		return err
	}
	if !until.IsZero() && (until.Year() < 1970 || until.Year() > 9999) {
		return fmt.Errorf("%w: until: %v is outside the years 1970 to 9999", core.ErrInvalidArgument, until)
	}
	var queue string
	var due dueJob
	err := e.st.WriteTx(ctx, func(q Querier) error {
		queue = ""
		j, now, err := e.lockFenced(ctx, q, lease)
		if err != nil {
			return err
		}
		if err := e.endRun(ctx, q, j, core.RunSleeping, now, ""); err != nil {
			return err
		}
		wake := max(toUS(until), now)
		due = dueJob{queue: j.Queue, prio: j.Priority, runAt: wake}
		if _, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'sleeping', run_at = ? WHERE id = ?"), wake, j.ID); err != nil {
			return err
		}
		if err := e.flowAfter(ctx, q, []flowRef{refOf(j)}); err != nil {
			return err
		}
		if wake <= now { // claimable at once
			queue = j.Queue
		}
		// The position keeps other processes' claim cursors from
		// passing the job when it wakes.
		return e.d.Notify(ctx, e, q, []string{due.payload()})
	})
	if err != nil {
		return e.wrap("sleep", err)
	}
	e.cursors.noteDue(due)
	if queue != "" {
		e.hub.signal(queue)
	}
	return nil
}
