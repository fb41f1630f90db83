package core

import (
	"context"
	"time"
)

// QueueBackend is the contract between the runtime and a store. All methods
// are safe for concurrent use by many goroutines and many processes sharing
// the store. Every method takes a context first and honours its cancellation;
// errors wrap the sentinels in this package.
//
// Fenced methods take the [Lease] returned by Claim. They succeed only while
// the job is running under that lease's Token; otherwise they change nothing
// and return an error wrapping [ErrLeaseLost]. A lease whose expiry has passed
// still fences correctly: it stays valid until Rescue or Cancel supersedes it.
type QueueBackend interface {
	// Enqueue stores a batch of jobs atomically: either every item is stored
	// (or reused) or none is, whatever queues the items name. A call that
	// fails, or that a crash of the caller or the store cuts short, leaves
	// the batch whole or absent, never in part; a backend may finish such a
	// batch later (its documentation says when), and one that cannot make a
	// batch over several queues atomic refuses it with an error wrapping
	// [ErrUnsupported]. Items are validated with [PrepareJobs]; an
	// invalid item fails the batch with a [*BatchError] wrapping
	// [ErrInvalidArgument]. Results are in request order.
	//
	// Idempotency: an item with an IdempotencyKey that a retained job of the
	// same queue already holds returns that job with Reused set when the
	// fingerprints match, and fails the batch with [ErrIdempotencyConflict]
	// when they differ. Terminal jobs keep their key until Cleanup deletes them.
	//
	// Limits: when the task's stored [TaskConfig] sets MaxInFlight or
	// MaxEnqueuePerSecond and a new job would exceed it, the batch fails with
	// [ErrRateLimited]. Reused items do not count against the limits.
	Enqueue(ctx context.Context, reqs []EnqueueRequest) ([]EnqueueResult, error)

	// Claim atomically takes up to req.Limit due jobs of req.Queue — queued
	// or sleeping jobs whose RunAt is not after now — in (Priority, RunAt, ID)
	// order, and marks each running under a new lease for req.WorkerID that
	// expires at now+req.LeaseTTL with a token greater than any before it.
	// A job woken from a sleep keeps its attempt number; any other claim
	// increments Attempt. Each claim opens a [Run] and sets FirstStartedAt if
	// it was zero. No job is ever handed to two claims at once.
	//
	// In the same step, due jobs whose cancellation deadline has passed are
	// cancelled instead of handed out. A paused queue returns no jobs. An
	// empty result is not an error.
	Claim(ctx context.Context, req ClaimRequest) ([]Job, error)

	// Heartbeat extends a held lease to now+ttl and returns the new lease.
	// If the job has passed its MaxDuration deadline it is cancelled instead
	// and Heartbeat returns [ErrLeaseLost].
	Heartbeat(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)

	// Complete finishes a batch of running jobs as succeeded with their
	// results, closing their runs. Items are independent: errs[i] is nil or
	// wraps [ErrLeaseLost] for items[i]. The second return reports a failure
	// of the call itself, after which the outcome of any item is unknown.
	Complete(ctx context.Context, items []Completion) (errs []error, err error)

	// Fail ends the current run with f.Error. If f.Terminal is set or the
	// job's Attempt has reached MaxAttempts the job becomes failed; otherwise
	// it is queued again with RunAt = f.RetryAt (or now, if that is earlier).
	// It returns the job's new state.
	Fail(ctx context.Context, f Failure) (JobState, error)

	// Sleep releases the claim and parks the job as sleeping until until.
	// The run ends with [RunSleeping]; no attempt is consumed.
	Sleep(ctx context.Context, lease Lease, until time.Time) error

	// SaveCheckpoint stores value under (lease.JobID, step) unless a value is
	// already stored there, and returns the stored value: the first write
	// wins and later writes return the first value unchanged. Checkpoints
	// outlive retries, rescues and sleeps, and are deleted with the job.
	SaveCheckpoint(ctx context.Context, lease Lease, step string, value []byte) ([]byte, error)

	// Checkpoints returns a job's checkpoints ordered by step name, or
	// [ErrNotFound] if the job does not exist.
	Checkpoints(ctx context.Context, jobID string) ([]Checkpoint, error)

	// Rescue runs one bounded pass: running jobs whose lease expired are
	// queued again (RunAt now) when attempts remain and failed otherwise,
	// their runs ending as [RunLost]; jobs that passed a cancellation
	// deadline are cancelled. It changes at most req.Limit jobs and is safe
	// to call from every worker at once.
	Rescue(ctx context.Context, req RescueRequest) (RescueResult, error)

	// Cancel cancels a queued, sleeping or running job and returns it. A
	// running job's lease is superseded at once. Cancelling a cancelled job
	// returns it unchanged; a succeeded or failed job gives [ErrInvalidState].
	Cancel(ctx context.Context, jobID, reason string) (Job, error)

	// Retry queues a failed or cancelled job again, due now. When its
	// attempts are spent MaxAttempts grows by one so that one more attempt
	// may run. Other states give [ErrInvalidState].
	Retry(ctx context.Context, jobID string) (Job, error)

	// GetJob returns one job or [ErrNotFound].
	GetJob(ctx context.Context, jobID string) (Job, error)

	// ListJobs returns one page of jobs matching f, ordered by ID. Following
	// Next visits every job that matched when the listing began and still
	// matches, exactly once.
	ListJobs(ctx context.Context, f JobFilter) (JobPage, error)

	// CountJobs counts the jobs matching f by state.
	CountJobs(ctx context.Context, f JobFilter) (map[JobState]int64, error)

	// ListRuns returns a job's runs in claim order, or [ErrNotFound].
	ListRuns(ctx context.Context, jobID string) ([]Run, error)

	// TaskStats aggregates one task's jobs and runs. A task with no jobs
	// returns empty counts, not an error.
	TaskStats(ctx context.Context, task string) (TaskStats, error)

	// ListQueues describes every queue that has jobs or a stored config,
	// ordered by name.
	ListQueues(ctx context.Context) ([]QueueInfo, error)

	// GetTaskConfig returns the stored config of a task or [ErrNotFound].
	GetTaskConfig(ctx context.Context, task string) (TaskConfig, error)

	// PutTaskConfig stores cfg, replacing any config of the same task.
	PutTaskConfig(ctx context.Context, cfg TaskConfig) error

	// GetQueueConfig returns the stored config of a queue, or the zero config
	// (with Queue set) when none is stored.
	GetQueueConfig(ctx context.Context, queue string) (QueueConfig, error)

	// PutQueueConfig stores cfg, replacing any config of the same queue. It
	// takes effect for every claim that starts after it returns.
	PutQueueConfig(ctx context.Context, cfg QueueConfig) error

	// Cleanup deletes at most req.Limit terminal jobs that finished before
	// req.FinishedBefore, with their runs and checkpoints, and returns how
	// many it deleted. Deleting a job releases its idempotency key.
	Cleanup(ctx context.Context, req CleanupRequest) (int, error)

	// Close releases the backend's resources. Later calls return [ErrClosed].
	// Close does not close clients or pools that the caller handed in.
	Close() error
}

