// Command retrying_delivery shows bounded transient retries with backoff:
// a delivery whose endpoint fails twice and then answers, one whose
// endpoint never answers and runs out of attempts, and one refused for good
// at once with boson.Permanent.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/retrying_delivery
//
// The backoff is 100ms doubling to 400ms so that the demo is quick; the
// default is 30s doubling to an hour.
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

// Delivery is one outgoing webhook.
type Delivery struct {
	Endpoint string `json:"endpoint"`
	Body     string `json:"body"`
}

// Deliver posts a webhook and returns the endpoint's status.
var Deliver = boson.NewTask[Delivery, int]("deliver")

// errUnavailable is what a flaky endpoint answers.
var errUnavailable = errors.New("503 service unavailable")

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "retrying_delivery:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("retrying_delivery", flag.ContinueOnError)
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
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	err = boson.Register(worker, Deliver, func(ctx context.Context, d Delivery) (int, error) {
		info, _ := boson.Info(ctx)
		switch d.Endpoint {
		case "https://flaky.example/hook":
			if info.Attempt < 3 {
				return 0, errUnavailable // any error: retried with backoff
			}
			return 200, nil
		case "https://down.example/hook":
			return 0, errUnavailable
		default: // https://gone.example/hook
			return 0, boson.Permanent(errors.New("410 gone: endpoint removed"))
		}
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	retry := boson.WithRetry(core.RetryPolicy{Initial: 100 * time.Millisecond, Factor: 2, Max: 400 * time.Millisecond})
	endpoints := []string{"https://flaky.example/hook", "https://down.example/hook", "https://gone.example/hook"}
	for _, ep := range endpoints {
		h, err := boson.Spawn(ctx, client, Deliver, Delivery{Endpoint: ep, Body: `{"event":"ping"}`},
			retry, boson.WithMaxAttempts(4))
		if err != nil {
			return err
		}
		status, waitErr := h.Wait(ctx)
		if waitErr != nil && !errors.Is(waitErr, boson.ErrTaskFailed) {
			return waitErr
		}
		fmt.Fprintln(stdout, ep)
		runs, err := client.ListRuns(ctx, h.ID())
		if err != nil {
			return err
		}
		for i, r := range runs {
			gap := ""
			if i > 0 {
				gap = fmt.Sprintf(" (%v after the previous one)", r.StartedAt.Sub(runs[i-1].FinishedAt).Round(50*time.Millisecond))
			}
			if r.Error != "" {
				gap += ": " + r.Error
			}
			fmt.Fprintf(stdout, "  attempt %d: %s%s\n", r.Attempt, r.Status, gap)
		}
		if waitErr != nil {
			fmt.Fprintf(stdout, "  => failed after %d attempt(s)\n", len(runs))
		} else {
			fmt.Fprintf(stdout, "  => delivered, status %d, after %d attempt(s)\n", status, len(runs))
		}
	}
	if err := worker.Shutdown(ctx); err != nil { // settles the counters
		return err
	}
	m := worker.Metrics()
	fmt.Fprintf(stdout, "done: %d executions, %d completed, %d failed attempts\n", m.Total.Executions, m.Total.Completed, m.Total.Failed)
	return nil
}
