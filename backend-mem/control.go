package mem

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Cancel cancels a queued, sleeping or running job and returns it. A running
// job's run ends as cancelled and its lease no longer holds. Cancelling a
// cancelled job returns it unchanged; a succeeded or failed job gives
// [core.ErrInvalidState], an unknown one [core.ErrNotFound]. Cost: O(log n).
func (b *Backend) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	if err := b.usable(ctx); err != nil {
		return core.Job{}, err
	}
	reason = core.CancelReason(reason)
	if err := b.lock(ctx); err != nil {
		return core.Job{}, err
	}
	defer b.mu.Unlock()
	return b.s.cancelID(jobID, reason, b.now())
}

// cancelID is Cancel under the lock, with reason already defaulted and
// truncated.
func (s *store) cancelID(jobID, reason string, now time.Time) (core.Job, error) {
	r := s.ids.find(jobID)
	switch {
	case r == nil:
		return core.Job{}, fmt.Errorf("%w: job %q", core.ErrNotFound, jobID)
	case r.jobBody == nil: // finished
		j := r.view().job // a copy of its own
		if j.State == core.StateCancelled {
			return j, nil
		}
		return core.Job{}, fmt.Errorf("%w: job %s is %s", core.ErrInvalidState, jobID, j.State)
	}
	s.cancel(r, reason, now)
	return r.copyOut(), nil
}

// Retry queues a failed or cancelled job again, due now, and returns it.
// When its attempts are spent MaxAttempts grows to Attempt+1 so that one
// more attempt may run. Other states give [core.ErrInvalidState], an
// unknown job [core.ErrNotFound]. Task limits do not apply. A job whose
// key is held only while active ([core.UniqueWhileActive]) takes its key
// again, and Retry fails with an error wrapping
// [core.ErrIdempotencyConflict], changing nothing, when another job holds
// it. Cost: O(log n).
func (b *Backend) Retry(ctx context.Context, jobID string) (core.Job, error) {
	if err := b.lock(ctx); err != nil {
		return core.Job{}, err
	}
	defer b.mu.Unlock()
	return b.s.retryID(jobID, b.now())
}

// retryID is Retry under the lock.
func (s *store) retryID(jobID string, now time.Time) (core.Job, error) {
	r := s.ids.find(jobID)
	if r == nil {
		return core.Job{}, fmt.Errorf("%w: job %q", core.ErrNotFound, jobID)
	}
	body := r.view()
	old := body.job.State
	if old != core.StateFailed && old != core.StateCancelled {
		return core.Job{}, fmt.Errorf("%w: job %s is %s; only failed or cancelled jobs can be retried",
			core.ErrInvalidState, jobID, old)
	}
	if err := s.retake(r, &body.job, now); err != nil {
		return core.Job{}, err
	}
	s.detach(r, now)
	r.jobBody, r.frozen = body, nil // thawed: active again
	j := &r.job
	j.State = core.StateQueued
	j.RunAt = now
	j.FinishedAt = time.Time{}
	if j.Attempt >= j.MaxAttempts {
		j.MaxAttempts = j.Attempt + 1
	}
	s.attach(r, old, now)
	return copyJob(r.job), nil
}
