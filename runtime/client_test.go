package boson_test

import (
	"context"
	"errors"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

func TestIdempotentSpawn(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	h1, err := boson.Spawn(ctx, e.client, addTask, addIn{1, 2}, boson.WithIdempotencyKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := boson.Spawn(ctx, e.client, addTask, addIn{1, 2}, boson.WithIdempotencyKey("k"), boson.WithPriority(5))
	if err != nil || !h2.Reused() || h2.ID() != h1.ID() {
		t.Fatalf("reuse: %v %v", h2, err)
	}
	_, err = boson.Spawn(ctx, e.client, addTask, addIn{1, 3}, boson.WithIdempotencyKey("k"))
	if !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	_, err = boson.Spawn(ctx, e.client, addTask, addIn{1, 2}, boson.WithIdempotencyKey("k"), boson.WithHeader("h", "v"))
	if !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("header conflict: %v", err)
	}
}

func TestSpawnOptionsAndTaskConfig(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	if err := e.client.PutTaskConfig(ctx, core.TaskConfig{Task: "add", Queue: "math", Priority: 7, MaxAttempts: 9, MaxInFlight: 2}); err != nil {
		t.Fatal(err)
	}
	h, err := boson.Spawn(ctx, e.client, addTask, addIn{}, boson.WithDelay(time.Minute), boson.WithHeader("trace", "x"), boson.WithActor("alice"),
		boson.WithCancellation(core.CancellationPolicy{MaxDelay: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	j := e.job(h.ID())
	if j.Queue != "math" || j.Priority != 7 || j.MaxAttempts != 9 || j.Headers["trace"] != "x" || j.Actor != "alice" ||
		!j.RunAt.Equal(e.clock.Now().Add(time.Minute)) || j.Cancel.MaxDelay != time.Hour {
		t.Fatalf("job %+v", j)
	}
	h2, err := boson.Spawn(ctx, e.client, addTask, addIn{}, boson.WithQueue("other"), boson.WithPriority(-3), boson.WithMaxAttempts(2))
	if err != nil {
		t.Fatal(err)
	}
	if j := e.job(h2.ID()); j.Queue != "other" || j.Priority != -3 || j.MaxAttempts != 2 {
		t.Fatalf("explicit options lost: %+v", j)
	}
	if _, err := boson.Spawn(ctx, e.client, addTask, addIn{}); !errors.Is(err, core.ErrRateLimited) {
		t.Fatalf("rate limit: %v", err)
	}
	if _, err := boson.Spawn(ctx, e.client, boson.NewTask[int, int]("bad name"), 1); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := boson.SpawnTx(ctx, e.client, struct{}{}, addTask, addIn{}); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("tx: %v", err)
	}
}

func TestSpawnBatchAtomic(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	hs, err := boson.SpawnBatch(ctx, e.client, addTask, []addIn{{1, 1}, {2, 2}, {3, 3}}, boson.WithQueue("q"))
	if err != nil || len(hs) != 3 {
		t.Fatalf("%v %v", hs, err)
	}
	_, err = e.client.SpawnRequests(ctx, addTask.Request(addIn{}), addTask.Request(addIn{}, boson.WithPriority(5000)))
	if !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("invalid batch: %v", err)
	}
	n, _ := e.b.CountJobs(ctx, core.JobFilter{})
	if n[core.StateQueued] != 3 {
		t.Fatalf("counts %v", n)
	}
}

func TestActorPolicyAndRunContext(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	c, _ := boson.NewClient(e.b, boson.ClientOptions{Clock: e.clock, Logger: quiet, Actor: "system",
		ActorPolicy: func(ctx context.Context, actor, task string) error {
			if actor == "mallory" {
				return errors.New("banned")
			}
			return nil
		}})
	if _, err := boson.Spawn(ctx, c, addTask, addIn{}, boson.WithActor("mallory")); !errors.Is(err, boson.ErrActorRejected) {
		t.Fatalf("policy: %v", err)
	}
	type userKey struct{}
	w := e.worker(func(o *boson.WorkerOptions) {
		o.RunContext = func(ctx context.Context, actor string) (context.Context, error) {
			return context.WithValue(ctx, userKey{}, "user:"+actor), nil
		}
	})
	_ = boson.Register(w, childTask, func(ctx context.Context, in int) (int, error) {
		a, _ := boson.ActorFromContext(ctx)
		if ctx.Value(userKey{}) != "user:bob" || a != "bob" {
			return 0, boson.Permanent(errors.New("wrong actor"))
		}
		return in, nil
	})
	e.start(w)
	h, err := boson.Spawn(boson.WithActorContext(ctx, "bob"), c, childTask, 5)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Wait(ctx); err != nil || v != 5 {
		t.Fatalf("%v %v", v, err)
	}
	h2, _ := boson.Spawn(ctx, c, childTask, 5)
	if j := e.job(h2.ID()); j.Actor != "system" {
		t.Fatalf("default actor %q", j.Actor)
	}
}

func TestRouterAcrossBackends(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	other := mem.New(mem.Options{Clock: e.clock, Logger: quiet})
	t.Cleanup(func() { _ = other.Close() })
	r := core.NewRouter(e.b)
	if err := r.Register("other", other); err != nil {
		t.Fatal(err)
	}
	if err := r.Route("far", "other"); err != nil {
		t.Fatal(err)
	}
	c, _ := boson.NewRouterClient(r, boson.ClientOptions{Clock: e.clock, Logger: quiet})
	w, _ := boson.NewRouterWorker(r, boson.WorkerOptions{Clock: e.clock, Logger: quiet, Queues: []string{"default", "far"}, PollInterval: 10 * time.Millisecond})
	_ = boson.Register(w, childTask, func(ctx context.Context, in int) (int, error) { return in + 1, nil })
	e.start(w)
	near, _ := boson.Spawn(ctx, c, childTask, 1)
	far, _ := boson.Spawn(ctx, c, childTask, 2, boson.WithQueue("far"))
	if _, err := other.GetJob(ctx, far.ID()); err != nil {
		t.Fatalf("far job not on the other backend: %v", err)
	}
	if _, err := other.GetJob(ctx, near.ID()); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("near job on the other backend: %v", err)
	}
	for _, h := range []*boson.Handle[int]{near, far} {
		if _, err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SpawnRequests(ctx, childTask.Request(1), childTask.Request(2, boson.WithQueue("far"))); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("cross-backend batch: %v", err)
	}
	hf, err := boson.HandleFor(ctx, c, childTask, far.ID())
	if err != nil {
		t.Fatal(err)
	}
	if v, err := hf.Result(ctx); err != nil || v != 3 {
		t.Fatalf("%v %v", v, err)
	}
}
