package boson

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// errLeaseLostCause cancels an attempt whose lease was superseded.
var errLeaseLostCause = fmt.Errorf("boson: attempt cancelled: %w", core.ErrLeaseLost)

// writeTimeout bounds the backend writes that end an attempt.
const writeTimeout = 30 * time.Second

// PanicError is the error recorded when a handler panics: the panic value
// and the goroutine's stack.
type PanicError struct {
	Value any
	Stack []byte
}

// Error implements error; the text includes the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// attempt is the state of one claimed job while its handler runs.
type attempt struct {
	w      *Worker
	b      core.QueueBackend
	c      *counterSet // the queue's counters
	job    core.Job
	cancel context.CancelCauseFunc
	ctx    attemptContext // the handler's context (see withAttempt)

	mu    sync.Mutex
	lease core.Lease
	cps   map[string][]byte // checkpoints, loaded lazily
	lost  atomic.Bool

	// ex is what the executor sees: a copy of job of its own, allocated
	// with the attempt.
	ex Execution

	begun time.Time // when the handler began, on the process clock

	// Guarded by the watcher's mutex.
	renewAt  time.Time // when the lease is next renewed
	renewing bool      // a renewal is in flight
	long     bool      // counted in the worker's longRunning
}

func (a *attempt) currentLease() core.Lease {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lease
}

// markLost records that the lease is gone and cancels the handler.
func (a *attempt) markLost() {
	if a.lost.CompareAndSwap(false, true) {
		a.cancel(errLeaseLostCause)
	}
}

// fenced reports err from a fenced call, noting a lost lease.
func (a *attempt) fenced(err error) error {
	if errors.Is(err, core.ErrLeaseLost) {
		a.markLost()
	}
	return err
}

// attemptLog returns the logger of one attempt. It is built only when a
// message is about to be logged, so the common path allocates nothing
// for logging.
func (w *Worker) attemptLog(job *core.Job) *slog.Logger {
	return w.log.With("job_id", job.ID, "task", job.Task, "queue", job.Queue, "attempt", job.Attempt)
}

// runner executes cj, then the claimed jobs handed to it one after
// another until the claim loop closes the hand-over channel. The claim
// loop starts a runner only when none is idle, so there are never more
// runners than the most handlers that ran at once, and attempts reuse
// goroutines (and their grown stacks) instead of starting one per job.
func (w *Worker) runner(cj claimedJob) {
	defer w.loops.Done()
	for {
		w.execute(cj)
		w.idle.Add(1)
		var ok bool
		if cj, ok = <-w.jobs; !ok {
			return
		}
	}
}

