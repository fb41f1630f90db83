package core

import (
	"context"
	"fmt"
)

// TxController is an optional capability: cancel and manual retry inside a
// transaction that the caller owns, so that the application's rows and the
// queue's state commit or roll back together, as [TxEnqueuer] does for
// enqueue. tx is the store's own transaction type (for example pgx.Tx or
// *sql.Tx); another type, or nil, gives [ErrInvalidArgument].
//
// Both methods decide exactly as [QueueBackend.Cancel] and
// [QueueBackend.Retry] do, on the job as tx sees it (a job that tx itself
// enqueued can be cancelled by it), and their effects follow tx:
//
//   - Until the caller commits, no other reader sees the change: the job
//     keeps its state, and a running job's lease keeps working. Stores that
//     lock rows hold the job's row until tx ends, so the worker's fenced
//     calls on that job wait for it: keep such transactions short.
//   - When the caller commits, the change takes effect as one: a cancelled
//     running job's lease is superseded, so its worker's next fenced call
//     fails with [ErrLeaseLost], and a retried job becomes claimable.
//     Notifications for the job's queue go out at the commit (a store that
//     cannot see the commit may wake local subscribers early; signals may
//     be spurious, as [Notifier] allows).
//   - When the caller rolls back, nothing changed: the job is as it was and
//     a running job's lease still works.
//
// A refused call ([ErrNotFound], [ErrInvalidState], [ErrInvalidArgument])
// changes nothing and leaves tx usable, so the caller may still commit its
// own writes.
type TxController interface {
	// CancelTx is [QueueBackend.Cancel] inside tx: it cancels a queued,
	// sleeping or running job and returns it as tx now sees it. Cancelling
	// a cancelled job returns it unchanged; a succeeded or failed job
	// gives [ErrInvalidState]; a missing one [ErrNotFound].
	CancelTx(ctx context.Context, tx any, jobID, reason string) (Job, error)

	// RetryTx is [QueueBackend.Retry] inside tx: it queues a failed or
	// cancelled job again, due now, growing MaxAttempts by one when its
	// attempts are spent, and returns it as tx now sees it. Other states
	// give [ErrInvalidState]; a missing job [ErrNotFound].
	RetryTx(ctx context.Context, tx any, jobID string) (Job, error)
}

// CancelTx cancels jobID inside the caller's transaction tx when b
// implements [TxController], and returns an error wrapping
// [ErrUnsupported] otherwise.
func CancelTx(ctx context.Context, b QueueBackend, tx any, jobID, reason string) (Job, error) {
	tc, ok := b.(TxController)
	if !ok {
		return Job{}, fmt.Errorf("%w: %T cannot cancel inside a transaction", ErrUnsupported, b)
	}
	return tc.CancelTx(ctx, tx, jobID, reason)
}

// RetryTx retries jobID inside the caller's transaction tx when b
// implements [TxController], and returns an error wrapping
// [ErrUnsupported] otherwise.
func RetryTx(ctx context.Context, b QueueBackend, tx any, jobID string) (Job, error) {
	tc, ok := b.(TxController)
	if !ok {
		return Job{}, fmt.Errorf("%w: %T cannot retry inside a transaction", ErrUnsupported, b)
	}
	return tc.RetryTx(ctx, tx, jobID)
}
