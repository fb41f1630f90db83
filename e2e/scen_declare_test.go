package e2e_test

import (
	"errors"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var declareScenarios = []scenario{
	{"declared_queues", func(e *env) {
		strict, err := boson.NewClient(e.b, boson.ClientOptions{Clock: e.clock, Logger: quiet, PollInterval: 20 * time.Millisecond, StrictQueues: true})
		e.must(err)

		// A typo in a queue name is refused, and nothing is stored.
		if _, err := boson.Spawn(e.ctx, strict, echoTask, 1, boson.WithQueue("ordres")); !errors.Is(err, boson.ErrQueueNotDeclared) || !errors.Is(err, core.ErrNotFound) {
			e.Fatalf("strict spawn to an undeclared queue: %v", err)
		}
		if e.factory.TxEnqueue {
			tx, commit, _ := e.factory.BeginTx(e.ctx, e, e.b)
			if _, err := boson.SpawnTx(e.ctx, strict, tx, echoTask, 1, boson.WithQueue("ordres")); !errors.Is(err, boson.ErrQueueNotDeclared) {
				e.Fatalf("strict transactional spawn to an undeclared queue: %v", err)
			}
			e.must(commit())
		}
		if n, err := e.b.CountJobs(e.ctx, core.JobFilter{}); err != nil || len(nonZeroCounts(n)) != 0 {
			e.Fatalf("jobs after refused spawns: %v, %v", n, err)
		}

		// Declaring is idempotent and checks the stored config.
		cfg := core.QueueConfig{Queue: "orders", RetentionTTL: 48 * time.Hour, CleanupLimit: 100}
		stored, created, err := e.client.CreateQueue(e.ctx, cfg)
		if err != nil || !created || stored != cfg {
			e.Fatalf("CreateQueue = %+v, %v, %v", stored, created, err)
		}
		if stored, created, err = strict.CreateQueue(e.ctx, cfg); err != nil || created || stored != cfg {
			e.Fatalf("repeat CreateQueue = %+v, %v, %v", stored, created, err)
		}
		other := cfg
		other.RetentionTTL = time.Hour
		if stored, _, err = e.client.CreateQueue(e.ctx, other); !errors.Is(err, boson.ErrQueueConflict) || stored != cfg {
			e.Fatalf("CreateQueue with another retention = %+v, %v; want ErrQueueConflict and the stored config", stored, err)
		}
		if got, err := e.b.GetQueueConfig(e.ctx, "orders"); err != nil || got != cfg {
			e.Fatalf("config after the conflict = %+v, %v", got, err)
		}

		// The strict client spawns to the declared queue, and a worker runs it.
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"orders"} })
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		h, err := boson.Spawn(e.ctx, strict, echoTask, 7, boson.WithQueue("orders"))
		e.must(err)
		if v, err := h.Wait(e.ctx); err != nil || v != 7 {
			e.Fatalf("result %v, %v", v, err)
		}
		if e.factory.TxEnqueue {
			tx, commit, _ := e.factory.BeginTx(e.ctx, e, e.b)
			th, err := boson.SpawnTx(e.ctx, strict, tx, echoTask, 8, boson.WithQueue("orders"))
			e.must(err)
			e.must(commit())
			if v, err := th.Wait(e.ctx); err != nil || v != 8 {
				e.Fatalf("transactional result %v, %v", v, err)
			}
		}
		qs, err := e.b.ListQueues(e.ctx)
		e.must(err)
		for _, q := range qs {
			if q.Declared != (q.Queue == "orders") {
				e.Fatalf("ListQueues: %s declared %v", q.Queue, q.Declared)
			}
		}

		// Deleting the queue undeclares it: the strict client refuses it again.
		e.must(w.Shutdown(e.ctx))
		_, err = strict.DeleteQueue(e.ctx, "orders")
		e.must(err)
		if _, err := boson.Spawn(e.ctx, strict, echoTask, 9, boson.WithQueue("orders")); !errors.Is(err, boson.ErrQueueNotDeclared) {
			e.Fatalf("strict spawn after DeleteQueue: %v", err)
		}
	}},
}

// nonZeroCounts returns m without its zero counts (stores differ in
// whether they report them).
func nonZeroCounts[K comparable](m map[K]int64) map[K]int64 {
	out := map[K]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
