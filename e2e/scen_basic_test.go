package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var basicScenarios = []scenario{
	{"enqueue_and_drain", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, addTask, add))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, addTask, addIn{20, 22})
		e.must(err)
		out, err := h.Wait(e.ctx)
		if err != nil || out.Sum != 42 {
			e.Fatalf("got %+v %v", out, err)
		}
	}},
	{"enqueue_and_drain_split", func(e *env) {
		// An enqueue-only client and a worker built separately, each with
		// its own id, sharing only the store.
		producer := e.newClient(e.b)
		h, err := boson.Spawn(e.ctx, producer, addTask, addIn{1, 1})
		e.must(err)
		w := e.worker(func(o *boson.WorkerOptions) { o.ID = "remote-worker-1" })
		e.must(boson.Register(w, addTask, add))
		e.start(w)
		out, err := h.Wait(e.ctx)
		if err != nil || out.Sum != 2 {
			e.Fatalf("got %+v %v", out, err)
		}
		if rs := e.runs(h.ID()); len(rs) != 1 || rs[0].WorkerID != "remote-worker-1" {
			e.Fatalf("runs %+v", rs)
		}
	}},
	{"enqueue_only", func(e *env) {
		h, err := boson.Spawn(e.ctx, e.client, addTask, addIn{1, 2})
		e.must(err)
		j := e.job(h.ID())
		if j.State != core.StateQueued || j.Attempt != 0 {
			e.Fatalf("job %+v", j)
		}
		if _, err := h.Result(e.ctx); !errors.Is(err, boson.ErrNotFinished) {
			e.Fatalf("result: %v", err)
		}
	}},
	{"multi_job_drain", func(e *env) {
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 4 })
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		ins := make([]int, 40)
		for i := range ins {
			ins[i] = i
		}
		hs, err := boson.SpawnBatch(e.ctx, e.client, echoTask, ins)
		e.must(err)
		for i, h := range hs {
			if v, err := h.Wait(e.ctx); err != nil || v != i {
				e.Fatalf("job %d: %v %v", i, v, err)
			}
		}
	}},
	{"enqueue_unknown_task_unhandled", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, boson.NewTask[int, int]("nobody-knows"), 1, boson.WithMaxAttempts(1))
		e.must(err)
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "no handler") {
			e.Fatalf("wait: %v", err)
		}
		e.eventually("unhandled metric", func() bool { return w.Metrics().Total.Unhandled == 1 })
	}},
	{"signature_mismatch", func(e *env) {
		// A producer built against an old input type: the worker refuses
		// the payload permanently instead of decoding it into the wrong type.
		oldShape := boson.NewTask[string, int]("typed")
		newShape := boson.NewTask[struct{ N int }, int]("typed")
		w := e.worker(nil)
		e.must(boson.Register(w, newShape, func(_ context.Context, in struct{ N int }) (int, error) { return in.N, nil }))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, oldShape, "not an object")
		e.must(err)
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "decode input") {
			e.Fatalf("wait: %v", err)
		}
		if j := e.job(h.ID()); j.Attempt != 1 {
			e.Fatalf("attempts %d", j.Attempt)
		}
	}},
	{"priorities", func(e *env) {
		var mu sync.Mutex
		var order []int
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 1 })
		e.must(boson.Register(w, echoTask, func(_ context.Context, n int) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, n)
			return n, nil
		}))
		var hs []*boson.Handle[int]
		for _, p := range []int{5, -5, 0, 10, -10} {
			h, err := boson.Spawn(e.ctx, e.client, echoTask, p, boson.WithPriority(p))
			e.must(err)
			hs = append(hs, h)
		}
		e.start(w)
		for _, h := range hs {
			_, err := h.Wait(e.ctx)
			e.must(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(order) != "[-10 -5 0 5 10]" {
			e.Fatalf("order %v", order)
		}
	}},
	{"delayed_spawn", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithDelay(time.Hour))
		e.must(err)
		at := e.clock.Now().Add(2 * time.Hour)
		h2, err := boson.Spawn(e.ctx, e.client, echoTask, 2, boson.WithRunAt(at))
		e.must(err)
		if j := e.job(h.ID()); !j.RunAt.Equal(e.clock.Now().Add(time.Hour)) {
			e.Fatalf("run at %v", j.RunAt)
		}
		// Claims in the meantime must not take either job.
		m0 := w.Metrics().Total.Claimed
		e.clock.Advance(59 * time.Minute)
		if _, err := w.Rescue(e.ctx); err != nil {
			e.Fatal(err)
		}
		if w.Metrics().Total.Claimed != m0 || e.job(h.ID()).State != core.StateQueued {
			e.Fatalf("claimed early")
		}
		e.clock.Advance(time.Minute)
		e.waitState(h.ID(), core.StateSucceeded)
		if st := e.job(h2.ID()).State; st != core.StateQueued {
			e.Fatalf("second job %s", st)
		}
		e.clock.Set(at)
		e.waitState(h2.ID(), core.StateSucceeded)
	}},
}
