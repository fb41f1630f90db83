package boson

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Checkpoint names. Steps, sleeps and awaits share one namespace per job,
// kept apart by these prefixes; a step called "charge" is stored as
// "step-charge".
const (
	stepPrefix  = "step-"
	sleepPrefix = "sleep-"
	awaitPrefix = "await-"
)

type attemptKey struct{}

// attemptContext is the context a handler runs with: ctx (the attempt's
// cancellation) carrying the attempt and, as by [WithActorContext], the
// actor recorded on its job. It lives in the attempt, so it costs no
// allocation of its own.
type attemptContext struct {
	context.Context
	a *attempt
}

// Value implements context.Context.
func (c *attemptContext) Value(key any) any {
	switch key.(type) {
	case attemptKey:
		return c.a
	case actorKey:
		return c.a.job.Actor
	}
	return c.Context.Value(key)
}

// withAttempt returns ctx carrying a and the actor of a's job.
func withAttempt(ctx context.Context, a *attempt) context.Context {
	a.ctx = attemptContext{Context: ctx, a: a}
	return &a.ctx
}

func attemptFrom(ctx context.Context) (*attempt, error) {
	a, ok := ctx.Value(attemptKey{}).(*attempt)
	if !ok {
		return nil, ErrNotInTask
	}
	return a, nil
}

// RunInfo describes the attempt a handler is running.
type RunInfo struct {
	JobID       string
	Task        string
	Queue       string
	Attempt     int
	MaxAttempts int
	Headers     map[string]string
	Actor       string
	WorkerID    string
	// Token is the lease's fencing token; pass it to external systems that
	// can refuse writes from a stale attempt.
	Token int64
	// RunID is the id of the run this attempt opened: [core.RunID] of the
	// job id and the token, the id every backend lists for it in ListRuns.
	RunID string
}

// Info returns the running attempt's description, or false when ctx does
// not belong to a running task.
func Info(ctx context.Context) (RunInfo, bool) {
	a, err := attemptFrom(ctx)
	if err != nil {
		return RunInfo{}, false
	}
	j := a.job
	return RunInfo{
		JobID: j.ID, Task: j.Task, Queue: j.Queue, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		Headers: j.Headers, Actor: j.Actor, WorkerID: a.w.opts.ID, Token: j.Lease.Token,
		RunID: core.RunID(j.ID, j.Lease.Token),
	}, true
}

// checkpoint returns the stored value of name, loading the job's
// checkpoints on first use.
func (a *attempt) checkpoint(ctx context.Context, name string) ([]byte, bool, error) {
	a.mu.Lock()
	loaded := a.cps != nil
	a.mu.Unlock()
	if !loaded {
		cps, err := a.b.Checkpoints(ctx, a.job.ID)
		if err != nil {
			return nil, false, fmt.Errorf("boson: load checkpoints: %w", err)
		}
		m := make(map[string][]byte, len(cps))
		for _, c := range cps {
			m[c.Step] = c.Value
		}
		a.mu.Lock()
		if a.cps == nil {
			a.cps = m
		}
		a.mu.Unlock()
	}
	a.mu.Lock()
	v, ok := a.cps[name]
	a.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	v, err := a.decodeCheckpoint(name, v)
	return v, true, err
}

