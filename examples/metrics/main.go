// Command metrics shows the counters a worker keeps and how to export them:
// a mix of work on two queues (successes, a retry, a permanent failure, a
// snooze and a panic), then the worker's per-queue counters printed in the
// Prometheus text format, and the backend's own per-task statistics.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/metrics
//
// Worker counters are process-local and exporter-agnostic (read them into
// Prometheus, OpenTelemetry or logs); the backend is the durable truth.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Tasks of the demo: the input says how the attempt should go.
var (
	SendEmail = boson.NewTask[string, string]("send-email")
	Resize    = boson.NewTask[string, string]("resize-image")
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
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
		ID: "worker-1", Queues: []string{"emails", "images"}, Logger: quiet, PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	behave := func(ctx context.Context, in string) (string, error) {
		info, _ := boson.Info(ctx)
		switch in {
		case "flaky":
			if info.Attempt == 1 {
				return "", errors.New("timeout")
			}
		case "invalid":
			return "", boson.Permanent(errors.New("invalid address"))
		case "busy":
			first := false // true only the first time this step runs
			if _, err := snoozedOnce.Run(ctx, func(context.Context) (bool, error) { first = true; return true, nil }); err != nil {
				return "", err
			}
			if first {
				return "", boson.Snooze(100 * time.Millisecond) // does not use an attempt
			}
		case "bug":
			panic("resizer bug") // recorded as a failed attempt, with its stack
		}
		return "ok " + in, nil
	}
	if err := boson.Register(worker, SendEmail, behave); err != nil {
		return err
	}
	if err := boson.Register(worker, Resize, behave); err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	retry := boson.WithRetry(core.RetryPolicy{Initial: 50 * time.Millisecond})
	emails, err := boson.SpawnBatch(ctx, client, SendEmail, []string{"a", "b", "flaky", "invalid"},
		boson.WithQueue("emails"), retry)
	if err != nil {
		return err
	}
	images, err := boson.SpawnBatch(ctx, client, Resize, []string{"c", "busy", "bug"},
		boson.WithQueue("images"), retry, boson.WithMaxAttempts(1))
	if err != nil {
		return err
	}
	for _, h := range append(emails, images...) {
		if _, err := h.Wait(ctx); err != nil && !errors.Is(err, boson.ErrTaskFailed) {
			return err
		}
	}
	if err := worker.Shutdown(ctx); err != nil { // settles the counters
		return err
	}

	// Export: here as Prometheus text; any exporter reads the same snapshot.
	snap := worker.Metrics()
	fmt.Fprintf(stdout, "# worker %s\n", snap.WorkerID)
	queues := make([]string, 0, len(snap.Queues))
	for q := range snap.Queues {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	for _, q := range queues {
		c := snap.Queues[q]
		for _, m := range []struct {
			name string
			v    int64
		}{
			{"claimed", c.Claimed}, {"executions", c.Executions}, {"completed", c.Completed},
			{"failed", c.Failed}, {"suspended", c.Suspended}, {"cancelled", c.Cancelled},
			{"lease_lost", c.LeaseLost},
		} {
			fmt.Fprintf(stdout, "boson_%s_total{queue=%q} %d\n", m.name, q, m.v)
		}
	}
	t := snap.Total
	fmt.Fprintf(stdout, "total: %d executions, %d completed, %d failed, %d suspended, busy %v\n",
		t.Executions, t.Completed, t.Failed, t.Suspended, t.ExecutionTime > 0)

	// The backend keeps durable per-task statistics.
	for _, task := range []string{SendEmail.Name(), Resize.Name()} {
		st, err := client.TaskStats(ctx, task)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "task %s: jobs succeeded=%d failed=%d; runs succeeded=%d failed=%d\n", task,
			st.Jobs[core.StateSucceeded], st.Jobs[core.StateFailed], st.Runs[core.RunSucceeded], st.Runs[core.RunFailed])
	}
	return nil
}

// snoozedOnce remembers that the busy image already snoozed.
var snoozedOnce = boson.NewStep[bool]("snoozed")
