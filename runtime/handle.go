package boson

import (
	"context"
	"time"

	"github.com/boson-go/boson/core"
)

// Handle is a typed reference to one spawned task. It is a small value that
// is safe to share; every method reads or changes the stored task.
type Handle[Out any] struct {
	c      *Client
	b      core.QueueBackend
	job    core.Job
	reused bool
}

func newHandle[Out any](c *Client, s Spawned) *Handle[Out] {
	return &Handle[Out]{c: c, b: s.b, job: s.Job, reused: s.Reused}
}

// ID returns the job id of the task.
func (h *Handle[Out]) ID() string { return h.job.ID }

// Queue returns the queue the task was stored in.
func (h *Handle[Out]) Queue() string { return h.job.Queue }

// Reused reports whether the spawn matched an existing task through its
// idempotency key instead of storing a new one.
func (h *Handle[Out]) Reused() bool { return h.reused }

// Snapshot returns the task's current stored state.
func (h *Handle[Out]) Snapshot(ctx context.Context) (core.Job, error) {
	return h.b.GetJob(ctx, h.job.ID)
}

// Result returns the task's output if it succeeded, a [*TaskError] if it
// failed or was cancelled, and [ErrNotFinished] if it has not ended. It
// does not wait; see [Handle.Wait].
func (h *Handle[Out]) Result(ctx context.Context) (Out, error) {
	j, err := h.Snapshot(ctx)
	if err != nil {
		var zero Out
		return zero, err
	}
	return resultVia[Out](h.c.opts.Codec, j)
}

func resultOf[Out any](j core.Job) (Out, error) {
	var zero Out
	switch j.State {
	case core.StateSucceeded:
		return decode[Out]("result of "+j.Task, j.Result)
	case core.StateFailed, core.StateCancelled:
		return zero, &TaskError{JobID: j.ID, Task: j.Task, State: j.State, Message: j.LastError}
	}
	return zero, ErrNotFinished
}

// Wait blocks until the task ends and returns what [Handle.Result] would.
// It wakes on the backend's notifications where the backend offers them and
// polls otherwise (starting at 10ms, backing off to the client's
// PollInterval). It returns ctx's error when ctx ends first.
func (h *Handle[Out]) Wait(ctx context.Context) (Out, error) {
	j, err := waitTerminal(ctx, h.b, h.job.ID, h.job.Queue, h.c.opts.PollInterval)
	if err != nil {
		var zero Out
		return zero, err
	}
	return resultVia[Out](h.c.opts.Codec, j)
}

// waitTerminal polls a job until it is terminal.
func waitTerminal(ctx context.Context, b core.QueueBackend, id, queue string, maxPoll time.Duration) (core.Job, error) {
	signal, stop, _ := core.SubscribeQueue(b, queue)
	defer stop()
	delay := 10 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		j, err := b.GetJob(ctx, id)
		if err != nil {
			return j, err
		}
		if j.State.Terminal() {
			return j, nil
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-signal: // nil when the backend does not notify
			timer.Stop() // since Go 1.23 no stale tick can follow
		case <-timer.C:
			delay = min(delay*2, maxPoll)
		}
	}
}

// Cancel cancels the task if it is queued, sleeping or running; a running
// attempt loses its lease at once, and its handler's context is cancelled
// within about a second on a backend that notifies, else at the worker's
// next heartbeat. Cancelling a cancelled task is a no-op; a finished task gives
// an error wrapping [core.ErrInvalidState].
func (h *Handle[Out]) Cancel(ctx context.Context, reason string) error {
	_, err := h.b.Cancel(ctx, h.job.ID, reason)
	return err
}

// Retry queues a failed or cancelled task again, due now, adding one attempt
// when its budget is spent. The original spawn (and its idempotency
// fingerprint) is unchanged.
func (h *Handle[Out]) Retry(ctx context.Context) error {
	_, err := h.b.Retry(ctx, h.job.ID)
	return err
}
