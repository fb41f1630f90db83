// Command multistep_workflow shows a task built from checkpointed steps,
// replayed across a failed attempt: the first attempt fetches and
// transforms, then fails to load; the retry replays the fetch and the
// transform from their checkpoints, without running them again, and loads.
//
// It keeps the queue in a temporary SQLite file and needs no server:
//
//	go run ./examples/multistep_workflow
//
// Pass -db path/to/file.db to keep the queue.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/examples/internal/exdb"
	boson "github.com/boson-go/boson/runtime"
)

// Import is a nightly import of one partner's price list.
var Import = boson.NewTask[string, int]("import-prices")

// The steps of the import. Their names and value types are part of the
// workflow's durable shape: keep them stable while imports may be running.
var (
	Fetch     = boson.NewStep[[]string]("fetch")
	Transform = boson.NewStep[[]string]("transform")
	Load      = boson.NewStep[int]("load")
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "multistep_workflow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("multistep_workflow", flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite file to keep the queue in (default: a temporary file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	dbFile, removeDB, err := exdb.SQLiteFile(*dbPath, "boson-multistep-")
	if err != nil {
		return err
	}
	defer removeDB()

	backend, err := sqliteq.Open(ctx, dbFile, sqliteq.Options{Logger: quiet})
	if err != nil {
		return err
	}
	defer backend.Close()
	if err := backend.Migrate(ctx); err != nil {
		return err
	}
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}

	var mu sync.Mutex
	trace := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, format+"\n", a...)
	}
	// step runs one step and says whether its body ran or was replayed.
	step := func(ctx context.Context, s boson.Step[[]string], body func() []string) ([]string, error) {
		info, _ := boson.Info(ctx)
		ran := false
		v, err := s.Run(ctx, func(ctx context.Context) ([]string, error) {
			ran = true
			return body(), nil
		})
		if err == nil {
			what := "replayed from its checkpoint"
			if ran {
				what = "ran"
			}
			trace("  attempt %d: %-9s %s -> %v", info.Attempt, s.Name(), what, v)
		}
		return v, err
	}

	err = boson.Register(worker, Import, func(ctx context.Context, partner string) (int, error) {
		info, _ := boson.Info(ctx)
		rows, err := step(ctx, Fetch, func() []string {
			return []string{"apple;1.20", "pear;0.95", "plum;2.10"}
		})
		if err != nil {
			return 0, err
		}
		clean, err := step(ctx, Transform, func() []string {
			out := make([]string, len(rows))
			for i, r := range rows {
				out[i] = strings.ToUpper(strings.ReplaceAll(r, ";", "="))
			}
			return out
		})
		if err != nil {
			return 0, err
		}
		return Load.Run(ctx, func(ctx context.Context) (int, error) {
			if info.Attempt == 1 {
				trace("  attempt %d: %-9s failed: warehouse is read-only for maintenance", info.Attempt, Load.Name())
				return 0, errors.New("warehouse is read-only for maintenance")
			}
			trace("  attempt %d: %-9s ran -> %d rows written", info.Attempt, Load.Name(), len(clean))
			return len(clean), nil
		})
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	fmt.Fprintln(stdout, "importing prices of partner acme")
	h, err := boson.Spawn(ctx, client, Import, "acme",
		boson.WithRetry(core.RetryPolicy{Initial: 100 * time.Millisecond}))
	if err != nil {
		return err
	}
	n, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	cps, err := client.Checkpoints(ctx, h.ID())
	if err != nil {
		return err
	}
	names := make([]string, len(cps))
	for i, c := range cps {
		names[i] = c.Step
	}
	job, err := h.Snapshot(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done: %d rows imported in %d attempts; checkpoints %s\n", n, job.Attempt, strings.Join(names, ", "))
	return nil
}
