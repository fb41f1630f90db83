package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Fan-in on every backend of the matrix: a parent parks on its children
// through core.Awaiter and is woken by the store. A backend without
// core.Awaiter fails these scenarios: fan-in is part of the contract the
// matrix checks.

var (
	faninParent = boson.NewTask[int, int]("fanin-parent")
	faninChild  = boson.NewTask[int, int]("fanin-child")
	faninIDs    = boson.NewStep[[]string]("spawn-children")
)

// requireAwaiter fails the test when b cannot park a job on other jobs.
func requireAwaiter(e *env) core.Awaiter {
	e.Helper()
	aw, ok := e.b.(core.Awaiter)
	if !ok {
		e.Fatalf("backend %s does not implement core.Awaiter: fan-in is not offered there", e.factory.Name)
	}
	return aw
}

// faninChildren spawns n children (inputs 0..n-1) in queue once, in a
// step, and returns their handles on every run of the parent.
func faninChildren(ctx context.Context, e *env, queue string, n int) ([]*boson.Handle[int], error) {
	ids, err := faninIDs.Run(ctx, func(ctx context.Context) ([]string, error) {
		ins := make([]int, n)
		for i := range ins {
			ins[i] = i
		}
		hs, err := boson.SpawnBatch(ctx, e.client, faninChild, ins, boson.WithQueue(queue))
		ids := make([]string, len(hs))
		for i, h := range hs {
			ids[i] = h.ID()
		}
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	hs := make([]*boson.Handle[int], len(ids))
	for i, id := range ids {
		if hs[i], err = boson.HandleFor(ctx, e.client, faninChild, id); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

// peak counts handlers running at once.
type peak struct{ cur, max atomic.Int32 }

func (p *peak) enter() func() {
	n := p.cur.Add(1)
	for m := p.max.Load(); n > m && !p.max.CompareAndSwap(m, n); m = p.max.Load() {
	}
	return func() { p.cur.Add(-1) }
}

var faninScenarios = []scenario{
	// A parent on a worker of one slot spawns 1,000 children into its own
	// queue and awaits them all. It can finish only if it holds no slot
	// while it waits: the one slot runs every child, then the parent again.
	{"fanin_1000_no_slot", func(e *env) {
		aw := requireAwaiter(e)
		// One slot runs 1,001 jobs one after another: more than the
		// default minute on a loaded machine under the race detector.
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		e.Cleanup(cancel)
		e.ctx = ctx
		const n = 1000
		var (
			running     peak
			parentRuns  atomic.Int32
			parentState atomic.Value // the parent's state seen by the children
			parentID    atomic.Value
		)
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 1 })
		e.must(boson.Register(w, faninChild, func(ctx context.Context, i int) (int, error) {
			defer running.enter()()
			if id, ok := parentID.Load().(string); ok && i == n-1 {
				if j, err := e.b.GetJob(ctx, id); err == nil {
					parentState.Store(j.State)
				}
			}
			return i, nil
		}))
		e.must(boson.Register(w, faninParent, func(ctx context.Context, k int) (int, error) {
			defer running.enter()()
			parentRuns.Add(1)
			hs, err := faninChildren(ctx, e, core.DefaultQueue, k)
			if err != nil {
				return 0, err
			}
			outs, err := boson.AwaitAll(ctx, hs)
			if err != nil {
				return 0, err
			}
			sum := 0
			for _, v := range outs {
				sum += v
			}
			return sum, nil
		}))
		h, err := boson.Spawn(e.ctx, e.client, faninParent, n)
		e.must(err)
		parentID.Store(h.ID())
		e.start(w)
		out, err := h.Wait(e.ctx)
		e.must(err)
		if out != n*(n-1)/2 {
			e.Fatalf("sum %d, want %d", out, n*(n-1)/2)
		}
		if got := parentRuns.Load(); got != 2 {
			e.Errorf("parent ran %d times, want 2 (park, wake)", got)
		}
		if m := running.max.Load(); m != 1 {
			e.Errorf("%d handlers ran at once on a one-slot worker", m)
		}
		if st, _ := parentState.Load().(core.JobState); st != core.StateSleeping {
			e.Errorf("the parent was %q while its last child ran, want sleeping", st)
		}
		runs := e.runs(h.ID())
		if len(runs) != 2 || runs[0].Status != core.RunSleeping || runs[1].Status != core.RunSucceeded {
			e.Errorf("parent runs %+v, want sleeping then succeeded", runs)
		}
		if j := e.job(h.ID()); j.Attempt != 1 {
			e.Errorf("parent attempt %d, want 1: a wait consumes no attempt", j.Attempt)
		}
		wt, err := aw.JobWait(e.ctx, h.ID())
		e.must(err)
		if len(wt.JobIDs) != n || wt.Pending != 0 || !wt.Woken || wt.Mode != core.AwaitAll {
			e.Errorf("wait: %d ids, pending %d, woken %v, mode %s", len(wt.JobIDs), wt.Pending, wt.Woken, wt.Mode)
		}
	}},
	// AwaitAny over children in another queue: the first to end wins; a
	// cancelled parked parent with CancelChildrenOnCancel cancels the rest.
	{"fanin_any_other_queue_cancel_children", func(e *env) {
		requireAwaiter(e)
		release := make(chan struct{})
		winner := make(chan int, 1)
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{core.DefaultQueue, "kids"} })
		e.must(boson.Register(w, faninChild, func(ctx context.Context, i int) (int, error) {
			if i == 2 {
				return i * 10, nil
			}
			select { // the others wait, for the cancellation
			case <-release:
			case <-ctx.Done():
			}
			return i, nil
		}))
		e.must(boson.Register(w, faninParent, func(ctx context.Context, k int) (int, error) {
			hs, err := faninChildren(ctx, e, "kids", k)
			if err != nil {
				return 0, err
			}
			i, v, err := boson.AwaitAny(ctx, hs)
			if err != nil {
				return 0, err
			}
			winner <- i
			// Wait on the rest, cancelled with the parent.
			_, err = boson.AwaitAll(ctx, append(hs[:i:i], hs[i+1:]...), boson.CancelChildrenOnCancel())
			return v, err
		}))
		h, err := boson.Spawn(e.ctx, e.client, faninParent, 4)
		e.must(err)
		e.start(w)
		select {
		case i := <-winner:
			if i != 2 {
				e.Fatalf("AwaitAny won by child %d, want 2", i)
			}
		case <-e.ctx.Done():
			e.Fatal("AwaitAny never returned")
		}
		e.waitState(h.ID(), core.StateSleeping)
		// Three children run (blocked) or wait; the parent is parked on them.
		e.must(h.Cancel(e.ctx, "enough"))
		for _, c := range e.jobsOf("kids") {
			if c.Input != 2 {
				if got := e.waitState(c.ID, core.StateCancelled); got.State != core.StateCancelled {
					e.Fatalf("child %d is %s", c.Input, got.State)
				}
			}
		}
		close(release)
	}},
}

