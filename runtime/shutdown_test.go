package boson_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"go.uber.org/goleak"
)

func TestShutdownDrainsThenCancels(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 2; o.ShutdownGrace = time.Hour })
	started := make(chan string, 2)
	release := make(chan struct{})
	_ = boson.Register(w, childTask, func(ctx context.Context, in int) (int, error) {
		info, _ := boson.Info(ctx)
		started <- info.JobID
		if in == 1 {
			<-release // finishes during the grace period
			return 1, nil
		}
		<-ctx.Done() // ignores the grace period: cancelled at the end
		return 0, ctx.Err()
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h1, _ := boson.Spawn(ctx, e.client, childTask, 1)
	h2, _ := boson.Spawn(ctx, e.client, childTask, 2)
	<-started
	<-started
	h3, _ := boson.Spawn(ctx, e.client, childTask, 3) // never claimed: no free slot

	sctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = w.Shutdown(sctx)
	}()
	close(release)
	e.waitState(h1.ID(), core.StateSucceeded)
	if st := e.job(h2.ID()).State; st != core.StateRunning {
		t.Fatalf("h2 %s", st)
	}
	cancel() // end the grace period
	wg.Wait()
	j2 := e.job(h2.ID())
	if j2.State.Terminal() || j2.State == core.StateRunning || j2.Attempt != 1 {
		t.Fatalf("h2 after shutdown: %+v", j2)
	}
	// h3 may have taken h1's slot before Shutdown stopped the claims; then
	// it was cancelled at the end of the grace period and released like h2.
	if j3 := e.job(h3.ID()); j3.State.Terminal() || j3.State == core.StateRunning || j3.Attempt > 1 {
		t.Fatalf("h3: %+v", j3)
	}
	if err := w.Start(ctx); !errors.Is(err, core.ErrInvalidState) {
		t.Fatalf("restart: %v", err)
	}
}

func TestMiddlewareOrderAndMetrics(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	var trace []string
	mw := func(name string) boson.Middleware {
		return func(next boson.ExecuteFunc) boson.ExecuteFunc {
			return func(ctx context.Context, ex *boson.Execution) ([]byte, error) {
				mu.Lock()
				trace = append(trace, name+">"+ex.Job.Task+"/"+ex.Job.Headers["h"])
				mu.Unlock()
				out, err := next(ctx, ex)
				mu.Lock()
				trace = append(trace, "<"+name)
				mu.Unlock()
				return out, err
			}
		}
	}
	w := e.worker(func(o *boson.WorkerOptions) {
		o.Middleware = []boson.Middleware{mw("outer"), mw("inner")}
		o.Concurrency = 1
	})
	_ = boson.Register(w, childTask, func(ctx context.Context, in int) (int, error) {
		mu.Lock()
		trace = append(trace, "handler")
		mu.Unlock()
		if in < 0 {
			return 0, boson.Permanent(errors.New("negative"))
		}
		return in, nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, childTask, 1, boson.WithHeader("h", "v"))
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := trace
	mu.Unlock()
	want := []string{"outer>child/v", "inner>child/v", "handler", "<inner", "<outer"}
	if len(got) != len(want) {
		t.Fatalf("trace %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("trace %v", got)
		}
	}
	hf, _ := boson.Spawn(ctx, e.client, childTask, -1)
	_, _ = hf.Wait(ctx)
	hu, _ := boson.Spawn(ctx, e.client, boson.NewTask[int, int]("nobody"), 1, boson.WithMaxAttempts(1))
	if _, err := hu.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "no handler") {
		t.Fatalf("unhandled: %v", err)
	}
	eventually(t, "metrics", func() bool {
		m := w.Metrics().Queues["default"]
		return m.Completed == 1 && m.Failed == 1 && m.Unhandled == 1
	})
	m := w.Metrics()
	want2 := boson.Counters{Claimed: 3, Executions: 2, Completed: 1, Failed: 1, Unhandled: 1}
	got2 := m.Total
	var inHist int64
	for _, n := range got2.ExecutionHistogram {
		inHist += n
	}
	if inHist != 2 {
		t.Fatalf("histogram %v", got2.ExecutionHistogram)
	}
	got2.ExecutionTime, got2.ExecutionHistogram = 0, [len(boson.ExecutionBuckets) + 1]int64{}
	if got2 != want2 {
		t.Fatalf("metrics %+v", got2)
	}
}

func TestWorkerOptionsFromEnv(t *testing.T) {
	t.Setenv(boson.EnvQueues, "a, b")
	t.Setenv(boson.EnvConcurrency, "3")
	t.Setenv(boson.EnvLeaseTTL, "1m")
	t.Setenv(boson.EnvWorkerID, "w-1")
	o, err := boson.WorkerOptionsFromEnv(boson.WorkerOptions{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Queues) != 2 || o.Queues[1] != "b" || o.Concurrency != 3 || o.LeaseTTL != time.Minute || o.ID != "w-1" {
		t.Fatalf("%+v", o)
	}
	t.Setenv(boson.EnvPollInterval, "soon")
	if _, err := boson.WorkerOptionsFromEnv(boson.WorkerOptions{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("bad duration: %v", err)
	}
}
