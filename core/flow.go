package core

import (
	"context"
	"time"
)

// Flow control limits what runs, not only what is enqueued: concurrency
// limits and start rates enforced at claim, ordered keys (sequences), and
// the modes that say how long an idempotency key holds. The store enforces
// every rule in its claim and its transitions, across every worker and
// process, on its own clock. A backend declares that it does so by
// implementing [FlowController]; the runtime refuses a spawn or a config
// that needs flow control from a backend that does not.
//
// Claim order stays (Priority, RunAt, ID). A job that a rule holds back is
// passed over, and the claim goes on to the next eligible job in that
// order: a saturated task, key or sequence never blocks the rest of the
// queue. The jobs one claim hands out count against the limits together
// (a claim of ten against a key limit of two hands out at most two of that
// key). A config change takes effect on the next claim.

// MaxFlowLimit bounds every flow limit: a concurrency limit or a start rate
// above it is refused as absurd.
const MaxFlowLimit = 1_000_000

// UniqueMode says how long a job's IdempotencyKey holds the key. In every
// mode an enqueue with a key that a job holds returns that job (Reused)
// when the fingerprints match and fails with [ErrIdempotencyConflict] when
// they differ; an enqueue with a key that no job holds creates a new job,
// whatever the request of an earlier job with that key was.
type UniqueMode string

const (
	// UniqueUntilRetention (the zero value) holds the key for as long as
	// the job is retained: Cleanup or deletion frees it.
	UniqueUntilRetention UniqueMode = ""
	// UniqueWhileActive holds the key while the job is queued, running or
	// sleeping. The key is free once the job is terminal (succeeded,
	// failed or cancelled). Retry of such a job takes the key again, and
	// fails with an error wrapping [ErrIdempotencyConflict] (changing
	// nothing) when another job holds it by then.
	UniqueWhileActive UniqueMode = "while_active"
	// UniqueByPeriod holds the key from the job's creation to the end of
	// the period window it was created in, or until retention frees it,
	// whichever comes first. Windows are UniquePeriod long and aligned to
	// multiples of it since the Unix epoch, on the store's clock: one job
	// per key per window.
	UniqueByPeriod UniqueMode = "by_period"
)

// Valid reports whether m is one of the defined modes.
func (m UniqueMode) Valid() bool {
	return m == UniqueUntilRetention || m == UniqueWhileActive || m == UniqueByPeriod
}

// MaxUniquePeriod bounds UniquePeriod.
const MaxUniquePeriod = 366 * 24 * time.Hour

// PeriodEnd returns the end of the UniqueByPeriod window that holds t.
func PeriodEnd(t time.Time, period time.Duration) time.Time {
	if period <= 0 {
		return t
	}
	n := t.UnixNano()
	start := n - n%int64(period)
	if n < 0 && n%int64(period) != 0 {
		start -= int64(period)
	}
	return time.Unix(0, start+int64(period)).UTC()
}

// HoldsKey reports whether job j still holds its IdempotencyKey at now
// (the store's clock) under its UniqueMode. A job without a key holds none.
// Retention is not its business: a deleted job holds nothing.
func HoldsKey(j Job, now time.Time) bool {
	if j.IdempotencyKey == "" {
		return false
	}
	switch j.Unique {
	case UniqueWhileActive:
		return !j.State.Terminal()
	case UniqueByPeriod:
		return now.Before(PeriodEnd(j.CreatedAt, j.UniquePeriod))
	default:
		return true
	}
}

// KeyCount is the number of running jobs of one limit key.
type KeyCount struct {
	// Key is the limit key.
	Key string `json:"key"`
	// Running is how many jobs with that key are running.
	Running int64 `json:"running"`
}

