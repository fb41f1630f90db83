package boson

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// ExecuteOnce runs exec for job in this goroutine as if a worker had just
// claimed it, with steps, sleeps and awaits reading and writing b's
// checkpoints under job.Lease, but without lease renewal, retries or a final
// transition: it returns the executor's result or error as is (a panic
// becomes a [*PanicError]). It exists for test helpers such as package
// bosontest; production code runs tasks through a [Worker].
func ExecuteOnce(ctx context.Context, b core.QueueBackend, job core.Job, exec Executor, clock core.Clock) ([]byte, error) {
	if b == nil || exec == nil {
		return nil, fmt.Errorf("%w: backend and executor must not be nil", core.ErrInvalidArgument)
	}
	w := &Worker{opts: WorkerOptions{ID: "direct", PollInterval: 10 * time.Millisecond}, clock: core.ClockOrSystem(clock)}
	w.opts.Clock = w.clock
	w.chain = exec.Execute
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a := &attempt{w: w, b: b, job: job, lease: job.Lease, cancel: cancel}
	runCtx := withAttempt(ctx, a)
	return w.invoke(runCtx, &Execution{Job: job, WorkerID: w.opts.ID})
}
