package boson_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

type Export struct {
	Tenant string `json:"tenant"`
	Report string `json:"report"`
}

var ExportReport = boson.NewTask[Export, struct{}]("export-report")

// Limit keys: at most two exports of one tenant run at once, across every
// worker and process, however many slots the workers have.
func ExampleWithLimitKey() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})

	// The limit is part of the task's stored config.
	if err := client.SetFlowLimits(ctx, ExportReport.Name(), boson.FlowLimits{MaxRunningPerKey: 2}); err != nil {
		fmt.Println(err)
		return
	}
	h, err := boson.Spawn(ctx, client, ExportReport, Export{Tenant: "acme", Report: "q3"}, boson.WithLimitKey("acme"))
	if err != nil {
		fmt.Println(err)
		return
	}
	j, _ := h.Snapshot(ctx)
	cfg, _ := client.GetTaskConfig(ctx, ExportReport.Name())
	fmt.Println("limit key:", j.LimitKey, "limit per key:", cfg.MaxRunningPerKey)
	// Output: limit key: acme limit per key: 2
}

// Flow limits declared with the handler are stored by the worker when it
// starts, keeping the config's other fields.
func ExampleWithFlowLimits() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	_ = client.PutTaskConfig(ctx, core.TaskConfig{Task: ExportReport.Name(), Priority: 5})

	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet})
	err := boson.Register(worker, ExportReport, func(ctx context.Context, e Export) (struct{}, error) {
		return struct{}{}, nil
	}, boson.WithFlowLimits(boson.FlowLimits{MaxRunning: 10, MaxRunningPerKey: 2, MaxStartsPerSecond: 50}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := worker.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer worker.Shutdown(ctx)
	cfg, _ := client.GetTaskConfig(ctx, ExportReport.Name())
	fmt.Println(cfg.Priority, cfg.MaxRunning, cfg.MaxRunningPerKey, cfg.MaxStartsPerSecond)
	// Output: 5 10 2 50
}

type Change struct {
	Account string `json:"account"`
	Seq     int    `json:"seq"`
}

var ApplyChange = boson.NewTask[Change, struct{}]("apply-change")

// Sequences: the changes of one account run one at a time, in the order
// they were spawned, even on a worker with many slots.
func ExampleWithSequenceKey() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Concurrency: 8, Logger: quiet, PollInterval: 10 * time.Millisecond})
	var (
		mu    sync.Mutex
		order []int
	)
	_ = boson.Register(worker, ApplyChange, func(ctx context.Context, c Change) (struct{}, error) {
		mu.Lock()
		order = append(order, c.Seq)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return struct{}{}, nil
	})
	var hs []*boson.Handle[struct{}]
	for seq := 1; seq <= 5; seq++ {
		h, err := boson.Spawn(ctx, client, ApplyChange, Change{Account: "42", Seq: seq}, boson.WithSequenceKey("account-42"))
		if err != nil {
			fmt.Println(err)
			return
		}
		hs = append(hs, h)
	}
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)
	for _, h := range hs {
		if _, err := h.Wait(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println(order)
	// Output: [1 2 3 4 5]
}

type Rebuild struct {
	Index string `json:"index"`
}

var RebuildIndex = boson.NewTask[Rebuild, struct{}]("rebuild-index")

// Unique while active: a second spawn with the same key returns the job
// that is still queued; once that job is terminal the key is free again.
func ExampleWithUnique() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	opts := []boson.SpawnOption{boson.WithIdempotencyKey("rebuild-products"), boson.WithUnique(core.UniqueWhileActive)}

	first, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "products"}, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	dup, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "products"}, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("while queued, reused:", dup.Reused())

	if err := first.Cancel(ctx, "not needed"); err != nil {
		fmt.Println(err)
		return
	}
	next, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "products"}, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after it ended, a new job:", !next.Reused() && next.ID() != first.ID())
	// Output:
	// while queued, reused: true
	// after it ended, a new job: true
}

// Uniqueness by period: one job per key per window of the store's clock.
func ExampleWithUniquePeriod() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	opts := []boson.SpawnOption{boson.WithIdempotencyKey("daily-digest"), boson.WithUniquePeriod(24 * time.Hour)}
	a, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "digest"}, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: "digest"}, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	j, _ := a.Snapshot(ctx)
	fmt.Println(b.Reused(), j.Unique, j.UniquePeriod)
	// Output: true by_period 24h0m0s
}

// Uniqueness by arguments: the key is derived from the task name and the
// canonical JSON of the input, so equal arguments share one job. The
// default mode (until retention) works on every backend.
func ExampleWithUniqueArgs() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})

	var hs []*boson.Handle[struct{}]
	for _, index := range []string{"products", "products", "orders"} {
		h, err := boson.Spawn(ctx, client, RebuildIndex, Rebuild{Index: index}, boson.WithUniqueArgs())
		if err != nil {
			fmt.Println(err)
			return
		}
		hs = append(hs, h)
	}
	a, b, c := hs[0], hs[1], hs[2]
	key, _ := boson.UniqueArgsKey(RebuildIndex.Name(), []byte(`{ "index": "products" }`))
	j, _ := a.Snapshot(ctx)
	fmt.Println(b.Reused(), c.Reused(), j.IdempotencyKey == key)
	// Output: true false true
}

func ExampleCanonicalJSON() {
	out, _ := boson.CanonicalJSON([]byte(`{ "b": [1, 2.50], "a": {"y": null, "x": "é\n"} }`))
	fmt.Println(string(out))
	// Output: {"a":{"x":"é\n","y":null},"b":[1,2.50]}
}
