// Command quickstart is boson's main example: typed tasks spawned, worked and
// awaited on the embedded SQLite backend, with no server to run.
//
// It defines one task, spawns a handful of jobs (one of which fails once, to
// show a retry), works them with an in-process worker, prints progress and
// each result, and ends with a one-line summary.
//
// Run it from the repository root:
//
//	go run ./examples/quickstart
//
// The queue lives in a temporary SQLite file that is removed at exit; pass
// -db path/to/file.db to keep it.
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

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/examples/internal/exdb"
	boson "github.com/boson-go/boson/runtime"
)

// WordCount is the input of the count-words task.
type WordCount struct {
	Text string `json:"text"`
}

// Counted is its output.
type Counted struct {
	Words int `json:"words"`
	Chars int `json:"chars"`
}

// CountWords ties a stable, persisted name to its input and output types.
// Producers and workers share this value; there is no registry.
var CountWords = boson.NewTask[WordCount, Counted]("count-words")

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite file to keep the queue in (default: a temporary file)")
	verbose := fs.Bool("v", false, "log what the worker does")
	if err := fs.Parse(args); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	dbFile, removeDB, err := exdb.SQLiteFile(*dbPath, "boson-quickstart-")
	if err != nil {
		return err
	}
	defer removeDB()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if *verbose {
		logger = slog.Default()
	}

	// 1. Open the embedded backend and create its tables.
	backend, err := sqliteq.Open(ctx, dbFile, sqliteq.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer backend.Close()
	if err := backend.Migrate(ctx); err != nil {
		return err
	}

	// 2. A worker serves the default queue. The handler fails the first
	//    attempt of one job to show a retry: any error is retried with
	//    backoff, boson.Permanent(err) would fail the job at once.
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Concurrency: 4, Logger: logger})
	if err != nil {
		return err
	}
	var flaky atomic.Bool
	err = boson.Register(worker, CountWords, func(ctx context.Context, in WordCount) (Counted, error) {
		if in.Text == "flaky network" && !flaky.Swap(true) {
			return Counted{}, errors.New("connection reset (first attempt fails on purpose)")
		}
		words := 0
		inWord := false
		for _, r := range in.Text {
			space := r == ' ' || r == '\n' || r == '\t'
			if !space && !inWord {
				words++
			}
			inWord = !space
		}
		return Counted{Words: words, Chars: len([]rune(in.Text))}, nil
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	// 3. Spawn a handful of tasks. A short retry policy keeps the demo quick.
	client, err := boson.NewClient(backend, boson.ClientOptions{})
	if err != nil {
		return err
	}
	texts := []string{
		"hello world",
		"a durable job queue for Go",
		"flaky network",
		"typed tasks with leases and fencing",
		"one small contract, many stores",
		"retries, steps, sleeps and waits",
	}
	start := time.Now()
	handles := make([]*boson.Handle[Counted], len(texts))
	for i, text := range texts {
		h, err := boson.Spawn(ctx, client, CountWords, WordCount{Text: text},
			boson.WithRetry(core.RetryPolicy{Initial: 50 * time.Millisecond, Factor: 2, Max: time.Second}))
		if err != nil {
			return err
		}
		handles[i] = h
	}
	fmt.Fprintf(stdout, "spawned %d count-words tasks into %s\n", len(handles), dbFile)

	// 4. Wait for each result; the handle wakes on the backend's notifications.
	for i, h := range handles {
		out, err := h.Wait(ctx)
		if err != nil {
			return fmt.Errorf("task %s: %w", h.ID(), err)
		}
		job, err := h.Snapshot(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "[%d/%d] %-38q → %d words, %2d chars (attempt %d)\n",
			i+1, len(handles), texts[i], out.Words, out.Chars, job.Attempt)
	}

	counts, err := backend.CountJobs(ctx, core.JobFilter{})
	if err != nil {
		return err
	}
	m := worker.Metrics()
	fmt.Fprintf(stdout, "done: %d succeeded, %d failed attempts retried, %d executions in %v\n",
		counts[core.StateSucceeded], m.Total.Failed, m.Total.Executions, time.Since(start).Round(time.Millisecond))
	return nil
}
