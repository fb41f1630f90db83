// Command durable_delay shows a durable sleep that holds no worker: a
// trial-reminder task sends a welcome mail, then sleeps. The wake time is
// stored and the claim released, so its worker stops at once with nothing
// to drain. Another worker with a single slot serves other work, then wakes
// the task when the time has come: it replays the welcome mail from its
// checkpoint, passes the sleep and sends the reminder, in the same attempt.
//
// It keeps the queue in a temporary SQLite file and needs no server:
//
//	go run ./examples/durable_delay
//
// The sleep lasts a second here (-sleep); in production it would be days.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/examples/internal/exdb"
	boson "github.com/boson-go/boson/runtime"
)

// Tasks of the demo.
var (
	TrialReminder = boson.NewTask[string, string]("trial-reminder")
	Resize        = boson.NewTask[int, int]("resize")
)

// Welcome is the step that mails the welcome message.
var Welcome = boson.NewStep[string]("welcome-mail")

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "durable_delay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("durable_delay", flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite file to keep the queue in (default: a temporary file)")
	sleep := fs.Duration("sleep", time.Second, "how long the trial reminder sleeps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stdout = &lockedWriter{w: stdout} // handlers print from their own goroutines
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	dbFile, removeDB, err := exdb.SQLiteFile(*dbPath, "boson-delay-")
	if err != nil {
		return err
	}
	defer removeDB()
	// SyncNormal: cheaper commits that survive a process crash (not a
	// power cut), which keeps the demo quick.
	backend, err := sqliteq.Open(ctx, dbFile, sqliteq.Options{Logger: quiet, Synchronous: sqliteq.SyncNormal})
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

	var welcomes atomic.Int32
	start := time.Now()
	since := func() time.Duration { return time.Since(start).Round(100 * time.Millisecond) }
	// newWorker returns a worker with ONE slot and both handlers.
	newWorker := func(name string) (*boson.Worker, error) {
		w, err := boson.NewWorker(backend, boson.WorkerOptions{
			ID: name, Concurrency: 1, PollInterval: 50 * time.Millisecond, Logger: quiet,
		})
		if err != nil {
			return nil, err
		}
		err = boson.Register(w, TrialReminder, func(ctx context.Context, user string) (string, error) {
			info, _ := boson.Info(ctx)
			mail, err := Welcome.Run(ctx, func(ctx context.Context) (string, error) {
				welcomes.Add(1)
				fmt.Fprintf(stdout, "[%v] %s: welcome mail sent to %s\n", since(), info.WorkerID, user)
				return "welcome-" + user, nil
			})
			if err != nil {
				return "", err
			}
			// The first time, this records the wake time and returns an
			// error the handler passes on: the worker releases the claim.
			if err := boson.SleepFor(ctx, "trial", *sleep); err != nil {
				fmt.Fprintf(stdout, "[%v] %s: %s sleeps, the slot is free\n", since(), info.WorkerID, user)
				return "", err
			}
			fmt.Fprintf(stdout, "[%v] %s: woke up, reminder sent to %s (after %s)\n", since(), info.WorkerID, user, mail)
			return "reminded " + user, nil
		})
		if err != nil {
			return nil, err
		}
		err = boson.Register(w, Resize, func(ctx context.Context, n int) (int, error) {
			fmt.Fprintf(stdout, "[%v] %s: resized image %d\n", since(), w.ID(), n)
			return n, nil
		})
		return w, err
	}

	// worker-a takes the reminder, which mails and then sleeps.
	first, err := newWorker("worker-a")
	if err != nil {
		return err
	}
	if err := first.Start(ctx); err != nil {
		return err
	}
	h, err := boson.Spawn(ctx, client, TrialReminder, "ada@example.com")
	if err != nil {
		return err
	}
	for {
		job, err := h.Snapshot(ctx)
		if err != nil {
			return err
		}
		if job.State == core.StateSleeping {
			fmt.Fprintf(stdout, "[%v] reminder is %s until its wake time\n", since(), job.State)
			break
		}
		if job.State.Terminal() {
			return fmt.Errorf("the reminder ended %s before it slept", job.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	// A sleeping task holds no slot and no goroutine: the worker stops at
	// once, with nothing to drain.
	if err := first.Shutdown(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "[%v] worker-a stopped (suspended %d task, holding nothing)\n", since(), first.Metrics().Total.Suspended)

	// worker-b, also with ONE slot, serves other work during the sleep and
	// then wakes the reminder.
	resizes, err := boson.SpawnBatch(ctx, client, Resize, []int{1, 2, 3})
	if err != nil {
		return err
	}
	second, err := newWorker("worker-b")
	if err != nil {
		return err
	}
	if err := second.Start(ctx); err != nil {
		return err
	}
	defer second.Shutdown(context.Background())
	for _, r := range resizes {
		if _, err := r.Wait(ctx); err != nil {
			return err
		}
	}
	out, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	job, err := h.Snapshot(ctx)
	if err != nil {
		return err
	}
	slept := job.FinishedAt.Sub(job.FirstStartedAt) >= *sleep
	fmt.Fprintf(stdout, "done: %q, %d welcome mail, still attempt %d, slept at least %v: %v\n",
		out, welcomes.Load(), job.Attempt, *sleep, slept)
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
