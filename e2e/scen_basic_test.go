package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
		// A producer built against an old input type whose JSON still
		// decodes into the new one: the worker refuses it by its signature,
		// permanently under SignatureFail, and never calls the handler.
		w := e.worker(func(o *boson.WorkerOptions) { o.SignatureMismatch = boson.SignatureFail })
		var calls atomic.Int32
		e.must(boson.Register(w, typedNew, typedHandler(&calls)))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, typedOld, typedOldIn{Cents: 250})
		e.must(err)
		if j := e.job(h.ID()); j.Headers[boson.SignatureHeader] != typedOld.Signature() {
			e.Fatalf("headers %v", j.Headers)
		}
		_, err = h.Wait(e.ctx)
		var te *boson.TaskError
		if !errors.As(err, &te) || te.State != core.StateFailed {
			e.Fatalf("wait: %v", err)
		}
		for _, want := range []string{"signature mismatch", "typed", typedOld.Signature(), typedNew.Signature()} {
			if !contains(te.Message, want) {
				e.Fatalf("error %q does not name %q", te.Message, want)
			}
		}
		if j := e.job(h.ID()); j.Attempt != 1 {
			e.Fatalf("attempts %d", j.Attempt)
		}
		// A job without a signature (an older or non-Go producer) runs as
		// before, and so does one of the worker's own signature.
		res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{{Queue: core.DefaultQueue, Task: "typed", Payload: []byte(`{"N":2}`)}})
		e.must(err)
		if j := e.waitState(res[0].Job.ID, core.StateSucceeded); string(j.Result) != "2" {
			e.Fatalf("unsigned job: %+v", j)
		}
		h2, err := boson.Spawn(e.ctx, e.client, typedNew, typedNewIn{N: 3})
		e.must(err)
		if out, err := h2.Wait(e.ctx); err != nil || out != 3 {
			e.Fatalf("matching job: %v %v", out, err)
		}
		if calls.Load() != 2 {
			e.Fatalf("handler calls %d", calls.Load())
		}
	}},
	{"signature_mismatch_wait", func(e *env) {
		// Under SignatureWait (the default) a worker of the old build
		// leaves a new-build job sleeping, without consuming an attempt,
		// until a worker of the new build takes it.
		old := e.worker(func(o *boson.WorkerOptions) { o.ID = "old-build" })
		var oldCalls atomic.Int32
		e.must(boson.Register(old, typedOld, func(_ context.Context, in typedOldIn) (int, error) {
			oldCalls.Add(1)
			return in.Cents, nil
		}))
		e.start(old)
		start := e.clock.Now()
		h, err := boson.Spawn(e.ctx, e.client, typedNew, typedNewIn{N: 4})
		e.must(err)
		if j := e.waitState(h.ID(), core.StateSleeping); j.Attempt != 1 || !j.RunAt.Equal(start.Add(time.Second)) {
			e.Fatalf("after the first refusal: %+v", j)
		}
		e.clock.Advance(time.Second)
		e.eventually("the second refusal", func() bool {
			j := e.job(h.ID())
			return j.State == core.StateSleeping && j.RunAt.Equal(start.Add(3*time.Second))
		})
		fresh := e.worker(func(o *boson.WorkerOptions) { o.ID = "new-build" })
		var calls atomic.Int32
		e.must(boson.Register(fresh, typedNew, typedHandler(&calls)))
		e.start(fresh)
		// Both builds now serve the queue: wake the job until the new
		// build wins a claim.
		var j core.Job
		e.eventually("the new build to run the job", func() bool {
			if j = e.job(h.ID()); j.State == core.StateSleeping && j.RunAt.After(e.clock.Now()) {
				e.clock.Set(j.RunAt)
			}
			return j.State == core.StateSucceeded
		})
		if out, err := h.Wait(e.ctx); err != nil || out != 4 || j.Attempt != 1 || calls.Load() != 1 || oldCalls.Load() != 0 {
			e.Fatalf("out %v %v, attempt %d, calls %d, old calls %d", out, err, j.Attempt, calls.Load(), oldCalls.Load())
		}
		rs := e.runs(h.ID())
		for i, r := range rs {
			last := i == len(rs)-1
			if last && (r.Status != core.RunSucceeded || r.WorkerID != "new-build") || !last && (r.Status != core.RunSleeping || r.WorkerID != "old-build") {
				e.Fatalf("run %d of %d: %+v", i, len(rs), r)
			}
		}
		if len(rs) < 3 {
			e.Fatalf("%d runs", len(rs))
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