// FlowController is the optional capability of a backend that enforces
// flow control: the limits and start rates of [TaskConfig] and
// [QueueConfig] at claim, the sequences of [EnqueueRequest.SequenceKey],
// the [UniqueMode]s, and the LimitKey and SequenceKey fields of
// [JobSearch]. A backend without it may ignore those fields, so the
// runtime refuses to use them there.
type FlowController interface {
	// RunningByKey returns the running jobs of task grouped by LimitKey,
	// most running first (ties by key), at most limit groups (0 means
	// [DefaultPageSize], at most [MaxPageSize]). Jobs without a limit key
	// are left out.
	RunningByKey(ctx context.Context, task string, limit int) ([]KeyCount, error)
}

// UsesFlowControl reports whether a request needs a [FlowController]: it
// sets a limit key, a sequence key or a unique mode other than the default.
func (r EnqueueRequest) UsesFlowControl() bool {
	return r.LimitKey != "" || r.SequenceKey != "" || r.Unique != UniqueUntilRetention
}

// UsesFlowControl reports whether a task config sets a limit that only a
// [FlowController] enforces.
func (c TaskConfig) UsesFlowControl() bool {
	return c.MaxRunning != 0 || c.MaxRunningPerKey != 0 || c.MaxStartsPerSecond != 0 ||
		c.MaxStartsPerSecondPerKey != 0 || c.HoldSequenceOnFailure
}

// UsesFlowControl reports whether a queue config sets a limit that only a
// [FlowController] enforces.
func (c QueueConfig) UsesFlowControl() bool { return c.MaxRunning != 0 }

// validateFlowLimit checks one limit: 0 (none) to [MaxFlowLimit].
func validateFlowLimit(field string, n int) error {
	if n < 0 || n > MaxFlowLimit {
		return invalid(field, "%d must lie in [0, %d] (0: no limit)", n, MaxFlowLimit)
	}
	return nil
}

// validateFlowRequest checks the flow fields of an enqueue request.
func validateFlowRequest(r EnqueueRequest) error {
	if r.LimitKey != "" {
		if err := ValidateName("limit_key", r.LimitKey); err != nil {
			return err
		}
	}
	if r.SequenceKey != "" {
		if err := ValidateName("sequence_key", r.SequenceKey); err != nil {
			return err
		}
	}
	if !r.Unique.Valid() {
		return invalid("unique", "%q is not a unique mode (want %q, %q or empty for until retention)", string(r.Unique), UniqueWhileActive, UniqueByPeriod)
	}
	if r.Unique != UniqueUntilRetention && r.IdempotencyKey == "" {
		return invalid("unique", "mode %q needs an idempotency key", r.Unique)
	}
	switch {
	case r.Unique == UniqueByPeriod && (r.UniquePeriod < time.Second || r.UniquePeriod > MaxUniquePeriod):
		return invalid("unique_period", "%v must lie in [1s, %v] for mode %q", r.UniquePeriod, MaxUniquePeriod, UniqueByPeriod)
	case r.Unique != UniqueByPeriod && r.UniquePeriod != 0:
		return invalid("unique_period", "is set, but the mode is %q, not %q", string(r.Unique), UniqueByPeriod)
	}
	return nil
}

// validateFlowConfig checks the flow limits of a task config.
func validateFlowConfig(c TaskConfig) error {
	for _, f := range []struct {
		name string
		n    int
	}{
		{"max_running", c.MaxRunning},
		{"max_running_per_key", c.MaxRunningPerKey},
		{"max_starts_per_second", c.MaxStartsPerSecond},
		{"max_starts_per_second_per_key", c.MaxStartsPerSecondPerKey},
	} {
		if err := validateFlowLimit(f.name, f.n); err != nil {
			return err
		}
	}
	return nil
}

// ValidateRunningByKey checks the arguments of RunningByKey.
func ValidateRunningByKey(task string, limit int) error {
	if err := ValidateName("task", task); err != nil {
		return err
	}
	if limit < 0 || limit > MaxPageSize {
		return invalid("limit", "%d is outside [0, %d]", limit, MaxPageSize)
	}
	return nil
}
