package mem

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// The fenced methods act for a worker that holds a lease. Each one first
// checks the fence: the job exists, is running, and runs under the lease's
// token. A lease whose expiry has passed still holds until Rescue or Cancel
// supersedes it. When the fence fails nothing changes and the error wraps
// core.ErrLeaseLost. Each costs O(log n).

// fence returns the record that lease still owns, or an ErrLeaseLost error.
func (s *store) fence(lease core.Lease) (*jobRec, error) {
	r := s.running[lease.JobID]
	if r == nil || r.job.Lease.Token != lease.Token {
		return nil, fmt.Errorf("%w: job %s token %d", core.ErrLeaseLost, lease.JobID, lease.Token)
	}
	return r, nil
}

// Heartbeat extends a held lease to now+ttl and returns it. A job past its
// MaxDuration deadline is cancelled instead, and Heartbeat returns an error
// wrapping [core.ErrLeaseLost].
func (b *Backend) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	if err := b.usable(ctx); err != nil {
		return core.Lease{}, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return core.Lease{}, err
	}
	if ttl <= 0 {
		return core.Lease{}, fmt.Errorf("%w: ttl %v must be positive", core.ErrInvalidArgument, ttl)
	}
	if err := b.lock(ctx); err != nil {
		return core.Lease{}, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	r, err := s.fence(lease)
	if err != nil {
		return core.Lease{}, err
	}
	if reason, passed := deadlinePassed(&r.job, now); passed {
		s.cancel(r, reason, now)
		return core.Lease{}, fmt.Errorf("%w: job %s: %s", core.ErrLeaseLost, lease.JobID, reason)
	}
	// Only the lease heap's key changes, so a fix stands in for detach/attach.
	r.job.Lease.ExpiresAt = now.Add(ttl)
	s.leases.fix(r, r.job.Lease.ExpiresAt)
	return r.job.Lease, nil
}

// Complete finishes each item's job as succeeded with its result. Items are
// independent: errs[i] wraps [core.ErrLeaseLost] when items[i]'s lease no
// longer holds, or [core.ErrInvalidArgument] when the item is malformed.
// The batch itself must hold 1 to Limits.MaxBatch items.
func (b *Backend) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if err := b.limits.ValidateBatch("completions", len(items)); err != nil {
		return nil, err
	}
	errs := make([]error, len(items))
	var results [][]byte // allocated only when some item has a result
	for i, it := range items {
		if err := core.ValidateLease(it.Lease); err != nil {
			errs[i] = err
			continue
		}
		if err := b.limits.ValidatePayload("result", it.Result); err != nil {
			errs[i] = err
			continue
		}
		if it.Result != nil {
			if results == nil {
				results = make([][]byte, len(items))
			}
			results[i] = bytes.Clone(it.Result)
		}
	}

	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	s.holdSignals()
	defer s.releaseSignals()
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		r, err := s.fence(it.Lease)
		if err != nil {
			errs[i] = err
			continue
		}
		if results != nil {
			r.job.Result = results[i]
		}
		s.finish(r, core.StateSucceeded, core.RunSucceeded, "", now)
	}
	return errs, nil
}

// Fail ends the current run with f.Error (truncated by
// [core.TruncateError]). The job fails for good when f.Terminal is set or
// its attempts are spent; otherwise it is queued again, due at f.RetryAt or
// now, whichever is later. It returns the job's new state.
func (b *Backend) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	if err := b.usable(ctx); err != nil {
		return "", err
	}
	if err := core.ValidateLease(f.Lease); err != nil {
		return "", err
	}
	msg := core.TruncateError(f.Error)
	if err := b.lock(ctx); err != nil {
		return "", err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	r, err := s.fence(f.Lease)
	if err != nil {
		return "", err
	}
	r.job.LastError = msg // set even when empty: it is this run's error
	if f.Terminal || r.job.Attempt >= r.job.MaxAttempts {
		s.finish(r, core.StateFailed, core.RunFailed, msg, now)
		return core.StateFailed, nil
	}
	s.detach(r, now)
	s.endRun(r, core.RunFailed, msg, now)
	r.job.State = core.StateQueued
	r.job.RunAt = laterOf(f.RetryAt, now)
	s.attach(r, core.StateRunning, now)
	return core.StateQueued, nil
}

// Sleep releases the claim and parks the job as sleeping until until (or
// now, if that is earlier). The run ends as [core.RunSleeping]; the next
// claim after the wake keeps the attempt number. The job keeps the lease's
// token, so any later use of the lease is refused.
func (b *Backend) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	if err := core.ValidateLease(lease); err != nil {
		return err
	}
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	r, err := s.fence(lease)
	if err != nil {
		return err
	}
	s.detach(r, now)
	s.endRun(r, core.RunSleeping, "", now)
	r.job.State = core.StateSleeping
	r.job.RunAt = laterOf(until, now)
	s.attach(r, core.StateRunning, now)
	return nil
}

// SaveCheckpoint stores value under (lease.JobID, step) unless a value is
// already there, and returns the stored value: the first write wins.
func (b *Backend) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return nil, err
	}
	if err := core.ValidateName("step", step); err != nil {
		return nil, err
	}
	if err := b.limits.ValidatePayload("value", value); err != nil {
		return nil, err
	}
	value = bytes.Clone(value)
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	r, err := s.fence(lease)
	if err != nil {
		return nil, err
	}
	if c, ok := r.checkpoints[step]; ok {
		return bytes.Clone(c.Value), nil
	}
	if r.checkpoints == nil {
		r.checkpoints = map[string]core.Checkpoint{}
	}
	r.checkpoints[step] = core.Checkpoint{JobID: r.job.ID, Step: step, Value: value, CreatedAt: now}
	return bytes.Clone(value), nil
}

// laterOf returns t in UTC at microsecond precision, or now when t is
// earlier (or zero).
func laterOf(t, now time.Time) time.Time {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Before(now) {
		return now
	}
	return t
}
