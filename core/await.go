package core

import (
	"context"
	"time"
)

// Fan-in: a running job parks until other jobs of the same store are
// terminal. While it waits it holds no claim, no lease and no worker slot,
// as in a durable sleep, and nothing polls: the store wakes it in the same
// atomic step as the transition of an awaited job that satisfies its wait.

// AwaitMode says when a waiting job wakes.
type AwaitMode string

const (
	// AwaitAll wakes the job once every awaited job is terminal.
	AwaitAll AwaitMode = "all"
	// AwaitAny wakes the job once at least one awaited job is terminal.
	AwaitAny AwaitMode = "any"
)

// Valid reports whether m is one of the defined modes.
func (m AwaitMode) Valid() bool { return m == AwaitAll || m == AwaitAny }

// MaxAwaitJobs bounds how many jobs one wait names.
const MaxAwaitJobs = 10_000

// WaitForever is the RunAt of a job parked by a wait without a bound:
// later than any wake a caller can ask for, and within every store's
// time range.
var WaitForever = time.Date(2200, time.January, 1, 0, 0, 0, 0, time.UTC)

// AwaitRequest parks the running job of Lease until the jobs it names are
// terminal.
type AwaitRequest struct {
	// Lease is the waiting job's current claim.
	Lease Lease `json:"lease"`
	// JobIDs are the awaited jobs: 1 to [MaxAwaitJobs] distinct ids of jobs
	// in the same store, in any queue, never the waiting job itself.
	JobIDs []string `json:"job_ids"`
	// Mode says when the job wakes.
	Mode AwaitMode `json:"mode"`
	// Until, when set, bounds the wait: the job is due at Until even if the
	// wait is not satisfied by then. Zero means no bound ([WaitForever]).
	Until time.Time `json:"until,omitempty"`
	// CancelChildren makes a cancellation of the waiting job while it waits
	// (Cancel, a bulk cancel, or its cancellation deadline) cancel, in the
	// same step, every awaited job that is not terminal.
	CancelChildren bool `json:"cancel_children,omitempty"`
}

// AwaitResult reports how a wait began.
type AwaitResult struct {
	// Pending is how many awaited jobs were not terminal when the wait
	// began.
	Pending int `json:"pending"`
	// Woken is true when the wait was satisfied at once (every awaited job
	// terminal for AwaitAll, one for AwaitAny): the job was parked due now.
	Woken bool `json:"woken"`
}

// Wait describes the wait a parked job is on.
type Wait struct {
	// JobID is the waiting job.
	JobID string `json:"job_id"`
	// JobIDs are the awaited jobs, in request order.
	JobIDs []string `json:"job_ids"`
	// Mode, Until and CancelChildren are the request's.
	Mode           AwaitMode `json:"mode"`
	Until          time.Time `json:"until,omitempty"`
	CancelChildren bool      `json:"cancel_children,omitempty"`
	// Pending is how many awaited jobs have not yet reached a terminal
	// state (or been deleted) since the wait began.
	Pending int `json:"pending"`
	// Woken is true once the wait is satisfied and the job is due.
	Woken bool `json:"woken"`
	// Token is the lease token of the run that began the wait. The wait
	// is current while the job is sleeping under that token; a later claim
	// (after a wake or at Until) leaves it behind, and a stale wait never
	// wakes or cancels anything.
	Token int64 `json:"token"`
}

// Awaiter is the optional capability of a backend that parks a job on
// other jobs and wakes it from its own transitions (fan-in).
//
// A wait counts each awaited job once, at its first terminal transition
// (succeeded, failed, cancelled) after the wait began, or at its deletion;
// a job already terminal when the wait begins counts at once. A later
// Retry of a counted job does not undo the count: the woken job reads its
// children's states again and may wait again. Every path that ends a job
// counts: Complete, a Fail without retry, Cancel, a cancellation
// deadline, Rescue failing a job out of attempts, BulkStep, DeleteJob,
// DeleteQueue and Cleanup. A count wakes the waiting job only while its
// wait is current (see [Wait.Token]): a job claimed again at Until, and
// then sleeping or waiting on something else, is never woken by an
// earlier wait.
type Awaiter interface {
	// AwaitJobs ends the current run as [RunSleeping] and parks the job
	// as sleeping, without consuming an attempt, until its wait is
	// satisfied or req.Until comes. Parking and counting the awaited jobs
	// already terminal are one atomic step; when the wait is satisfied at
	// once the job is parked due now. When the wait is satisfied later,
	// the transition that satisfies it sets the job's RunAt to now (the
	// store's clock) in the same atomic step, and the wait is over.
	//
	// A stale lease gives [ErrLeaseLost] and an awaited id that names no
	// job gives [ErrNotFound]; an invalid request gives
	// [ErrInvalidArgument]. In each case nothing changes and the claim is
	// kept. Cancel of a waiting job ends its wait (and cancels its
	// children when CancelChildren is set); a waiting job that is
	// deleted leaves no wait behind.
	AwaitJobs(ctx context.Context, req AwaitRequest) (AwaitResult, error)

	// JobWait returns the latest wait a job began, current or not, kept
	// until the job begins another wait or is deleted. A job that never
	// waited, or does not exist, gives [ErrNotFound].
	JobWait(ctx context.Context, jobID string) (Wait, error)
}

// ValidateAwait checks an AwaitRequest: a lease with a job id and a token,
// 1 to [MaxAwaitJobs] distinct well-formed ids that do not include the
// waiting job, a valid mode, and an Until that is zero or before
// [WaitForever].
func ValidateAwait(r AwaitRequest) error {
	if r.Lease.JobID == "" || r.Lease.Token <= 0 {
		return invalid("lease", "must name a claimed job")
	}
	if !r.Mode.Valid() {
		return invalid("mode", "must be %q or %q, not %q", AwaitAll, AwaitAny, r.Mode)
	}
	if len(r.JobIDs) == 0 || len(r.JobIDs) > MaxAwaitJobs {
		return invalid("job_ids", "must name 1 to %d jobs, not %d", MaxAwaitJobs, len(r.JobIDs))
	}
	seen := make(map[string]struct{}, len(r.JobIDs))
	for _, id := range r.JobIDs {
		if err := ValidateJobID(id); err != nil {
			return err
		}
		if id == r.Lease.JobID {
			return invalid("job_ids", "must not name the waiting job %s", id)
		}
		if _, dup := seen[id]; dup {
			return invalid("job_ids", "names %s twice", id)
		}
		seen[id] = struct{}{}
	}
	if !r.Until.IsZero() && !r.Until.Before(WaitForever) {
		return invalid("until", "must be before %s", WaitForever.Format(time.RFC3339))
	}
	return nil
}

// WakeAt is the RunAt at which a parked job is due when its wait is not
// satisfied: Until, or [WaitForever] when Until is zero.
func (r AwaitRequest) WakeAt() time.Time {
	if r.Until.IsZero() {
		return WaitForever
	}
	return r.Until
}

// Satisfied reports whether a wait over total jobs, pending of which are
// not yet counted, is satisfied under mode.
func (m AwaitMode) Satisfied(total, pending int) bool {
	if m == AwaitAny {
		return pending < total
	}
	return pending == 0
}
