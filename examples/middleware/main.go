// Command middleware shows a timing layer around every execution: a
// middleware that measures each attempt and keeps per-task totals, inside
// an outer middleware that puts the job's request id header into the
// context (the first middleware listed is the outermost).
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/middleware
//
// Middleware sees the attempt's context and its *boson.Execution (the job
// as claimed: task, id, queue, attempt, headers) and may act before and
// after the handler; whatever it returns is the attempt's outcome.
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
	"sync"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Resize pretends to resize an image of the given size in pixels.
var Resize = boson.NewTask[int, string]("resize")

// requestIDKey carries the request id through the attempt's context.
type requestIDKey struct{}

// requestID copies the job's "request-id" header into the context.
func requestID(next boson.ExecuteFunc) boson.ExecuteFunc {
	return func(ctx context.Context, ex *boson.Execution) ([]byte, error) {
		return next(context.WithValue(ctx, requestIDKey{}, ex.Job.Headers["request-id"]), ex)
	}
}

// timings is the timing layer: one line per attempt, totals per task.
type timings struct {
	mu     sync.Mutex
	out    io.Writer
	count  map[string]int
	total  map[string]time.Duration
	failed map[string]int
}

func (t *timings) middleware(next boson.ExecuteFunc) boson.ExecuteFunc {
	return func(ctx context.Context, ex *boson.Execution) ([]byte, error) {
		start := time.Now()
		res, err := next(ctx, ex)
		took := time.Since(start)
		rid, _ := ctx.Value(requestIDKey{}).(string) // set by the outer layer
		t.mu.Lock()
		defer t.mu.Unlock()
		t.count[ex.Job.Task]++
		t.total[ex.Job.Task] += took
		outcome := "ok"
		if err != nil {
			t.failed[ex.Job.Task]++
			outcome = "error: " + err.Error()
		}
		fmt.Fprintf(t.out, "timing: task=%s request=%s attempt=%d took=%v %s\n",
			ex.Job.Task, rid, ex.Job.Attempt, took.Round(10*time.Millisecond), outcome)
		return res, err
	}
}

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "middleware:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("middleware", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	tm := &timings{out: stdout, count: map[string]int{}, total: map[string]time.Duration{}, failed: map[string]int{}}
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{
		Concurrency: 1, // one at a time, so the lines come in order
		Logger:      quiet, PollInterval: 50 * time.Millisecond,
		Middleware: []boson.Middleware{requestID, tm.middleware},
	})
	if err != nil {
		return err
	}
	err = boson.Register(worker, Resize, func(ctx context.Context, px int) (string, error) {
		info, _ := boson.Info(ctx)
		time.Sleep(time.Duration(px/10) * time.Millisecond) // the "work"
		if px > 400 && info.Attempt == 1 {
			return "", errors.New("out of scratch space")
		}
		return fmt.Sprintf("%dpx done", px), nil
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	for i, px := range []int{100, 300, 500} {
		h, err := boson.Spawn(ctx, client, Resize, px,
			boson.WithHeader("request-id", fmt.Sprintf("req-%d", i+1)),
			boson.WithRetry(core.RetryPolicy{Initial: 50 * time.Millisecond}))
		if err != nil {
			return err
		}
		if _, err := h.Wait(ctx); err != nil {
			return err
		}
	}
	if err := worker.Shutdown(ctx); err != nil {
		return err
	}

	tm.mu.Lock()
	defer tm.mu.Unlock()
	tasks := make([]string, 0, len(tm.count))
	for task := range tm.count {
		tasks = append(tasks, task)
	}
	sort.Strings(tasks)
	for _, task := range tasks {
		n := tm.count[task]
		fmt.Fprintf(stdout, "summary: task=%s attempts=%d failed=%d mean=%v\n",
			task, n, tm.failed[task], (tm.total[task] / time.Duration(n)).Round(10*time.Millisecond))
	}
	return nil
}
