// Command fan_in shows fan-in on the embedded SQLite store: a parent task
// spawns children and waits for them with boson.AwaitAll or
// boson.AwaitAny. While it waits it is parked in the store: it holds no
// worker slot and no lease, and nothing polls. The store wakes it in the
// same step as the child's ending that satisfies the wait; the parent then
// runs again, replays its checkpointed steps, and reads its children's
// results.
//
// It needs no server:
//
//	go run ./examples/fan_in
//
// 1. A report of eight sections on a worker of two slots: the parent
// spawns the sections into its own queue and parks, the two slots run the
// eight sections, and the parent is woken once to assemble them.
// 2. A quote asked of three mirrors: AwaitAny returns the first to answer
// (recorded, so a replay picks the same one), and the parent cancels the
// others.
// 3. A parent parked with CancelChildrenOnCancel is cancelled: its
// children, which no worker serves, are cancelled with it.
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
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/examples/internal/exdb"
	boson "github.com/boson-go/boson/runtime"
)

// Tasks of the example.
var (
	BuildReport   = boson.NewTask[int, string]("build-report")
	RenderSection = boson.NewTask[int, string]("render-section")
	GetQuote      = boson.NewTask[string, string]("get-quote")
	AskMirror     = boson.NewTask[string, string]("ask-mirror")
	Gather        = boson.NewTask[int, int]("gather")
	Slow          = boson.NewTask[int, int]("slow")
)

