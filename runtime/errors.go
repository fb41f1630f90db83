package boson

import (
	"errors"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Runtime errors. Each wraps a core sentinel where one fits, so callers can
// test with errors.Is against either.
var (
	// ErrNotFinished: the task has not reached a terminal state yet. It
	// wraps [core.ErrInvalidState].
	ErrNotFinished = fmt.Errorf("%w: task has not finished", core.ErrInvalidState)
	// ErrTaskFailed: the task ended failed. [*TaskError] wraps it.
	ErrTaskFailed = errors.New("boson: task failed")
	// ErrTaskCancelled: the task ended cancelled. [*TaskError] wraps it.
	ErrTaskCancelled = errors.New("boson: task cancelled")
	// ErrSameQueueAwait: a handler tried to await a task in its own queue,
	// which could fill every worker slot with parents waiting for children
	// that need those slots. It wraps [core.ErrInvalidArgument].
	ErrSameQueueAwait = fmt.Errorf("%w: cannot await a task in the same queue as the awaiting task", core.ErrInvalidArgument)
	// ErrNotInTask: a workflow primitive (step, sleep, await) was called
	// with a context that does not belong to a running task. It wraps
	// [core.ErrInvalidState].
	ErrNotInTask = fmt.Errorf("%w: not called from a running task", core.ErrInvalidState)
	// ErrNoHandler: a worker claimed a job whose task it has no handler
	// for. The attempt fails and is retried with backoff, so a worker
	// that knows the task may take it later.
	ErrNoHandler = errors.New("boson: no handler registered for task")
	// ErrActorRejected: the client's actor policy refused a spawn. It wraps
	// [core.ErrInvalidArgument].
	ErrActorRejected = fmt.Errorf("%w: actor rejected", core.ErrInvalidArgument)
	// ErrQueueNotDeclared: a client with ClientOptions.StrictQueues refused
	// to spawn to a queue that is not declared; nothing was stored. It is
	// [core.ErrQueueNotDeclared], which wraps [core.ErrNotFound].
	ErrQueueNotDeclared = core.ErrQueueNotDeclared
	// ErrQueueConflict: CreateQueue found the queue declared with another
	// config. It is [core.ErrQueueConflict], which wraps
	// [core.ErrIdempotencyConflict].
	ErrQueueConflict = core.ErrQueueConflict
)

// TaskError reports that an awaited task ended without a result.
type TaskError struct {
	JobID string
	Task  string
	State core.JobState
	// Message is the job's LastError: the last failure or why it was cancelled.
	Message string
}

// Error implements error.
func (e *TaskError) Error() string {
	return fmt.Sprintf("boson: task %s (%s) %s: %s", e.Task, e.JobID, e.State, e.Message)
}

// Unwrap returns [ErrTaskFailed] or [ErrTaskCancelled].
func (e *TaskError) Unwrap() error {
	if e.State == core.StateCancelled {
		return ErrTaskCancelled
	}
	return ErrTaskFailed
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: a handler that returns it
// fails the job at once, whatever attempts remain. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with [Permanent].
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// SnoozeError asks the worker to release the job and run it again after
// Delay without consuming an attempt. Create one with [Snooze].
type SnoozeError struct{ Delay time.Duration }

// Error implements error.
func (e *SnoozeError) Error() string { return fmt.Sprintf("boson: snoozed for %v", e.Delay) }

// Snooze returns an error that, returned from a handler, releases the job
// and makes it due again after d (negative counts as zero). The attempt is
// not consumed; steps already committed replay on the next run.
func Snooze(d time.Duration) error {
	if d < 0 {
		d = 0
	}
	return &SnoozeError{Delay: d}
}

// SuspendError is returned by [SleepFor] and [SleepUntil] when the wake time
// has not come, and by [AwaitAll] and [AwaitAny] when the awaited tasks
// have not ended: the handler must return it (or an error wrapping it) so
// the worker can release the claim until Until, or until the store wakes
// the task.
type SuspendError struct {
	// Sleep names the sleep, or describes the fan-in ("await 3 of 5").
	Sleep string
	// Until is the wake time; a fan-in without a bound gives
	// [core.WaitForever].
	Until time.Time

	await *core.AwaitRequest // the wait of a fan-in, without its lease
}

// Error implements error.
func (e *SuspendError) Error() string {
	if e.await != nil {
		return fmt.Sprintf("boson: waiting on %d task(s) (%s): %s", len(e.await.JobIDs), e.await.Mode, e.Sleep)
	}
	return fmt.Sprintf("boson: sleeping in %q until %s", e.Sleep, e.Until.Format(time.RFC3339Nano))
}

// IsSuspend reports whether err asks the worker to suspend the task (a
// durable sleep that has not finished).
func IsSuspend(err error) bool {
	var s *SuspendError
	return errors.As(err, &s)
}