// execute runs one claimed job up to its final transition. A completion
// is handed to the completer, which writes it together with others and
// releases the job when the store has answered; every other outcome is
// written here.
func (w *Worker) execute(cj claimedJob) {
	q, c, job := cj.q, cj.c, cj.job
	defer w.runs.Done()
	async := false
	defer func() {
		if !async {
			w.releaseOwned()
		}
	}()
	execDone := false
	releaseExec := func() {
		if !execDone {
			execDone = true
			w.releaseExec()
		}
	}
	defer releaseExec()

	ctx, cancel := context.WithCancelCause(w.baseCtx)
	defer cancel(nil)
	a := &attempt{w: w, b: q.b, c: c, job: job, lease: job.Lease, cancel: cancel}

	reg, ok := w.handlers[job.Task]
	if !ok {
		c.unhandled.Add(1)
		w.attemptLog(&job).Warn("boson: no handler for task")
		w.fail(a, c, fmt.Errorf("%w: %s", ErrNoHandler, job.Task), false, false)
		return
	}
	if reg.sig != nil && w.refuseSignature(a, c, reg.sig) {
		return
	}

	start := time.Now()
	a.begun = start
	w.watch.add(a, cj.sent, cj.seq)
	runCtx := withAttempt(ctx, a)
	var stopTimeout context.CancelFunc = func() {}
	if reg.timeout > 0 {
		runCtx, stopTimeout = context.WithTimeoutCause(runCtx, reg.timeout, fmt.Errorf("boson: attempt timed out after %v", reg.timeout))
	}
	var (
		result []byte
		err    error
	)
	c.executions.Add(1)
	a.ex = Execution{Job: job, WorkerID: w.opts.ID}
	result, err = w.invoke(runCtx, &a.ex)
	timedOut := reg.timeout > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if timedOut && err != nil {
		err = fmt.Errorf("%w (%v)", context.Cause(runCtx), err)
	}
	stopTimeout()
	c.observe(time.Since(start))
	w.watch.remove(a)
	releaseExec() // the outcome write below overlaps the next claim

	switch {
	case a.lost.Load():
		w.noteLost(a, c, w.attemptLog(&job))
	case err == nil:
		async = true
		w.completer.submit(a.b, core.Completion{Lease: a.currentLease(), Result: result}, a)
	case err != nil && errors.Is(context.Cause(ctx), errShutdown):
		// Shutdown cancelled the attempt: release the job without using
		// an attempt so that another worker can take it at once.
		wctx, done := context.WithTimeout(context.Background(), writeTimeout)
		defer done()
		log := w.attemptLog(&job)
		if serr := a.b.Sleep(wctx, a.currentLease(), w.clock.Now()); serr != nil && !errors.Is(serr, core.ErrLeaseLost) {
			log.Error("boson: release after shutdown failed; the lease will expire", "error", serr)
		}
		log.Info("boson: attempt released at shutdown")
	default:
		var susp *SuspendError
		var snooze *SnoozeError
		switch {
		case errors.As(err, &susp) && susp.await != nil:
			w.park(a, c, *susp.await, w.attemptLog(&job))
		case errors.As(err, &susp):
			w.suspend(a, c, susp.Until, w.attemptLog(&job))
		case errors.As(err, &snooze):
			w.suspend(a, c, w.clock.Now().Add(snooze.Delay), w.attemptLog(&job))
		default:
			_, isPanic := err.(*PanicError)
			w.fail(a, c, err, IsPermanent(err), isPanic)
		}
	}
}

// completed implements completionDone.
func (a *attempt) completed(err error) { a.w.completed(a, a.c, err) }

// completed records the store's answer to a completion; it runs on the
// completer's goroutine and releases the job.
func (w *Worker) completed(a *attempt, c *counterSet, cerr error) {
	switch {
	case cerr == nil:
		c.completed.Add(1)
		if w.log.Enabled(context.Background(), slog.LevelDebug) {
			w.attemptLog(&a.job).Debug("boson: completed")
		}
		w.releaseOwned()
	case errors.Is(cerr, core.ErrLeaseLost):
		// Telling a cancellation from a rescue reads the job: do it off
		// the completer's goroutine. The completer's own loop counts in
		// w.loops while it runs, so this Add cannot race with the Wait.
		w.loops.Add(1)
		go func() {
			defer w.loops.Done()
			defer w.releaseOwned()
			w.noteLost(a, c, w.attemptLog(&a.job))
		}()
	default:
		w.attemptLog(&a.job).Error("boson: complete failed; the lease will expire and the job run again", "error", cerr)
		w.releaseOwned()
	}
}

// invoke runs the middleware chain, turning a panic into a [*PanicError].
func (w *Worker) invoke(ctx context.Context, ex *Execution) (result []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	if w.opts.RunContext != nil {
		rctx, err := w.opts.RunContext(ctx, ex.Job.Actor)
		if err != nil {
			return nil, fmt.Errorf("boson: run context: %w", err)
		}
		if rctx == nil {
			return nil, errors.New("boson: run context factory returned a nil context")
		}
		ctx = rctx
	}
	return w.chain(ctx, ex)
}

