// Command custom_backend shows a minimal third-party adapter: package
// counting wraps another backend (here mem), counts and logs the calls that
// change jobs, and forwards everything else. The runtime cannot tell it
// from a bundled backend, and its test runs the conformance suite
// (conformance.Run) to prove it keeps the contract.
//
// It needs no server:
//
//	go run ./examples/custom_backend       # -v logs every counted call
//	go test ./examples/custom_backend/...  # the adapter's conformance test
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
	"github.com/boson-go/boson/examples/custom_backend/counting"
	boson "github.com/boson-go/boson/runtime"
)

// Square squares a number; odd inputs fail their first attempt.
var Square = boson.NewTask[int, int]("square")

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "custom_backend:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("custom_backend", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "log every counted call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	logger := quiet
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}

	backend := counting.New(mem.New(mem.Options{Logger: quiet}), logger)
	defer backend.Close()
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	err = boson.Register(worker, Square, func(ctx context.Context, n int) (int, error) {
		info, _ := boson.Info(ctx)
		if n%2 == 1 && info.Attempt == 1 {
			return 0, errors.New("odd numbers fail once")
		}
		return n * n, nil
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	handles, err := boson.SpawnBatch(ctx, client, Square, []int{1, 2, 3, 4, 5},
		boson.WithRetry(core.RetryPolicy{Initial: 50 * time.Millisecond}))
	if err != nil {
		return err
	}
	for i, h := range handles {
		out, err := h.Wait(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "square(%d) = %d\n", i+1, out)
	}
	if err := worker.Shutdown(ctx); err != nil {
		return err
	}

	c := backend.Counts()
	fmt.Fprintf(stdout, "jobs through the adapter: %d enqueued, %d claimed, %d completed, %d failed attempts\n",
		c.Jobs["enqueued"], c.Jobs["claimed"], c.Jobs["completed"], c.Jobs["failed"])
	fmt.Fprintf(stdout, "enqueue calls: %d (one atomic batch)\n", c.Calls["Enqueue"])
	fmt.Fprintf(stdout, "methods called: %v\n", c.Methods())
	return nil
}
