// Command cross_queue_workflow shows a parent task that awaits a child task
// in another queue: an order in queue "orders" spawns the rendering of its
// invoice in queue "invoices" and waits for the result. The parent's first
// attempt fails after the await; the retry replays the awaited result from
// its checkpoint, and the child's idempotency key keeps it from being
// spawned twice.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/cross_queue_workflow
//
// Awaiting a task in the caller's own queue is refused (ErrSameQueueAwait):
// parents could otherwise fill every slot while their children wait.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Invoice is the child's input and output.
type Invoice struct {
	Order string `json:"order"`
	Cents int    `json:"cents"`
}

// Tasks of the workflow.
var (
	FulfilOrder   = boson.NewTask[Invoice, string]("fulfil-order")
	RenderInvoice = boson.NewTask[Invoice, string]("render-invoice")
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cross_queue_workflow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("cross_queue_workflow", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	stdout = &lockedWriter{w: stdout} // handlers print from their own goroutines
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	// One worker serves both queues here; in production each queue often
	// has its own fleet.
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{
		Queues: []string{"orders", "invoices"}, Logger: quiet, PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	var renders atomic.Int32
	err = boson.Register(worker, RenderInvoice, func(ctx context.Context, in Invoice) (string, error) {
		info, _ := boson.Info(ctx)
		renders.Add(1)
		fmt.Fprintf(stdout, "  [%s] render invoice of order %s\n", info.Queue, in.Order)
		return fmt.Sprintf("invoice-%s.pdf (%d.%02d EUR)", in.Order, in.Cents/100, in.Cents%100), nil
	})
	if err != nil {
		return err
	}
	err = boson.Register(worker, FulfilOrder, func(ctx context.Context, in Invoice) (string, error) {
		info, _ := boson.Info(ctx)
		fmt.Fprintf(stdout, "  [%s] attempt %d of order %s\n", info.Queue, info.Attempt, in.Order)
		child, err := boson.Spawn(ctx, client, RenderInvoice, in,
			boson.WithQueue("invoices"), boson.WithIdempotencyKey(info.JobID+"/invoice"))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(stdout, "  [%s] child %s (reused=%v), awaiting it\n", info.Queue, child.Queue(), child.Reused())
		pdf, err := boson.Await(ctx, child)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(stdout, "  [%s] got %s\n", info.Queue, pdf)
		if info.Attempt == 1 {
			return "", errors.New("mail server timed out") // retried; the await replays
		}
		return "mailed " + pdf, nil
	})
	if err != nil {
		return err
	}
	// Awaiting in the parent's own queue is refused.
	sameQueue := boson.NewTask[int, int]("same-queue-parent")
	err = boson.Register(worker, sameQueue, func(ctx context.Context, n int) (int, error) {
		child, err := boson.Spawn(ctx, client, RenderInvoice, Invoice{Order: "x"},
			boson.WithQueue("orders"), boson.WithDelay(time.Hour))
		if err != nil {
			return 0, err
		}
		_, err = boson.Await(ctx, child)
		if cerr := child.Cancel(ctx, "parent gave up"); cerr != nil {
			return 0, cerr
		}
		return 0, boson.Permanent(err)
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	fmt.Fprintln(stdout, "order A-17:")
	h, err := boson.Spawn(ctx, client, FulfilOrder, Invoice{Order: "A-17", Cents: 12950},
		boson.WithQueue("orders"), boson.WithRetry(core.RetryPolicy{Initial: 100 * time.Millisecond}))
	if err != nil {
		return err
	}
	out, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "result: %s; invoice rendered %d time(s)\n", out, renders.Load())

	bad, err := boson.Spawn(ctx, client, sameQueue, 1, boson.WithQueue("orders"))
	if err != nil {
		return err
	}
	_, err = bad.Wait(ctx)
	var te *boson.TaskError
	if !errors.As(err, &te) {
		return fmt.Errorf("same-queue await: got %v, want a failed task", err)
	}
	fmt.Fprintf(stdout, "same-queue await: %s: %s\n", te.State, te.Message)
	return nil
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