// kid is a child job with its decoded input.
type kid struct {
	ID    string
	Input int
}

// jobsOf lists the jobs of queue with their integer inputs.
func (e *env) jobsOf(queue string) []kid {
	e.Helper()
	page, err := e.b.ListJobs(e.ctx, core.JobFilter{Queue: queue, Limit: core.MaxPageSize})
	e.must(err)
	out := make([]kid, 0, len(page.Jobs))
	for _, j := range page.Jobs {
		var n int
		if _, err := fmt.Sscan(string(j.Payload), &n); err != nil {
			e.Fatalf("payload %q of %s: %v", j.Payload, j.ID, err)
		}
		out = append(out, kid{ID: j.ID, Input: n})
	}
	return out
}

// TestFaninMatrixRedisCluster runs the fan-in scenarios on the Redis
// Cluster with all keys in one slot, and the 1,000 children in the
// parent's queue with a slot per queue.
func TestFaninMatrixRedisCluster(t *testing.T) {
	for _, s := range faninScenarios {
		t.Run(redisClusterFactory.Name+"/"+s.name, func(t *testing.T) {
			t.Parallel()
			s.run(newEnv(t, redisClusterFactory))
		})
	}
	t.Run(redisClusterSlotsFactory.Name+"/"+faninScenarios[0].name, func(t *testing.T) {
		t.Parallel()
		faninScenarios[0].run(newEnv(t, redisClusterSlotsFactory))
	})
	t.Run(redisClusterSlotsFactory.Name+"/fanin_across_slots", func(t *testing.T) {
		t.Parallel()
		faninAcrossSlots(newEnv(t, redisClusterSlotsFactory))
	})
}

// faninAcrossSlots awaits children in another queue, so another slot, of
// the cluster: the store either wakes the parent or refuses the wait with
// core.ErrUnsupported, which fails the parent at once with that message.
func faninAcrossSlots(e *env) {
	requireAwaiter(e)
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{core.DefaultQueue, "kids"} })
	e.must(boson.Register(w, faninChild, func(ctx context.Context, i int) (int, error) { return i, nil }))
	e.must(boson.Register(w, faninParent, func(ctx context.Context, k int) (int, error) {
		hs, err := faninChildren(ctx, e, "kids", k)
		if err != nil {
			return 0, err
		}
		outs, err := boson.AwaitAll(ctx, hs)
		return len(outs), err
	}))
	h, err := boson.Spawn(e.ctx, e.client, faninParent, 3, boson.WithMaxAttempts(5))
	e.must(err)
	e.start(w)
	out, err := h.Wait(e.ctx)
	var te *boson.TaskError
	switch {
	case err == nil && out == 3:
	case errors.As(err, &te) && strings.Contains(te.Message, "unsupported"):
		if j := e.job(h.ID()); j.Attempt != 1 {
			e.Errorf("a refused wait was tried %d times", j.Attempt)
		}
	default:
		e.Fatalf("fan-in across slots: %d %v", out, err)
	}
}
