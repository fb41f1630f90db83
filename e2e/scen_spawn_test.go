package e2e_test

import (
	"context"
	"errors"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var spawnScenarios = []scenario{
	{"idempotency_reuse_while_queued", func(e *env) {
		h1, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithIdempotencyKey("order-1"))
		e.must(err)
		h2, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithIdempotencyKey("order-1"), boson.WithPriority(3), boson.WithDelay(time.Hour))
		e.must(err)
		if !h2.Reused() || h2.ID() != h1.ID() || h1.Reused() {
			e.Fatalf("reuse: %s %s %v", h1.ID(), h2.ID(), h2.Reused())
		}
		n, _ := e.b.CountJobs(e.ctx, core.JobFilter{})
		if n[core.StateQueued] != 1 {
			e.Fatalf("counts %v", n)
		}
	}},
	{"idempotency_conflict", func(e *env) {
		_, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithIdempotencyKey("k"))
		e.must(err)
		for name, opts := range map[string][]boson.SpawnOption{
			"input":    {boson.WithIdempotencyKey("k")},
			"headers":  {boson.WithIdempotencyKey("k"), boson.WithHeader("a", "b")},
			"attempts": {boson.WithIdempotencyKey("k"), boson.WithMaxAttempts(9)},
			"retry":    {boson.WithIdempotencyKey("k"), fastRetry},
			"cancel":   {boson.WithIdempotencyKey("k"), boson.WithCancellation(core.CancellationPolicy{MaxDelay: time.Hour})},
		} {
			in := 1
			if name == "input" {
				in = 2
			}
			if _, err := boson.Spawn(e.ctx, e.client, echoTask, in, opts...); !errors.Is(err, core.ErrIdempotencyConflict) {
				e.Fatalf("%s: %v", name, err)
			}
		}
		// Another task name under the same key conflicts too.
		if _, err := boson.Spawn(e.ctx, e.client, childTask, 1, boson.WithIdempotencyKey("k")); !errors.Is(err, core.ErrIdempotencyConflict) {
			e.Fatalf("task: %v", err)
		}
		// The scope is the queue.
		if _, err := boson.Spawn(e.ctx, e.client, echoTask, 2, boson.WithIdempotencyKey("k"), boson.WithQueue("elsewhere")); err != nil {
			e.Fatalf("other queue: %v", err)
		}
	}},
	{"idempotency_after_terminal", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		h1, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithIdempotencyKey("done"))
		e.must(err)
		_, err = h1.Wait(e.ctx)
		e.must(err)
		h2, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithIdempotencyKey("done"))
		e.must(err)
		if !h2.Reused() || h2.ID() != h1.ID() {
			e.Fatalf("terminal job not reused")
		}
		if v, err := h2.Result(e.ctx); err != nil || v != 1 {
			e.Fatalf("%v %v", v, err)
		}
	}},
	{"idempotency_none_allows_dup", func(e *env) {
		h1, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		h2, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		if h1.ID() == h2.ID() || h2.Reused() {
			e.Fatalf("duplicate collapsed")
		}
	}},
	{"rate_limit_in_flight", func(e *env) {
		e.must(e.client.PutTaskConfig(e.ctx, core.TaskConfig{Task: "echo", MaxInFlight: 2}))
		_, err := boson.SpawnBatch(e.ctx, e.client, echoTask, []int{1, 2})
		e.must(err)
		if _, err := boson.Spawn(e.ctx, e.client, echoTask, 3); !errors.Is(err, core.ErrRateLimited) {
			e.Fatalf("third: %v", err)
		}
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		e.eventually("drain", func() bool {
			n, _ := e.b.CountJobs(e.ctx, core.JobFilter{Task: "echo"})
			return n[core.StateSucceeded] == 2
		})
		if _, err := boson.Spawn(e.ctx, e.client, echoTask, 3); err != nil {
			e.Fatalf("after drain: %v", err)
		}
	}},
	{"rate_limit_eps", func(e *env) {
		e.must(e.client.PutTaskConfig(e.ctx, core.TaskConfig{Task: "echo", MaxEnqueuePerSecond: 3}))
		for i := range 3 {
			_, err := boson.Spawn(e.ctx, e.client, echoTask, i)
			e.must(err)
		}
		if _, err := boson.Spawn(e.ctx, e.client, echoTask, 4); !errors.Is(err, core.ErrRateLimited) {
			e.Fatalf("fourth: %v", err)
		}
		e.clock.Advance(time.Second)
		if _, err := boson.Spawn(e.ctx, e.client, echoTask, 4); err != nil {
			e.Fatalf("next second: %v", err)
		}
	}},
	{"task_config_defaults", func(e *env) {
		e.must(e.client.PutTaskConfig(e.ctx, core.TaskConfig{Task: "echo", Queue: "configured", Priority: -7, MaxAttempts: 2,
			Retry: core.RetryPolicy{Initial: 5 * time.Second}}))
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		j := e.job(h.ID())
		if j.Queue != "configured" || j.Priority != -7 || j.MaxAttempts != 2 || j.Retry.Initial != 5*time.Second {
			e.Fatalf("defaults not applied: %+v", j)
		}
		h2, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithQueue("explicit"), boson.WithPriority(1), boson.WithMaxAttempts(4))
		e.must(err)
		if j := e.job(h2.ID()); j.Queue != "explicit" || j.Priority != 1 || j.MaxAttempts != 4 {
			e.Fatalf("explicit options overridden: %+v", j)
		}
		fn, _ := failTimes(5)
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"configured"} })
		e.must(boson.Register(w, echoTask, fn))
		e.start(w)
		e.waitRetry(h.ID(), 1)
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskFailed) {
			e.Fatalf("wait: %v", err)
		}
	}},
	{"batch_spawn_atomic", func(e *env) {
		_, err := e.client.SpawnRequests(e.ctx,
			echoTask.Request(1), childTask.Request(2), echoTask.Request(3, boson.WithPriority(core.MaxPriority+1)))
		var be *core.BatchError
		if !errors.As(err, &be) || be.Index != 2 || !errors.Is(err, core.ErrInvalidArgument) {
			e.Fatalf("invalid batch: %v", err)
		}
		if n, _ := e.b.CountJobs(e.ctx, core.JobFilter{}); n[core.StateQueued] != 0 {
			e.Fatalf("partial batch stored: %v", n)
		}
		sp, err := e.client.SpawnRequests(e.ctx, echoTask.Request(1), childTask.Request(2))
		if err != nil || len(sp) != 2 || sp[1].Job.Task != "child" {
			e.Fatalf("%+v %v", sp, err)
		}
	}},
	{"transactional_spawn", func(e *env) {
		if !e.factory.TxEnqueue {
			if _, err := boson.SpawnTx(e.ctx, e.client, struct{}{}, echoTask, 1); !errors.Is(err, core.ErrUnsupported) {
				e.Fatalf("backend without transactions: %v", err)
			}
			return
		}
		tx, commit, _ := e.factory.BeginTx(e.ctx, e, e.b)
		h, err := boson.SpawnTx(e.ctx, e.client, tx, echoTask, 1)
		e.must(err)
		e.must(commit())
		if j := e.job(h.ID()); j.State != core.StateQueued {
			e.Fatalf("committed job %+v", j)
		}
		tx, _, rollback := e.factory.BeginTx(e.ctx, e, e.b)
		h2, err := boson.SpawnTx(e.ctx, e.client, tx, echoTask, 2)
		e.must(err)
		e.must(rollback())
		if _, err := e.b.GetJob(e.ctx, h2.ID()); !errors.Is(err, core.ErrNotFound) {
			e.Fatalf("rolled back job: %v", err)
		}
	}},
	{"transactional_cancel_retry", func(e *env) {
		// The stores with transactional spawn take cancel and retry in the
		// caller's transaction too; the others refuse both.
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		if !e.factory.TxEnqueue {
			if _, err := e.client.CancelTx(e.ctx, struct{}{}, h.ID(), "x"); !errors.Is(err, core.ErrUnsupported) {
				e.Fatalf("CancelTx on a backend without transactions: %v", err)
			}
			if _, err := e.client.RetryTx(e.ctx, struct{}{}, h.ID()); !errors.Is(err, core.ErrUnsupported) {
				e.Fatalf("RetryTx on a backend without transactions: %v", err)
			}
			return
		}
		tx, _, rollback := e.factory.BeginTx(e.ctx, e, e.b)
		_, err = e.client.CancelTx(e.ctx, tx, h.ID(), "rolled back")
		e.must(err)
		e.must(rollback())
		if j := e.job(h.ID()); j.State != core.StateQueued {
			e.Fatalf("a rolled-back cancel left %s", j.State)
		}
		tx, commit, _ := e.factory.BeginTx(e.ctx, e, e.b)
		_, err = e.client.CancelTx(e.ctx, tx, h.ID(), "withdrawn")
		e.must(err)
		e.must(commit())
		if j := e.job(h.ID()); j.State != core.StateCancelled || j.LastError != "withdrawn" {
			e.Fatalf("a committed cancel left %s (%q)", j.State, j.LastError)
		}
		tx, _, rollback = e.factory.BeginTx(e.ctx, e, e.b)
		_, err = e.client.RetryTx(e.ctx, tx, h.ID())
		e.must(err)
		e.must(rollback())
		if j := e.job(h.ID()); j.State != core.StateCancelled {
			e.Fatalf("a rolled-back retry left %s", j.State)
		}
		tx, commit, _ = e.factory.BeginTx(e.ctx, e, e.b)
		_, err = e.client.RetryTx(e.ctx, tx, h.ID())
		e.must(err)
		e.must(commit())
		if j := e.job(h.ID()); j.State != core.StateQueued {
			e.Fatalf("a committed retry left %s", j.State)
		}
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		if got, err := h.Wait(e.ctx); err != nil || got != 1 {
			e.Fatalf("the retried job gave %v, %v", got, err)
		}
	}},
	{"router_two_backends", func(e *env) {
		other := e.factory.New(e, e.clock)
		r := core.NewRouter(e.b)
		e.must(r.Register("other", other))
		e.must(r.Route("far", "other"))
		c, err := boson.NewRouterClient(r, boson.ClientOptions{Clock: e.clock, Logger: quiet})
		e.must(err)
		o := e.workerOptions()
		o.Queues = []string{core.DefaultQueue, "far"}
		w, err := boson.NewRouterWorker(r, o)
		e.must(err)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		near, err := boson.Spawn(e.ctx, c, echoTask, 1)
		e.must(err)
		far, err := boson.Spawn(e.ctx, c, echoTask, 2, boson.WithQueue("far"))
		e.must(err)
		if _, err := other.GetJob(e.ctx, far.ID()); err != nil {
			e.Fatalf("far job: %v", err)
		}
		if _, err := other.GetJob(e.ctx, near.ID()); !errors.Is(err, core.ErrNotFound) {
			e.Fatalf("near job on the far backend: %v", err)
		}
		for _, h := range []*boson.Handle[int]{near, far} {
			if _, err := h.Wait(e.ctx); err != nil {
				e.Fatal(err)
			}
		}
	}},
	{"actor_policy_and_run_context", func(e *env) {
		c, err := boson.NewClient(e.b, boson.ClientOptions{Clock: e.clock, Logger: quiet, Actor: "service",
			ActorPolicy: func(_ context.Context, actor, task string) error {
				if actor == "guest" {
					return errors.New("guests may not spawn")
				}
				return nil
			}})
		e.must(err)
		if _, err := boson.Spawn(e.ctx, c, echoTask, 1, boson.WithActor("guest")); !errors.Is(err, boson.ErrActorRejected) {
			e.Fatalf("policy: %v", err)
		}
		type roleKey struct{}
		w := e.worker(func(o *boson.WorkerOptions) {
			o.RunContext = func(ctx context.Context, actor string) (context.Context, error) {
				return context.WithValue(ctx, roleKey{}, "role-of-"+actor), nil
			}
		})
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			if ctx.Value(roleKey{}) != "role-of-alice" {
				return 0, boson.Permanent(errors.New("wrong actor context"))
			}
			return n, nil
		}))
		e.start(w)
		h, err := boson.Spawn(boson.WithActorContext(e.ctx, "alice"), c, echoTask, 1)
		e.must(err)
		_, err = h.Wait(e.ctx)
		e.must(err)
		if j := e.job(h.ID()); j.Actor != "alice" {
			e.Fatalf("actor %q", j.Actor)
		}
	}},
}
