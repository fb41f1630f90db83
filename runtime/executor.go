package boson

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Execution describes one claimed attempt to the code that computes it:
// executors and middleware. Job is a snapshot taken at claim time (task,
// job id, queue, attempt, headers, payload, actor).
type Execution struct {
	Job core.Job
	// WorkerID is the id of the worker that holds the lease.
	WorkerID string
}

// ExecuteFunc computes one attempt: it returns the encoded result, or an
// error that the worker classifies (retryable by default; see [Permanent],
// [Snooze] and [SleepFor]).
type ExecuteFunc func(ctx context.Context, ex *Execution) ([]byte, error)

// Executor decides where one already-claimed attempt computes: in this
// process (a typed handler registered with [Register]), in a subprocess
// ([CommandExecutor]) or anywhere else. Claim, lease renewal, retries,
// cancellation and the final transition stay with the worker, so an error
// from Execute is an ordinary failed attempt. Execute must return soon after
// ctx is cancelled (lease lost, job cancelled, shutdown) and must stop or
// fence any external work it started.
type Executor interface {
	Execute(ctx context.Context, ex *Execution) ([]byte, error)
}

// Execute implements [Executor].
func (f ExecuteFunc) Execute(ctx context.Context, ex *Execution) ([]byte, error) { return f(ctx, ex) }

// Middleware wraps execution. It sees the context and the [Execution] (task,
// job id, attempt, headers) and may act before and after next. Middleware
// listed first in [WorkerOptions.Middleware] runs outermost.
type Middleware func(next ExecuteFunc) ExecuteFunc

// HandlerOption adjusts one registration.
type HandlerOption func(*registration)

// AttemptTimeout bounds each attempt of the task: when d passes the
// handler's context is cancelled and the attempt fails (and is retried like
// any error). Zero means no timeout; leases never time a handler out.
func AttemptTimeout(d time.Duration) HandlerOption {
	return func(r *registration) { r.timeout = d }
}

type registration struct {
	task    string
	exec    Executor
	timeout time.Duration

	signatures []string        // accepted job signatures; none means every job
	sigPolicy  SignaturePolicy // 0 means the worker's
	sig        *signatureGuard // nil when every job is accepted

	flow *FlowLimits // stored at Start; nil leaves the stored config alone
}

// Register makes w run fn for every job of task t. A job recorded with
// another signature than t's (see [Task.Signature], [AcceptSignatures]) is
// refused by the worker's [SignaturePolicy] before anything decodes it. The
// input is decoded from JSON (a payload that does not decode fails the job
// permanently, never reaching fn with the wrong type) and the output
// encoded as JSON. It must be called before [Worker.Start].
func Register[In, Out any](w *Worker, t Task[In, Out], fn func(ctx context.Context, in In) (Out, error), opts ...HandlerOption) error {
	if fn == nil {
		return fmt.Errorf("%w: handler of %s is nil", core.ErrInvalidArgument, t.name)
	}
	if err := t.Validate(); err != nil {
		return err
	}
	inWhat := "input of " + t.name
	encodeOut := encoderFor[Out]("output of " + t.name)
	exec := ExecuteFunc(func(ctx context.Context, ex *Execution) ([]byte, error) {
		in, err := decode[In](inWhat, ex.Job.Payload)
		if err != nil {
			return nil, Permanent(err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		b, err := encodeOut(out)
		if err != nil {
			return nil, Permanent(err)
		}
		return b, nil
	})
	return w.RegisterExecutor(t.name, exec, append([]HandlerOption{AcceptSignatures(t.sig)}, opts...)...)
}

// RegisterExecutor makes w run exec for every job of the task named task.
// It must be called before [Worker.Start], once per task.
func (w *Worker) RegisterExecutor(task string, exec Executor, opts ...HandlerOption) error {
	if err := core.ValidateName("task", task); err != nil {
		return err
	}
	if exec == nil {
		return fmt.Errorf("%w: executor of %s is nil", core.ErrInvalidArgument, task)
	}
	if w.opts.Codec != nil {
		exec = codecExecutor{codec: w.opts.Codec, next: exec}
	}
	r := &registration{task: task, exec: exec}
	for _, o := range opts {
		if o != nil {
			o(r)
		}
	}
	if r.timeout < 0 {
		return fmt.Errorf("%w: attempt timeout %v must not be negative", core.ErrInvalidArgument, r.timeout)
	}
	if err := w.checkFlowRegistration(r); err != nil {
		return err
	}
	var err error
	if r.sig, err = w.newSignatureGuard(r); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return fmt.Errorf("%w: register %s before the worker starts", core.ErrInvalidState, task)
	}
	if _, dup := w.handlers[task]; dup {
		return fmt.Errorf("%w: task %s is registered twice", core.ErrInvalidArgument, task)
	}
	w.handlers[task] = r
	return nil
}
