// Command router shows queues spread across two backends with a
// core.Router: queue "notifications" lives in memory (fast, and losing it
// on a restart is acceptable), queue "invoices" in an SQLite file
// (durable). One client spawns into both and one worker serves both; each
// job is stored only by the backend its queue is routed to.
//
// It needs no server:
//
//	go run ./examples/router
//
// The same works with any mix: Postgres for money, Redis for bulk
// notifications, NATS for another site.
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
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/examples/internal/exdb"
	boson "github.com/boson-go/boson/runtime"
)

// Tasks of the demo, one per queue.
var (
	Notify  = boson.NewTask[string, string]("push-notification")
	Invoice = boson.NewTask[int, string]("issue-invoice")
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "router:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("router", flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite file for the durable queue (default: a temporary file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	dbFile, removeDB, err := exdb.SQLiteFile(*dbPath, "boson-router-")
	if err != nil {
		return err
	}
	defer removeDB()

	fast := mem.New(mem.Options{Logger: quiet})
	defer fast.Close()
	durable, err := sqliteq.Open(ctx, dbFile, sqliteq.Options{Logger: quiet})
	if err != nil {
		return err
	}
	defer durable.Close()
	if err := durable.Migrate(ctx); err != nil {
		return err
	}

	// mem is the default backend; "invoices" is routed to SQLite.
	router := core.NewRouter(fast)
	if err := router.Register("sqlite", durable); err != nil {
		return err
	}
	if err := router.Route("invoices", "sqlite"); err != nil {
		return err
	}

	client, err := boson.NewRouterClient(router, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	worker, err := boson.NewRouterWorker(router, boson.WorkerOptions{
		Queues: []string{"notifications", "invoices"}, Logger: quiet, PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	if err := boson.Register(worker, Notify, func(ctx context.Context, msg string) (string, error) {
		return "pushed " + msg, nil
	}); err != nil {
		return err
	}
	if err := boson.Register(worker, Invoice, func(ctx context.Context, cents int) (string, error) {
		return fmt.Sprintf("invoice over %d.%02d EUR", cents/100, cents%100), nil
	}); err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	n, err := boson.Spawn(ctx, client, Notify, "your parcel is on its way", boson.WithQueue("notifications"))
	if err != nil {
		return err
	}
	inv, err := boson.Spawn(ctx, client, Invoice, 4999, boson.WithQueue("invoices"))
	if err != nil {
		return err
	}
	// where reports which backend stores a job.
	where := func(id string) string {
		_, inMem := fast.GetJob(ctx, id)
		_, inSQLite := durable.GetJob(ctx, id)
		switch {
		case inMem == nil && errors.Is(inSQLite, core.ErrNotFound):
			return "mem"
		case inSQLite == nil && errors.Is(inMem, core.ErrNotFound):
			return "sqlite"
		}
		return fmt.Sprintf("unclear (mem: %v, sqlite: %v)", inMem, inSQLite)
	}
	out, err := n.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "queue %-13s -> backend %-6s: %s\n", n.Queue(), where(n.ID()), out)
	out, err = inv.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "queue %-13s -> backend %-6s: %s\n", inv.Queue(), where(inv.ID()), out)

	// Reads by id search every backend of the router.
	job, err := client.GetJob(ctx, inv.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "client.GetJob finds the invoice job: %s, %s\n", job.Task, job.State)
	queues, err := client.ListQueues(ctx)
	if err != nil {
		return err
	}
	for _, q := range queues {
		fmt.Fprintf(stdout, "listed queue %s: %d succeeded\n", q.Queue, q.Jobs[core.StateSucceeded])
	}
	return nil
}