// mayStart reports why the attempt must not start new work: its lease is
// known lost, or ctx is done.
func (a *attempt) mayStart(ctx context.Context) error {
	if a.lost.Load() {
		return errLeaseLostCause
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// save commits a checkpoint (first write wins) and returns the stored value.
func (a *attempt) save(ctx context.Context, name string, value []byte) ([]byte, error) {
	value, err := a.encodeCheckpoint(name, value)
	if err != nil {
		return nil, err
	}
	stored, err := a.b.SaveCheckpoint(ctx, a.currentLease(), name, value)
	if err != nil {
		return nil, a.fenced(fmt.Errorf("boson: save checkpoint %s: %w", name, err))
	}
	a.mu.Lock()
	a.cps[name] = stored
	a.mu.Unlock()
	return a.decodeCheckpoint(name, stored)
}

// Step is a named, checkpointed piece of a task whose result has type T.
// Define steps as package-level values with stable names: the name and the
// JSON encoding of T are part of the workflow's durable shape.
type Step[T any] struct{ name string }

// NewStep returns the step called name.
func NewStep[T any](name string) Step[T] { return Step[T]{name: name} }

// Name returns the step's name.
func (s Step[T]) Name() string { return s.name }

// Run returns the step's committed value when an earlier attempt of the
// task committed one, without calling fn. Otherwise it calls fn, commits its
// value and returns it. An error from fn is returned as is and commits
// nothing. A checkpoint does not make fn's external side effects exactly
// once: an attempt can die after fn ran and before the commit, so give
// external calls their own idempotency keys.
//
// Run never starts fn once ctx is done (it returns the context's cause)
// or once the attempt's lease is known lost (it returns an error wrapping
// [core.ErrLeaseLost]): a fenced write of the attempt was refused, or the
// worker saw the job leave the lease, so another attempt may be running.
func (s Step[T]) Run(ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	a, err := attemptFrom(ctx)
	if err != nil {
		return zero, err
	}
	key := stepPrefix + s.name
	if err := core.ValidateName("step", key); err != nil {
		return zero, Permanent(err)
	}
	if v, ok, err := a.checkpoint(ctx, key); err != nil {
		return zero, err
	} else if ok {
		return decode[T]("step "+s.name, v)
	}
	if err := a.mayStart(ctx); err != nil {
		return zero, err
	}
	val, err := fn(ctx)
	if err != nil {
		return zero, err
	}
	enc, err := encode("step "+s.name, val)
	if err != nil {
		return zero, Permanent(err)
	}
	stored, err := a.save(ctx, key, enc)
	if err != nil {
		return zero, err
	}
	return decode[T]("step "+s.name, stored)
}

// SleepFor durably sleeps for d, measured from the first time the task
// reached this sleep. The first call records the wake time under name and
// returns a [*SuspendError] that the handler must return: the worker then
// releases the claim and no goroutine waits. Once the wake time has come
// the task runs again from the start, replays its steps, and SleepFor
// returns nil. A name is one sleep for the life of the task: a loop that
// sleeps on each iteration must name each iteration's sleep ("poll-1",
// "poll-2", ...), as it must its steps.
func SleepFor(ctx context.Context, name string, d time.Duration) error {
	a, err := attemptFrom(ctx)
	if err != nil {
		return err
	}
	return sleepUntil(ctx, a, name, a.w.clock.Now().Add(d))
}

// SleepUntil durably sleeps until t; see [SleepFor]. The wake time recorded
// by the first call wins on replay.
func SleepUntil(ctx context.Context, name string, t time.Time) error {
	a, err := attemptFrom(ctx)
	if err != nil {
		return err
	}
	return sleepUntil(ctx, a, name, t)
}

func sleepUntil(ctx context.Context, a *attempt, name string, wake time.Time) error {
	key := sleepPrefix + name
	if err := core.ValidateName("sleep", key); err != nil {
		return Permanent(err)
	}
	v, ok, err := a.checkpoint(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		enc, _ := wake.UTC().MarshalText()
		if v, err = a.save(ctx, key, enc); err != nil {
			return err
		}
	}
	var until time.Time
	if err := until.UnmarshalText(v); err != nil {
		return Permanent(fmt.Errorf("%w: sleep %s: stored wake time %q: %v", core.ErrInvalidArgument, name, v, err))
	}
	if !a.w.clock.Now().Before(until) {
		return nil
	}
	return &SuspendError{Sleep: name, Until: until}
}

// Await waits for the task behind h, which must live in another queue than
// the calling task, and returns its typed result. The result is
// checkpointed, so a later attempt of the caller replays it without
// waiting. The caller keeps its worker slot (and lease) while it waits, so
// await bounded dependencies only. A failed or cancelled target gives a
// [*TaskError]; a target in the caller's queue gives [ErrSameQueueAwait].
func Await[Out any](ctx context.Context, h *Handle[Out]) (Out, error) {
	var zero Out
	a, err := attemptFrom(ctx)
	if err != nil {
		return zero, err
	}
	if h == nil {
		return zero, fmt.Errorf("%w: await of a nil handle", core.ErrInvalidArgument)
	}
	v, err := a.await(ctx, h.b, h.job.ID, h.job.Queue)
	if err != nil {
		return zero, err
	}
	return decode[Out]("awaited result", v)
}

// await waits for job id, stored on b in queue, and returns its result,
// checkpointed on first success (and replayed from the checkpoint).
func (a *attempt) await(ctx context.Context, b core.QueueBackend, id, queue string) ([]byte, error) {
	if queue == a.job.Queue {
		return nil, Permanent(fmt.Errorf("%w (task %s in queue %s)", ErrSameQueueAwait, id, queue))
	}
	key := awaitPrefix + id
	if err := core.ValidateName("await", key); err != nil {
		return nil, Permanent(err)
	}
	if v, ok, err := a.checkpoint(ctx, key); err != nil {
		return nil, err
	} else if ok {
		return v, nil
	}
	j, err := waitTerminal(ctx, b, id, queue, a.w.opts.PollInterval)
	if err != nil {
		return nil, err
	}
	if j.State != core.StateSucceeded {
		_, err := resultOf[struct{}](j)
		return nil, err
	}
	result, err := a.decodeAwaited(j)
	if err != nil {
		return nil, err
	}
	return a.save(ctx, key, result)
}
