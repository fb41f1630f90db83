// Command cancellation shows the two ways a task stops early: an explicit
// cancel (of a task still waiting, and of one that is running, whose
// handler sees its context cancelled), and deadlines the backend enforces
// (MaxDuration from the first start, MaxDelay before it).
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/cancellation
//
// The worker renews leases every 100ms here so that a deadline is noticed
// quickly; with the defaults it is noticed at the next heartbeat (10s).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Export is a long report export; it runs until it is stopped.
var Export = boson.NewTask[string, string]("export")

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cancellation:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("cancellation", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{
		Logger:            quiet,
		LeaseTTL:          time.Second,
		HeartbeatInterval: 100 * time.Millisecond,
		PollInterval:      50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	started := make(chan string, 4)
	stopped := make(chan string, 4)
	err = boson.Register(worker, Export, func(ctx context.Context, name string) (string, error) {
		started <- name
		<-ctx.Done() // a real export would check ctx between chunks
		stopped <- fmt.Sprintf("%s: handler stopped: %v", name, context.Cause(ctx))
		return "", ctx.Err()
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	report := func(label string, h *boson.Handle[string]) error {
		_, err := h.Wait(ctx)
		var te *boson.TaskError
		if !errors.As(err, &te) || !errors.Is(err, boson.ErrTaskCancelled) {
			return fmt.Errorf("%s: got %v, want a cancelled task", label, err)
		}
		job, err := h.Snapshot(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s after %d attempt(s), reason %q\n", label, te.State, job.Attempt, te.Message)
		return nil
	}

	// 1. Cancel a task that has not started: it never runs.
	h, err := boson.Spawn(ctx, client, Export, "scheduled", boson.WithDelay(time.Minute))
	if err != nil {
		return err
	}
	if err := h.Cancel(ctx, "customer closed the account"); err != nil {
		return err
	}
	if err := report("explicit, waiting", h); err != nil {
		return err
	}

	// 2. Cancel a running task: its lease ends at once and the worker
	//    cancels the handler's context.
	h, err = boson.Spawn(ctx, client, Export, "running")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "started %q\n", <-started)
	if err := h.Cancel(ctx, "user pressed stop"); err != nil {
		return err
	}
	if err := report("explicit, running", h); err != nil {
		return err
	}
	fmt.Fprintln(stdout, <-stopped)

	// 3. A deadline from the first start: the backend cancels the task when
	//    it lives longer than MaxDuration, across retries and sleeps.
	h, err = boson.Spawn(ctx, client, Export, "bounded",
		boson.WithCancellation(core.CancellationPolicy{MaxDuration: 300 * time.Millisecond}))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "started %q\n", <-started)
	if err := report("deadline, running", h); err != nil {
		return err
	}
	fmt.Fprintln(stdout, <-stopped)

	// 4. A deadline before the first start: a task that could not start
	//    within MaxDelay is cancelled when it would have been claimed.
	h, err = boson.Spawn(ctx, client, Export, "stale",
		boson.WithDelay(400*time.Millisecond),
		boson.WithCancellation(core.CancellationPolicy{MaxDelay: 200 * time.Millisecond}))
	if err != nil {
		return err
	}
	if err := report("deadline, waiting", h); err != nil {
		return err
	}

	if err := worker.Shutdown(ctx); err != nil { // waits for every handler to return
		return err
	}
	m := worker.Metrics()
	fmt.Fprintf(stdout, "done: %d executions, %d cancelled while running, %d completed\n",
		m.Total.Executions, m.Total.Cancelled, m.Total.Completed)
	return nil
}
