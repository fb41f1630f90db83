// Command flow_control shows boson's flow control on the embedded SQLite
// store: a per-tenant concurrency limit, a sequence that runs one account's
// changes one at a time in spawn order, and a unique key that holds only
// while its job is active.
//
// It needs no server:
//
//	go run ./examples/flow_control
//
// The store enforces every rule at claim, across every worker and process,
// so the in-process worker below, with eight slots, still never runs more
// than two exports of one tenant at once.
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

// Export is one tenant's report export.
type Export struct {
	Tenant string `json:"tenant"`
	N      int    `json:"n"`
}

// Change is one change to an account, to apply in order.
type Change struct {
	Account string `json:"account"`
	Seq     int    `json:"seq"`
}

// Rebuild asks for a search index to be rebuilt.
type Rebuild struct {
	Index string `json:"index"`
}

var (
	// ExportReport is limited to two running jobs per tenant.
	ExportReport = boson.NewTask[Export, struct{}]("export-report")
	// ApplyChange jobs of one account run in a sequence.
	ApplyChange = boson.NewTask[Change, struct{}]("apply-change")
	// RebuildIndex is deduplicated by its arguments while one is active.
	RebuildIndex = boson.NewTask[Rebuild, struct{}]("rebuild-index")
)

const perTenant = 2

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "flow_control:", err)
		os.Exit(1)
	}
}

// peaks tracks how many handlers of each key run at once.
type peaks struct {
	mu        sync.Mutex
	cur, peak map[string]int
}

func (p *peaks) enter(k string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur[k]++
	p.peak[k] = max(p.peak[k], p.cur[k])
}

func (p *peaks) leave(k string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur[k]--
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("flow_control", flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite file to keep the queue in (default: a temporary file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	dbFile, removeDB, err := exdb.SQLiteFile(*dbPath, "boson-flow-")
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
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Concurrency: 8, Logger: quiet, PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}

	// 1. A per-tenant limit, declared with the handler: the worker stores
	//    it in the task's config when it starts.
	tenants := &peaks{cur: map[string]int{}, peak: map[string]int{}}
	if err := boson.Register(worker, ExportReport, func(ctx context.Context, e Export) (struct{}, error) {
		tenants.enter(e.Tenant)
		defer tenants.leave(e.Tenant)
		time.Sleep(40 * time.Millisecond)
		return struct{}{}, nil
	}, boson.WithFlowLimits(boson.FlowLimits{MaxRunningPerKey: perTenant})); err != nil {
		return err
	}

	// 2. A sequence: record the order in which one account's changes run.
	var (
		orderMu sync.Mutex
		order   = map[string][]string{}
	)
	accounts := &peaks{cur: map[string]int{}, peak: map[string]int{}}
	if err := boson.Register(worker, ApplyChange, func(ctx context.Context, c Change) (struct{}, error) {
		accounts.enter(c.Account)
		defer accounts.leave(c.Account)
		orderMu.Lock()
		order[c.Account] = append(order[c.Account], fmt.Sprint(c.Seq))
		orderMu.Unlock()
		time.Sleep(10 * time.Millisecond)
		return struct{}{}, nil
	}); err != nil {
		return err
	}

	// 3. A rebuild that waits until told to finish.
	finish := make(chan struct{})
	if err := boson.Register(worker, RebuildIndex, func(ctx context.Context, r Rebuild) (struct{}, error) {
		select {
		case <-finish:
		case <-ctx.Done():
		}
		return struct{}{}, nil
	}); err != nil {
		return err
	}

	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())
	cfg, err := backend.GetTaskConfig(ctx, ExportReport.Name())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stored limit: %s max_running_per_key=%d\n", cfg.Task, cfg.MaxRunningPerKey)

	// Limits: 3 tenants x 5 exports on 8 slots.
	var waits []func() error
	for n := range 5 {
		for _, t := range []string{"acme", "globex", "initech"} {
			h, err := boson.Spawn(ctx, client, ExportReport, Export{Tenant: t, N: n}, boson.WithLimitKey(t))
			if err != nil {
				return err
			}
			waits = append(waits, func() error { _, err := h.Wait(ctx); return err })
		}
	}
	// Sequence: five changes of one account, spawned in order, among
	// changes of another account that do not wait for them.
	for seq := 1; seq <= 5; seq++ {
		for _, a := range []string{"account-42", "account-7"} {
			h, err := boson.Spawn(ctx, client, ApplyChange, Change{Account: a, Seq: seq}, boson.WithSequenceKey(a))
			if err != nil {
				return err
			}
			waits = append(waits, func() error { _, err := h.Wait(ctx); return err })
		}
	}
	for _, w := range waits {
		if err := w(); err != nil {
			return err
		}
	}
	for _, t := range []string{"acme", "globex", "initech"} {
		fmt.Fprintf(stdout, "tenant %s: 5 exports, at most %d running at once (limit %d)\n", t, tenants.peak[t], perTenant)
	}
	for _, a := range []string{"account-42", "account-7"} {
		fmt.Fprintf(stdout, "sequence %s: changes ran in spawn order %s, at most %d at once\n", a, strings.Join(order[a], " "), accounts.peak[a])
	}

	// Unique while active: the key is the arguments.
	unique := []boson.SpawnOption{boson.WithUniqueArgs(), boson.WithUnique(core.UniqueWhileActive)}
	first, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "products"}, unique...)
	if err != nil {
		return err
	}
	dup, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "products"}, unique...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rebuild products while one is active: reused=%v, same job=%v\n", dup.Reused(), dup.ID() == first.ID())
	other, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "orders"}, unique...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rebuild orders meanwhile: a new job=%v\n", !other.Reused())
	close(finish)
	if _, err := first.Wait(ctx); err != nil {
		return err
	}
	again, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "products"}, unique...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rebuild products after the first finished: a new job=%v\n", !again.Reused() && again.ID() != first.ID())
	for _, h := range []*boson.Handle[struct{}]{other, again} {
		if _, err := h.Wait(ctx); err != nil {
			return err
		}
	}

	// A store that does not enforce flow control (here the same store
	// seen through the bare QueueBackend interface) refuses such a spawn
	// instead of running it unlimited.
	plain, err := boson.NewClient(struct{ core.QueueBackend }{backend}, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	_, err = boson.Spawn(ctx, plain, ExportReport, Export{Tenant: "acme"}, boson.WithLimitKey("acme"))
	fmt.Fprintf(stdout, "a limit key on a store without flow control: refused=%v\n", errors.Is(err, core.ErrUnsupported))
	fmt.Fprintln(stdout, "done")
	return nil
}
