package e2e_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var leaseScenarios = []scenario{
	{"long_job_lease_heartbeat", func(e *env) {
		// The handler runs through ten lease periods of the backend's clock;
		// supervision renews the lease and rescue never takes the job.
		started, release := make(chan struct{}), make(chan struct{})
		w := e.worker(func(o *boson.WorkerOptions) {
			o.LeaseTTL = 10 * time.Second
			o.HeartbeatInterval = 5 * time.Millisecond
		})
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			close(started)
			select {
			case <-release:
				return n, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 5)
		e.must(err)
		recv(e, started)
		for range 10 {
			renewedBy := e.clock.Advance(8 * time.Second).Add(9 * time.Second)
			e.eventually("lease renewal", func() bool { return !e.job(h.ID()).Lease.ExpiresAt.Before(renewedBy) })
			r, err := e.b.Rescue(e.ctx, core.RescueRequest{Limit: 100})
			if err != nil || r.Total() != 0 {
				e.Fatalf("rescue %+v %v", r, err)
			}
		}
		close(release)
		if v, err := h.Wait(e.ctx); err != nil || v != 5 {
			e.Fatalf("%v %v", v, err)
		}
		if rs := e.runs(h.ID()); len(rs) != 1 {
			e.Fatalf("runs %+v", rs)
		}
	}},
	{"lease_lost_writes_refused", func(e *env) {
		// Heartbeats are effectively off; the lease expires on the manual
		// clock, rescue requeues the job, and the stale attempt's
		// checkpoint write is refused while a fresh attempt finishes.
		gate := make(chan struct{})
		staleErr := make(chan error, 1)
		staleCtx := make(chan error, 1)
		var calls atomic.Int32
		w := e.worker(func(o *boson.WorkerOptions) {
			o.LeaseTTL = time.Hour
			o.HeartbeatInterval = 30 * time.Minute
			o.Concurrency = 2
		})
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			if calls.Add(1) == 1 {
				<-gate
				// The worker may already have cancelled ctx (it watches its
				// running jobs); write without that cancellation so that the
				// backend's fencing is what refuses the stale write.
				_, err := stepTwo.Run(context.WithoutCancel(ctx), func(context.Context) (int, error) { return -1, nil })
				staleErr <- err
				<-ctx.Done()
				staleCtx <- context.Cause(ctx)
				return 0, ctx.Err()
			}
			return stepOne.Run(ctx, func(context.Context) (int, error) { return n, nil })
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 8)
		e.must(err)
		e.waitState(h.ID(), core.StateRunning)
		e.clock.Advance(61 * time.Minute)
		if r, err := w.Rescue(e.ctx); err != nil || r.Requeued != 1 {
			e.Fatalf("rescue %+v %v", r, err)
		}
		if v, err := h.Wait(e.ctx); err != nil || v != 8 {
			e.Fatalf("%v %v", v, err)
		}
		close(gate)
		if err := recv(e, staleErr); !errors.Is(err, core.ErrLeaseLost) {
			e.Fatalf("stale write: %v", err)
		}
		if err := recv(e, staleCtx); !errors.Is(err, core.ErrLeaseLost) {
			e.Fatalf("stale context cause: %v", err)
		}
		if v, _ := h.Result(e.ctx); v != 8 {
			e.Fatalf("result changed to %v", v)
		}
		rs := e.runs(h.ID())
		if len(rs) != 2 || rs[0].Status != core.RunLost || rs[1].Status != core.RunSucceeded {
			e.Fatalf("runs %+v", rs)
		}
		e.eventually("lease lost metric", func() bool { return w.Metrics().Total.LeaseLost == 1 })
	}},
	{"lease_contention_drain", func(e *env) {
		// Three workers drain one queue; every job runs exactly once.
		const n = 60
		var countMu sync.Mutex
		counts := make([]int32, n)
		var ws []*boson.Worker
		for i := range 3 {
			w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 3; o.ID = "contender-" + string(rune('a'+i)) })
			e.must(boson.Register(w, echoTask, func(_ context.Context, k int) (int, error) {
				countMu.Lock()
				counts[k]++
				countMu.Unlock()
				return k, nil
			}))
			ws = append(ws, w)
		}
		ins := make([]int, n)
		for i := range ins {
			ins[i] = i
		}
		hs, err := boson.SpawnBatch(e.ctx, e.client, echoTask, ins)
		e.must(err)
		for _, w := range ws {
			e.start(w)
		}
		for _, h := range hs {
			_, err := h.Wait(e.ctx)
			e.must(err)
		}
		countMu.Lock()
		defer countMu.Unlock()
		for k, c := range counts {
			if c != 1 {
				e.Fatalf("job %d ran %d times", k, c)
			}
		}
	}},
	{"rescue_requeues_dead_worker", func(e *env) {
		// A claim whose worker vanished (no heartbeats) is rescued once
		// its lease expires and finished by a live worker.
		jobs, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{{Task: "echo", Payload: []byte("3")}})
		e.must(err)
		id := jobs[0].Job.ID
		if got, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: core.DefaultQueue, WorkerID: "dead", Limit: 1, LeaseTTL: time.Minute}); err != nil || len(got) != 1 {
			e.Fatalf("claim %v %v", got, err)
		}
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		e.clock.Advance(time.Minute)
		if r, err := w.Rescue(e.ctx); err != nil || r.Requeued != 1 {
			e.Fatalf("rescue %+v %v", r, err)
		}
		j := e.waitState(id, core.StateSucceeded)
		if j.Attempt != 2 || string(j.Result) != "3" {
			e.Fatalf("job %+v", j)
		}
	}},
}