// sectionIDs is the step that spawns the sections: the same children on
// every run of the parent.
var sectionIDs = boson.NewStep[[]string]("spawn-sections")

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fan_in:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("fan_in", flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite file to keep the queue in (default: a temporary file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	dbFile, removeDB, err := exdb.SQLiteFile(*dbPath, "boson-fanin-")
	if err != nil {
		return err
	}
	defer removeDB()
	quiet := slog.New(slog.DiscardHandler)
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
	// Two slots for the reports queue, four for the quotes queue; the
	// slow queue has no worker at all.
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{
		Queues: []string{"reports"}, Concurrency: 2, Logger: quiet, PollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	quotes, err := boson.NewWorker(backend, boson.WorkerOptions{
		Queues: []string{"quotes"}, Concurrency: 4, Logger: quiet, PollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		return err
	}

	// 1. The report.
	var (
		parentRuns       atomic.Int32
		running, busiest atomic.Int32
	)
	if err := boson.Register(worker, RenderSection, func(ctx context.Context, n int) (string, error) {
		now := running.Add(1)
		defer running.Add(-1)
		for b := busiest.Load(); now > b && !busiest.CompareAndSwap(b, now); b = busiest.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		return fmt.Sprintf("section %d", n), nil
	}); err != nil {
		return err
	}
	if err := boson.Register(worker, BuildReport, func(ctx context.Context, n int) (string, error) {
		parentRuns.Add(1)
		ids, err := sectionIDs.Run(ctx, func(ctx context.Context) ([]string, error) {
			hs, err := boson.SpawnBatch(ctx, client, RenderSection, seq(n), boson.WithQueue("reports"))
			if err != nil {
				return nil, err
			}
			ids := make([]string, len(hs))
			for i, h := range hs {
				ids[i] = h.ID()
			}
			return ids, nil
		})
		if err != nil {
			return "", err
		}
		hs, err := handles(ctx, client, RenderSection, ids)
		if err != nil {
			return "", err
		}
		sections, err := boson.AwaitAll(ctx, hs) // parks the first run
		if err != nil {
			return "", err
		}
		return strings.Join(sections, ", "), nil
	}); err != nil {
		return err
	}

	// 2. The quote: the mirrors answer when told to.
	answer := map[string]chan struct{}{"eu": make(chan struct{}), "us": make(chan struct{}), "ap": make(chan struct{})}
	if err := boson.Register(quotes, AskMirror, func(ctx context.Context, mirror string) (string, error) {
		select {
		case <-answer[mirror]:
			return "42.00 EUR from " + mirror, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}); err != nil {
		return err
	}
	if err := boson.Register(quotes, GetQuote, func(ctx context.Context, item string) (string, error) {
		info, _ := boson.Info(ctx)
		var hs []*boson.Handle[string]
		for _, m := range []string{"eu", "us", "ap"} {
			h, err := boson.Spawn(ctx, client, AskMirror, m, boson.WithQueue("quotes"), boson.WithIdempotencyKey(info.JobID+"/"+m))
			if err != nil {
				return "", err
			}
			hs = append(hs, h)
		}
		i, quote, err := boson.AwaitAny(ctx, hs)
		if err != nil {
			return "", err
		}
		for j, h := range hs {
			if j != i {
				if err := h.Cancel(ctx, "another mirror answered"); err != nil && !errors.Is(err, core.ErrInvalidState) {
					return "", err
				}
			}
		}
		return quote, nil
	}); err != nil {
		return err
	}

	// 3. A parent whose children no worker serves.
	var gathered sync.Map // parent id -> child ids
	if err := boson.Register(worker, Gather, func(ctx context.Context, n int) (int, error) {
		info, _ := boson.Info(ctx)
		reqs := make([]boson.Request, n)
		for i := range reqs {
			reqs[i] = Slow.Request(i, boson.WithQueue("slow"), boson.WithIdempotencyKey(fmt.Sprintf("%s/%d", info.JobID, i)))
		}
		s, err := client.SpawnRequests(ctx, reqs...)
		if err != nil {
			return 0, err
		}
		ids := make([]string, len(s))
		for i := range s {
			ids[i] = s[i].Job.ID
		}
		gathered.Store(info.JobID, ids)
		hs, err := handles(ctx, client, Slow, ids)
		if err != nil {
			return 0, err
		}
		_, err = boson.AwaitAll(ctx, hs, boson.CancelChildrenOnCancel())
		return n, err
	}); err != nil {
		return err
	}

	for _, w := range []*boson.Worker{worker, quotes} {
		if err := w.Start(ctx); err != nil {
			return err
		}
		defer w.Shutdown(context.Background())
	}

	report, err := boson.Spawn(ctx, client, BuildReport, 8, boson.WithQueue("reports"))
	if err != nil {
		return err
	}
	out, err := report.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", out)
	fmt.Fprintf(stdout, "report: the parent ran %d times (parked, then woken); the sections ran on the 2 slots, never more than 2 at once: %v\n", parentRuns.Load(), busiest.Load() <= 2)
	if err := printWait(ctx, stdout, backend, report.ID(), "report"); err != nil {
		return err
	}

	quote, err := boson.Spawn(ctx, client, GetQuote, "widget", boson.WithQueue("quotes"))
	if err != nil {
		return err
	}
	if err := parked(ctx, quote); err != nil {
		return err
	}
	close(answer["us"])
	q, err := quote.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "quote: %s; the other mirrors were cancelled\n", q)
	close(answer["eu"])
	close(answer["ap"])

	g, err := boson.Spawn(ctx, client, Gather, 3, boson.WithQueue("reports"))
	if err != nil {
		return err
	}
	if err := parked(ctx, g); err != nil {
		return err
	}
	if err := printWait(ctx, stdout, backend, g.ID(), "gather"); err != nil {
		return err
	}
	if err := g.Cancel(ctx, "no longer needed"); err != nil {
		return err
	}
	v, _ := gathered.Load(g.ID())
	cancelled := 0
	for _, id := range v.([]string) {
		j, err := backend.GetJob(ctx, id)
		if err != nil {
			return err
		}
		if j.State == core.StateCancelled {
			cancelled++
		}
	}
	fmt.Fprintf(stdout, "gather: cancelled while parked; %d of 3 children cancelled with it\n", cancelled)
	fmt.Fprintln(stdout, "done")
	return nil
}

// printWait prints the job's wait the way the dashboard and "boson jobs
// get" show it.
func printWait(ctx context.Context, stdout io.Writer, b core.QueueBackend, id, label string) error {
	aw, ok := b.(core.Awaiter)
	if !ok {
		return fmt.Errorf("%w: the store keeps no waits", core.ErrUnsupported)
	}
	w, err := aw.JobWait(ctx, id)
	if err != nil {
		return err
	}
	j, err := b.GetJob(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: wait: %s\n", label, w.Describe(j))
	return nil
}

// parked waits until the task of h is parked on its children.
func parked[Out any](ctx context.Context, h *boson.Handle[Out]) error {
	for {
		j, err := h.Snapshot(ctx)
		if err != nil {
			return err
		}
		if j.State == core.StateSleeping {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// handles rebuilds the typed handles of stored jobs of task t.
func handles[In, Out any](ctx context.Context, c *boson.Client, t boson.Task[In, Out], ids []string) ([]*boson.Handle[Out], error) {
	hs := make([]*boson.Handle[Out], len(ids))
	for i, id := range ids {
		h, err := boson.HandleFor(ctx, c, t, id)
		if err != nil {
			return nil, err
		}
		hs[i] = h
	}
	return hs, nil
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}
