package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var workerScenarios = []scenario{
	{"graceful_shutdown_drain", func(e *env) {
		started := make(chan struct{}, 2)
		release := make(chan struct{})
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 2; o.ShutdownGrace = time.Hour })
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			started <- struct{}{}
			if n == 1 {
				<-release
				return n, nil
			}
			<-ctx.Done()
			return 0, ctx.Err()
		}))
		e.must(w.Start(e.ctx))
		finishing, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		stuck, err := boson.Spawn(e.ctx, e.client, echoTask, 2)
		e.must(err)
		recv(e, started)
		recv(e, started)
		waiting, err := boson.Spawn(e.ctx, e.client, echoTask, 3)
		e.must(err)
		sctx, endGrace := context.WithCancel(e.ctx)
		done := make(chan error, 1)
		go func() { done <- w.Shutdown(sctx) }()
		close(release)
		e.waitState(finishing.ID(), core.StateSucceeded) // drained within the grace period
		endGrace()
		e.must(recv(e, done))
		j := e.job(stuck.ID())
		if j.State != core.StateSleeping && j.State != core.StateQueued || j.Attempt != 1 {
			e.Fatalf("cancelled attempt not released: %+v", j)
		}
		// The waiting job may have taken the finished job's slot before
		// the claims stopped; then it was released like the stuck one.
		if j := e.job(waiting.ID()); j.State.Terminal() || j.State == core.StateRunning || j.Attempt > 1 {
			e.Fatalf("waiting job after shutdown: %+v", j)
		}
	}},
	{"restart_runtime_drain", func(e *env) {
		// A worker stops half-way; a second runtime over the same store
		// finishes every job, none twice.
		var mu sync.Mutex
		seen := map[int]int{}
		handler := func(_ context.Context, n int) (int, error) {
			mu.Lock()
			seen[n]++
			mu.Unlock()
			return n, nil
		}
		ins := make([]int, 30)
		for i := range ins {
			ins[i] = i
		}
		hs, err := boson.SpawnBatch(e.ctx, e.client, echoTask, ins)
		e.must(err)
		w1 := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 1 })
		e.must(boson.Register(w1, echoTask, handler))
		e.must(w1.Start(e.ctx))
		e.waitState(hs[3].ID(), core.StateSucceeded)
		e.must(w1.Shutdown(e.ctx))
		w2 := e.worker(nil)
		e.must(boson.Register(w2, echoTask, handler))
		e.start(w2)
		for _, h := range hs {
			_, err := h.Wait(e.ctx)
			e.must(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for k, c := range seen {
			if c != 1 {
				e.Fatalf("job %d ran %d times", k, c)
			}
		}
	}},
	{"pool_priority_drain", func(e *env) {
		// One worker serves two queues ("pools"); a worker of another pool
		// never takes their jobs.
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"pool-a", "pool-b"} })
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		bystander := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"pool-c"} })
		e.must(boson.Register(bystander, echoTask, echo))
		e.start(bystander)
		var hs []*boson.Handle[int]
		for i := range 10 {
			h, err := boson.Spawn(e.ctx, e.client, echoTask, i, boson.WithQueue([]string{"pool-a", "pool-b"}[i%2]), boson.WithPriority(-i))
			e.must(err)
			hs = append(hs, h)
		}
		for _, h := range hs {
			_, err := h.Wait(e.ctx)
			e.must(err)
		}
		if m := bystander.Metrics().Total; m.Claimed != 0 {
			e.Fatalf("bystander claimed %d", m.Claimed)
		}
		e.eventually("completions counted per pool", func() bool {
			m := w.Metrics()
			return m.Queues["pool-a"].Completed == 5 && m.Queues["pool-b"].Completed == 5
		})
	}},
	{"paused_queue", func(e *env) {
		e.must(e.client.PutQueueConfig(e.ctx, core.QueueConfig{Queue: core.DefaultQueue, Paused: true}))
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		if _, err := w.Rescue(e.ctx); err != nil { // a round trip to let claims run
			e.Fatal(err)
		}
		if j := e.job(h.ID()); j.State != core.StateQueued {
			e.Fatalf("claimed from a paused queue: %+v", j)
		}
		e.must(e.client.PutQueueConfig(e.ctx, core.QueueConfig{Queue: core.DefaultQueue}))
		_, err = h.Wait(e.ctx)
		e.must(err)
	}},
	{"subprocess_executor", func(e *env) {
		sh, err := exec.LookPath("sh")
		if err != nil {
			e.Fatal("the subprocess scenario needs sh on PATH")
		}
		w := e.worker(nil)
		e.must(w.RegisterExecutor("echo", boson.CommandExecutor{Path: sh, Args: []string{"-c",
			`test "$BOSON_ATTEMPT" -ge 2 || exit 1; read n; echo $((n * 2))`}}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 21, fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1) // the first process exits 1: an ordinary failed attempt
		if v, err := h.Wait(e.ctx); err != nil || v != 42 {
			e.Fatalf("%v %v", v, err)
		}
	}},
	{"subprocess_killed_on_cancel", func(e *env) {
		sh, err := exec.LookPath("sh")
		if err != nil {
			e.Fatal("the subprocess scenario needs sh on PATH")
		}
		w := e.worker(nil)
		e.must(w.RegisterExecutor("echo", boson.CommandExecutor{Path: sh, Args: []string{"-c", "exec sleep 600"}}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		e.waitState(h.ID(), core.StateRunning)
		e.must(h.Cancel(e.ctx, "stop the process"))
		e.eventually("process killed and attempt ended", func() bool { return w.Metrics().Total.Cancelled == 1 })
	}},
	{"middleware_order", func(e *env) {
		var mu sync.Mutex
		var trace []string
		note := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
		mw := func(name string) boson.Middleware {
			return func(next boson.ExecuteFunc) boson.ExecuteFunc {
				return func(ctx context.Context, ex *boson.Execution) ([]byte, error) {
					info, _ := boson.Info(ctx)
					note(fmt.Sprintf("%s>%s/%d/%s/%v", name, ex.Job.Task, ex.Job.Attempt, ex.Job.Headers["tenant"], info.JobID == ex.Job.ID))
					out, err := next(ctx, ex)
					note("<" + name)
					return out, err
				}
			}
		}
		w := e.worker(func(o *boson.WorkerOptions) { o.Middleware = []boson.Middleware{mw("a"), mw("b"), mw("c")} })
		e.must(boson.Register(w, echoTask, func(_ context.Context, n int) (int, error) { note("handler"); return n, nil }))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithHeader("tenant", "t9"))
		e.must(err)
		_, err = h.Wait(e.ctx)
		e.must(err)
		mu.Lock()
		defer mu.Unlock()
		want := "[a>echo/1/t9/true b>echo/1/t9/true c>echo/1/t9/true handler <c <b <a]"
		if got := fmt.Sprint(trace); got != want {
			e.Fatalf("trace %s", got)
		}
	}},
	{"exact_metrics", func(e *env) {
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"m1", "m2"} })
		e.must(boson.Register(w, echoTask, func(_ context.Context, n int) (int, error) {
			switch n {
			case 1:
				return 0, boson.Permanent(errors.New("no"))
			case 2:
				return 0, boson.Snooze(time.Hour)
			}
			return n, nil
		}))
		e.start(w)
		var hs []*boson.Handle[int]
		for _, spec := range []struct {
			q string
			n int
		}{{"m1", 0}, {"m1", 10}, {"m1", 1}, {"m2", 2}, {"m2", 5}} {
			h, err := boson.Spawn(e.ctx, e.client, echoTask, spec.n, boson.WithQueue(spec.q))
			e.must(err)
			hs = append(hs, h)
		}
		unknown, err := boson.Spawn(e.ctx, e.client, childTask, 1, boson.WithQueue("m2"), boson.WithMaxAttempts(1))
		e.must(err)
		for _, h := range append(hs[:3:3], hs[4]) {
			_, _ = h.Wait(e.ctx)
		}
		e.waitState(hs[3].ID(), core.StateSleeping)
		e.waitState(unknown.ID(), core.StateFailed)
		e.eventually("counters", func() bool { return w.Metrics().Total.Completed == 3 && w.Metrics().Total.Suspended == 1 })
		m := w.Metrics()
		strip := func(c boson.Counters) boson.Counters {
			var total int64
			for _, n := range c.ExecutionHistogram {
				total += n
			}
			if total != c.Executions {
				e.Fatalf("histogram %v counts %d of %d executions", c.ExecutionHistogram, total, c.Executions)
			}
			c.ExecutionTime, c.ExecutionHistogram = 0, [len(boson.ExecutionBuckets) + 1]int64{}
			return c
		}
		if got, want := strip(m.Queues["m1"]), (boson.Counters{Claimed: 3, Executions: 3, Completed: 2, Failed: 1}); got != want {
			e.Fatalf("m1 %+v", got)
		}
		if got, want := strip(m.Queues["m2"]), (boson.Counters{Claimed: 3, Executions: 2, Completed: 1, Suspended: 1, Unhandled: 1}); got != want {
			e.Fatalf("m2 %+v", got)
		}
		if m.Total.Claimed != 6 || m.Total.ExecutionTime <= 0 || m.WorkerID != w.ID() {
			e.Fatalf("total %+v", m)
		}
	}},
	{"attempt_timeout", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}, boson.AttemptTimeout(20*time.Millisecond)))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithMaxAttempts(1))
		e.must(err)
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "timed out") {
			e.Fatalf("wait: %v", err)
		}
	}},
	{"retention_cleanup", func(e *env) {
		e.must(e.client.PutQueueConfig(e.ctx, core.QueueConfig{Queue: core.DefaultQueue, RetentionTTL: time.Hour, CleanupLimit: 2}))
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		hs, err := boson.SpawnBatch(e.ctx, e.client, echoTask, []int{1, 2, 3})
		e.must(err)
		old, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithIdempotencyKey("same"))
		e.must(err)
		for _, h := range append(hs, old) {
			_, err := h.Wait(e.ctx)
			e.must(err)
		}
		pending, err := boson.Spawn(e.ctx, e.client, echoTask, 8, boson.WithDelay(24*time.Hour))
		e.must(err)
		e.clock.Advance(2 * time.Hour)
		if n, err := w.Cleanup(e.ctx); err != nil || n != 2 { // bounded by the queue's limit
			e.Fatalf("first pass: %d %v", n, err)
		}
		if n, err := e.client.Cleanup(e.ctx); err != nil || n != 2 {
			e.Fatalf("second pass: %d %v", n, err)
		}
		if n, err := e.client.Cleanup(e.ctx); err != nil || n != 0 {
			e.Fatalf("third pass: %d %v", n, err)
		}
		if _, err := e.b.GetJob(e.ctx, pending.ID()); err != nil {
			e.Fatalf("pending job deleted: %v", err)
		}
		// The idempotency key is free again once its job is gone.
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithIdempotencyKey("same"))
		e.must(err)
		if h.Reused() {
			e.Fatalf("key still held after cleanup")
		}
	}},
}