// Notifier is an optional capability: a backend that can tell a worker that
// a queue changed without polling.
type Notifier interface {
	// Subscribe returns a channel that receives a value soon after a job of
	// queue becomes claimable or finishes. Signals coalesce (the channel
	// holds at most one) and may be spurious; a missed signal is made up by
	// polling. stop releases the subscription and must be called once.
	Subscribe(queue string) (signal <-chan struct{}, stop func())
}

// TxEnqueuer is an optional capability: enqueue inside a transaction that
// the caller owns, so that the jobs become visible only when it commits and
// disappear if it rolls back. tx is the store's own transaction type (for
// example pgx.Tx or *sql.Tx); another type gives [ErrInvalidArgument].
type TxEnqueuer interface {
	EnqueueTx(ctx context.Context, tx any, reqs []EnqueueRequest) ([]EnqueueResult, error)
}

// SubscribeQueue subscribes to b's notifications for queue, or returns
// ok=false when b does not implement [Notifier].
func SubscribeQueue(b QueueBackend, queue string) (signal <-chan struct{}, stop func(), ok bool) {
	n, isN := b.(Notifier)
	if !isN {
		return nil, func() {}, false
	}
	signal, stop = n.Subscribe(queue)
	return signal, stop, true
}

// EnqueueTx enqueues inside the caller's transaction tx when b implements
// [TxEnqueuer], and returns [ErrUnsupported] otherwise.
func EnqueueTx(ctx context.Context, b QueueBackend, tx any, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	te, ok := b.(TxEnqueuer)
	if !ok {
		return nil, ErrUnsupported
	}
	return te.EnqueueTx(ctx, tx, reqs)
}