// noteLost counts an attempt whose lease was superseded, telling a
// cancellation apart from a rescue.
func (w *Worker) noteLost(a *attempt, c *counterSet, log interface {
	Info(string, ...any)
}) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if j, err := a.b.GetJob(ctx, a.job.ID); err == nil && j.State == core.StateCancelled {
		c.cancelled.Add(1)
		log.Info("boson: attempt stopped: job cancelled", "reason", j.LastError)
		return
	}
	c.leaseLost.Add(1)
	log.Info("boson: attempt stopped: lease lost")
}

func (w *Worker) suspend(a *attempt, c *counterSet, until time.Time, log interface {
	Info(string, ...any)
	Error(string, ...any)
}) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := a.b.Sleep(ctx, a.currentLease(), until)
	switch {
	case err == nil:
		c.suspended.Add(1)
		log.Info("boson: suspended", "until", until)
	case errors.Is(err, core.ErrLeaseLost):
		w.noteLost(a, c, log)
	default:
		log.Error("boson: suspend failed; the lease will expire and the job run again", "error", err)
	}
}

// park parks the job on the tasks it awaits (a fan-in). The store wakes it;
// nothing here waits.
func (w *Worker) park(a *attempt, c *counterSet, req core.AwaitRequest, log *slog.Logger) {
	aw, ok := a.b.(core.Awaiter)
	if !ok { // AwaitAll and AwaitAny refuse such a backend first
		w.fail(a, c, fmt.Errorf("%w: backend %T cannot park a task on other tasks", core.ErrUnsupported, a.b), true, false)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	req.Lease = a.currentLease()
	res, err := aw.AwaitJobs(ctx, req)
	switch {
	case err == nil:
		c.suspended.Add(1)
		log.Info("boson: waiting on tasks", "mode", req.Mode, "tasks", len(req.JobIDs), "pending", res.Pending, "woken", res.Woken)
	case errors.Is(err, core.ErrLeaseLost):
		w.noteLost(a, c, log)
	case errors.Is(err, core.ErrNotFound):
		// An awaited task was deleted after the handler read it: a new
		// attempt reads the children again and reports it.
		w.fail(a, c, fmt.Errorf("boson: fan-in: %w", err), false, false)
	case errors.Is(err, core.ErrUnsupported), errors.Is(err, core.ErrInvalidArgument):
		// The store refuses this wait (say, children in queues it cannot
		// reach in one step): another attempt would be refused again.
		w.fail(a, c, fmt.Errorf("boson: fan-in: %w", err), true, false)
	default:
		log.Error("boson: parking on awaited tasks failed; the lease will expire and the job run again", "error", err)
	}
}

// fail records a failed attempt, computing the retry time from the job's
// retry policy.
func (w *Worker) fail(a *attempt, c *counterSet, cause error, terminal, isPanic bool) {
	log := w.attemptLog(&a.job)
	policy := mergeRetry(a.job.Retry, w.opts.DefaultRetry)
	retryAt := w.clock.Now().Add(Backoff(policy, a.job.Attempt))
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	state, err := a.b.Fail(ctx, core.Failure{
		Lease:    a.currentLease(),
		Error:    core.TruncateError(cause.Error()),
		RetryAt:  retryAt,
		Terminal: terminal,
	})
	switch {
	case err == nil:
		if !errors.Is(cause, ErrNoHandler) {
			c.failed.Add(1)
		}
		msg := cause.Error()
		if isPanic {
			msg = fmt.Sprintf("panic: %v", cause.(*PanicError).Value)
		}
		if state == core.StateFailed {
			log.Warn("boson: task failed", "error", msg, "permanent", terminal)
		} else {
			log.Info("boson: attempt failed; will retry", "error", msg, "retry_at", retryAt)
		}
	case errors.Is(err, core.ErrLeaseLost):
		w.noteLost(a, c, log)
	default:
		log.Error("boson: recording a failure failed; the lease will expire and the job run again", "error", err)
	}
}
