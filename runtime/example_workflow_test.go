package boson_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

type Order struct{ ID int }

var (
	PlaceOrder = boson.NewTask[Order, string]("place-order")
	Reserve    = boson.NewStep[string]("reserve")
	Charge     = boson.NewStep[int]("charge")
)

// A task built from checkpointed steps: the first attempt fails after
// reserving; the retry replays the reservation without running it again.
func ExampleStep() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, PollInterval: 10 * time.Millisecond})

	reservations := 0
	_ = boson.Register(worker, PlaceOrder, func(ctx context.Context, o Order) (string, error) {
		res, err := Reserve.Run(ctx, func(ctx context.Context) (string, error) {
			reservations++
			return fmt.Sprintf("R-%d", o.ID), nil
		})
		if err != nil {
			return "", err
		}
		info, _ := boson.Info(ctx)
		if info.Attempt == 1 {
			return "", errors.New("payment provider unavailable") // retried
		}
		amount, err := Charge.Run(ctx, func(ctx context.Context) (int, error) { return 42, nil })
		return fmt.Sprintf("%s charged %d", res, amount), err
	})
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	h, _ := boson.Spawn(ctx, client, PlaceOrder, Order{ID: 7},
		boson.WithRetry(core.RetryPolicy{Initial: 10 * time.Millisecond}))
	out, err := h.Wait(ctx)
	fmt.Println(out, err, "reservations:", reservations)
	// Output: R-7 charged 42 <nil> reservations: 1
}

var (
	Parent = boson.NewTask[int, int]("parent")
	Square = boson.NewTask[int, int]("square")
)

// A parent task spawns a child in another queue and awaits its result. The
// idempotency key keeps a retried parent from spawning a second child, and
// the awaited result is checkpointed.
func ExampleAwait() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, Queues: []string{"parents", "children"}})

	_ = boson.Register(worker, Square, func(ctx context.Context, n int) (int, error) { return n * n, nil })
	_ = boson.Register(worker, Parent, func(ctx context.Context, n int) (int, error) {
		info, _ := boson.Info(ctx)
		child, err := boson.Spawn(ctx, client, Square, n,
			boson.WithQueue("children"), boson.WithIdempotencyKey(info.JobID+"-square"))
		if err != nil {
			return 0, err
		}
		sq, err := boson.Await(ctx, child)
		return sq + 1, err
	})
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	h, _ := boson.Spawn(ctx, client, Parent, 6, boson.WithQueue("parents"))
	out, err := h.Wait(ctx)
	fmt.Println(out, err)
	// Output: 37 <nil>
}

// Middleware wraps every execution and sees the task, job id, attempt and
// headers.
func ExampleMiddleware() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})

	logTask := func(next boson.ExecuteFunc) boson.ExecuteFunc {
		return func(ctx context.Context, ex *boson.Execution) ([]byte, error) {
			fmt.Printf("start %s attempt %d tenant %s\n", ex.Job.Task, ex.Job.Attempt, ex.Job.Headers["tenant"])
			out, err := next(ctx, ex)
			fmt.Printf("end %s err=%v\n", ex.Job.Task, err)
			return out, err
		}
	}
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, Middleware: []boson.Middleware{logTask}})
	_ = boson.Register(worker, Square, func(ctx context.Context, n int) (int, error) { return n * n, nil })
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	h, _ := boson.Spawn(ctx, client, Square, 3, boson.WithHeader("tenant", "acme"))
	out, _ := h.Wait(ctx)
	fmt.Println(out)
	// Output:
	// start square attempt 1 tenant acme
	// end square err=<nil>
	// 9
}
