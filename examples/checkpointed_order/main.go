// Command checkpointed_order shows an order whose side effects are
// checkpointed steps: stock is reserved and the card charged, then the
// attempt crashes (a panic, recorded as a failed attempt with its stack).
// The retry replays the reservation and the charge from their checkpoints —
// the customer is charged once — and ships the order.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/checkpointed_order
//
// A checkpoint commits a step's result; it cannot make the external call
// itself exactly once (an attempt can die between the call and the commit),
// so the charge also carries an idempotency key derived from the job id.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Order is what the shop submits.
type Order struct {
	ID    string `json:"id"`
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

// Receipt is what a placed order returns.
type Receipt struct {
	Reservation string `json:"reservation"`
	Charge      string `json:"charge"`
	Tracking    string `json:"tracking"`
}

// PlaceOrder reserves, charges and ships one order.
var PlaceOrder = boson.NewTask[Order, Receipt]("place-order")

// The order's steps.
var (
	Reserve = boson.NewStep[string]("reserve-stock")
	Charge  = boson.NewStep[string]("charge-card")
	Ship    = boson.NewStep[string]("ship")
)

// sideEffects counts calls to the outside world, which a real shop would
// make over the network.
type sideEffects struct {
	mu    sync.Mutex
	calls map[string]int
}

func (s *sideEffects) call(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
	return s.calls[name]
}

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "checkpointed_order:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("checkpointed_order", flag.ContinueOnError)
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

	world := &sideEffects{calls: map[string]int{}}
	err = boson.Register(worker, PlaceOrder, func(ctx context.Context, o Order) (Receipt, error) {
		info, _ := boson.Info(ctx)
		fmt.Fprintf(stdout, "attempt %d of order %s\n", info.Attempt, o.ID)
		res, err := Reserve.Run(ctx, func(ctx context.Context) (string, error) {
			n := world.call("reserve")
			fmt.Fprintf(stdout, "  reserve stock: 1 x %s (inventory call #%d)\n", o.SKU, n)
			return "RES-" + o.ID, nil
		})
		if err != nil {
			return Receipt{}, err
		}
		charge, err := Charge.Run(ctx, func(ctx context.Context) (string, error) {
			// The provider deduplicates on this key, should the
			// attempt die before the checkpoint commits.
			key := info.JobID + "/" + Charge.Name()
			n := world.call("charge")
			fmt.Fprintf(stdout, "  charge card: %d cents, idempotency key %s... (payment call #%d)\n", o.Cents, key[:8], n)
			return "CH-" + o.ID, nil
		})
		if err != nil {
			return Receipt{}, err
		}
		if info.Attempt == 1 {
			panic("nil map in the shipping label printer") // a crash after the charge
		}
		tracking, err := Ship.Run(ctx, func(ctx context.Context) (string, error) {
			n := world.call("ship")
			fmt.Fprintf(stdout, "  ship: label printed (carrier call #%d)\n", n)
			return "TRK-" + o.ID, nil
		})
		if err != nil {
			return Receipt{}, err
		}
		fmt.Fprintf(stdout, "  replayed: reservation %s, charge %s\n", res, charge)
		return Receipt{Reservation: res, Charge: charge, Tracking: tracking}, nil
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	h, err := boson.Spawn(ctx, client, PlaceOrder, Order{ID: "1042", SKU: "teapot", Cents: 3900},
		boson.WithRetry(core.RetryPolicy{Initial: 100 * time.Millisecond}))
	if err != nil {
		return err
	}
	receipt, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	runs, err := client.ListRuns(ctx, h.ID())
	if err != nil {
		return err
	}
	for _, r := range runs {
		msg, _, _ := strings.Cut(r.Error, "\n") // the first line; the stack follows
		fmt.Fprintf(stdout, "run %d: %s %s\n", r.Attempt, r.Status, msg)
	}
	fmt.Fprintf(stdout, "receipt: %+v\n", receipt)
	fmt.Fprintf(stdout, "done: reserved %d time(s), charged %d time(s), shipped %d time(s)\n",
		world.call("reserve")-1, world.call("charge")-1, world.call("ship")-1)
	return nil
}
