// Command idempotent_webhook shows a duplicate webhook delivery deduplicated
// at submission: the provider's delivery id becomes the task's idempotency
// key, so a redelivery returns the task already stored instead of a second
// one, and a different body under the same id is refused.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/idempotent_webhook
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Payment is the body of a "payment succeeded" webhook.
type Payment struct {
	DeliveryID string `json:"delivery_id"`
	Invoice    string `json:"invoice"`
	Cents      int    `json:"cents"`
}

// HandlePayment marks an invoice paid.
var HandlePayment = boson.NewTask[Payment, string]("handle-payment")

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "idempotent_webhook:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("idempotent_webhook", flag.ContinueOnError)
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
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet})
	if err != nil {
		return err
	}
	var handled atomic.Int32
	err = boson.Register(worker, HandlePayment, func(ctx context.Context, p Payment) (string, error) {
		handled.Add(1)
		return fmt.Sprintf("invoice %s paid (%d cents)", p.Invoice, p.Cents), nil
	})
	if err != nil {
		return err
	}

	// receive is what an HTTP handler would do with each delivery: spawn
	// the task under the delivery id and answer 200 whether it is new or not.
	receive := func(p Payment) (*boson.Handle[string], error) {
		return boson.Spawn(ctx, client, HandlePayment, p, boson.WithIdempotencyKey("delivery-"+p.DeliveryID))
	}

	first := Payment{DeliveryID: "evt_1001", Invoice: "INV-7", Cents: 4200}
	h1, err := receive(first)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "delivery evt_1001: stored task %s (reused=%v)\n", h1.ID(), h1.Reused())

	// The provider did not see our 200 in time and delivers again.
	h2, err := receive(first)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "redelivery evt_1001: task %s (reused=%v, same task=%v)\n", h2.ID(), h2.Reused(), h2.ID() == h1.ID())

	// A different body under the same delivery id is a conflict, not a reuse.
	_, err = receive(Payment{DeliveryID: "evt_1001", Invoice: "INV-7", Cents: 9900})
	if !errors.Is(err, core.ErrIdempotencyConflict) {
		return fmt.Errorf("tampered redelivery: got %v, want an idempotency conflict", err)
	}
	fmt.Fprintln(stdout, "tampered redelivery evt_1001: refused (idempotency conflict)")

	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())
	out, err := h1.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "result:", out)

	// The key stays held after the task finished, until retention deletes it.
	h3, err := receive(first)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "late redelivery evt_1001: task %s (reused=%v)\n", h3.ID(), h3.Reused())

	counts, err := client.CountJobs(ctx, core.JobFilter{})
	if err != nil {
		return err
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	fmt.Fprintf(stdout, "done: 4 deliveries, %d task stored, handler ran %d time(s)\n", total, handled.Load())
	return nil
}
