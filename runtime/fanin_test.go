package boson_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var (
	fanParent = boson.NewTask[int, int]("fan-parent")
	fanChild  = boson.NewTask[int, int]("fan-child")
)

// spawnChildren spawns n children of the calling task in queue, keyed by
// the parent's id so that a replay finds the same children.
func spawnChildren(ctx context.Context, c *boson.Client, queue string, n int, opts ...boson.SpawnOption) ([]*boson.Handle[int], error) {
	info, _ := boson.Info(ctx)
	reqs := make([]boson.Request, n)
	for i := range reqs {
		o := append([]boson.SpawnOption{boson.WithQueue(queue), boson.WithIdempotencyKey(fmt.Sprintf("%s-%d", info.JobID, i))}, opts...)
		reqs[i] = fanChild.Request(i, o...)
	}
	s, err := c.SpawnRequests(ctx, reqs...)
	if err != nil {
		return nil, err
	}
	hs := make([]*boson.Handle[int], len(s))
	for i := range s {
		if hs[i], err = boson.HandleFor(ctx, c, fanChild, s[i].Job.ID); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

// waitParked waits until the task of h sleeps: parked on its wait.
func waitParked[Out any](t *testing.T, h *boson.Handle[Out]) {
	t.Helper()
	eventually(t, "the parent to park", func() bool {
		j, _ := h.Snapshot(context.Background())
		return j.State == core.StateSleeping
	})
}

// waitSleeping waits until the job whose id id holds is sleeping, or ctx
// ends.
func waitSleeping(ctx context.Context, b core.QueueBackend, id *atomic.Value) {
	for ctx.Err() == nil {
		if s, ok := id.Load().(string); ok {
			if j, err := b.GetJob(ctx, s); err == nil && j.State == core.StateSleeping {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}

func runStatuses(t *testing.T, b core.QueueBackend, id string) []core.RunStatus {
	t.Helper()
	runs, err := b.ListRuns(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]core.RunStatus, len(runs))
	for i, r := range runs {
		out[i] = r.Status
	}
	return out
}

// A parent with a worker of one slot spawns its children into its own
// queue and awaits them all: it parks, the one slot runs every child, and
// the store wakes the parent, whose second run returns their results.
func TestAwaitAllParentHoldsNoSlot(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"fan"}; o.Concurrency = 1 })
	var running, maxRunning, parentRuns atomic.Int32
	enter := func() func() {
		n := running.Add(1)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
		return func() { running.Add(-1) }
	}
	_ = boson.Register(w, fanChild, func(ctx context.Context, in int) (int, error) {
		defer enter()()
		return in * in, nil
	})
	_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
		defer enter()()
		parentRuns.Add(1)
		hs, err := spawnChildren(ctx, e.client, "fan", n)
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
	})
	e.start(w)
	h, err := boson.Spawn(ctx, e.client, fanParent, 20, boson.WithQueue("fan"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Wait(ctx)
	if err != nil || out != 2470 { // sum of squares 0..19
		t.Fatalf("got %d %v", out, err)
	}
	if got := parentRuns.Load(); got != 2 {
		t.Errorf("parent ran %d times, want 2 (park, wake)", got)
	}
	if m := maxRunning.Load(); m != 1 {
		t.Errorf("%d handlers ran at once on a one-slot worker", m)
	}
	if st := runStatuses(t, e.b, h.ID()); len(st) != 2 || st[0] != core.RunSleeping || st[1] != core.RunSucceeded {
		t.Errorf("parent runs %v, want [sleeping succeeded]", st)
	}
	j, _ := h.Snapshot(ctx)
	if j.Attempt != 1 {
		t.Errorf("parent attempt %d, want 1: a wait consumes no attempt", j.Attempt)
	}
	wt, err := e.b.JobWait(ctx, h.ID())
	if err != nil || len(wt.JobIDs) != 20 || wt.Pending != 0 || !wt.Woken || wt.Mode != core.AwaitAll {
		t.Errorf("wait %+v %v", wt, err)
	}
}

// countingBackend is the mem backend counting the GetJob calls the
// handlers make.
type countingBackend struct {
	*mem.Backend
	reads atomic.Int64
}

func (c *countingBackend) GetJob(ctx context.Context, id string) (core.Job, error) {
	c.reads.Add(1)
	return c.Backend.GetJob(ctx, id)
}

// Once AwaitAll has returned, its results are checkpointed: a later
// attempt of the parent (after a failure standing for a crash) replays them
// without reading a child.
func TestAwaitAllReplaysAfterCrash(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	cb := &countingBackend{Backend: e.b}
	client, err := boson.NewClient(cb, boson.ClientOptions{Clock: e.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	o := boson.WorkerOptions{Queues: []string{"fan"}, Clock: e.clock, Logger: quiet, PollInterval: 10 * time.Millisecond, RescueInterval: -1, RetentionInterval: -1}
	w, err := boson.NewWorker(cb, o)
	if err != nil {
		t.Fatal(err)
	}
	var replayReads atomic.Int64
	replayReads.Store(-1)
	_ = boson.Register(w, fanChild, func(ctx context.Context, in int) (int, error) { return in + 100, nil })
	_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
		hs, err := spawnChildren(ctx, client, "fan", n)
		if err != nil {
			return 0, err
		}
		before := cb.reads.Load()
		outs, err := boson.AwaitAll(ctx, hs)
		if err != nil {
			return 0, err
		}
		if info, _ := boson.Info(ctx); info.Attempt == 1 {
			return 0, errors.New("crash after the fan-in")
		}
		replayReads.Store(cb.reads.Load() - before)
		return outs[0] + outs[len(outs)-1], nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, client, fanParent, 5, boson.WithQueue("fan"),
		boson.WithRetry(core.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond}))
	eventually(t, "the first attempt to fail", func() bool {
		j, _ := e.b.GetJob(ctx, h.ID())
		return j.LastError != ""
	})
	e.clock.Advance(time.Second)
	out, err := h.Wait(ctx)
	if err != nil || out != 100+104 {
		t.Fatalf("got %d %v", out, err)
	}
	if n := replayReads.Load(); n != 0 {
		t.Errorf("the replay read %d jobs, want 0", n)
	}
	// The first run parks unless the children were all done by the time
	// it read them.
	if st := runStatuses(t, e.b, h.ID()); len(st) < 2 || st[len(st)-2] != core.RunFailed || st[len(st)-1] != core.RunSucceeded {
		t.Errorf("parent runs %v, want [(sleeping) failed succeeded]", st)
	}
}

// AwaitAny returns the first child that ended and records it: a replay
// after another child also ended returns the same winner.
func TestAwaitAnyIsDeterministicOnReplay(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"fan", "kids"} })
	release := make([]chan struct{}, 3)
	for i := range release {
		release[i] = make(chan struct{})
	}
	var wins []int
	var mu sync.Mutex
	_ = boson.Register(w, fanChild, func(ctx context.Context, in int) (int, error) {
		select {
		case <-release[in]:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return in * 10, nil
	})
	_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
		hs, err := spawnChildren(ctx, e.client, "kids", n)
		if err != nil {
			return 0, err
		}
		i, v, err := boson.AwaitAny(ctx, hs)
		if err != nil {
			return 0, err
		}
		mu.Lock()
		wins = append(wins, i)
		mu.Unlock()
		if info, _ := boson.Info(ctx); info.Attempt == 1 {
			close(release[0]) // child 0 ends too before the replay
			for {
				if j, err := hs[0].Snapshot(ctx); err != nil || j.State == core.StateSucceeded {
					break
				}
				time.Sleep(time.Millisecond)
			}
			return 0, errors.New("crash after the fan-in")
		}
		return v, nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, fanParent, 3, boson.WithQueue("fan"),
		boson.WithRetry(core.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond}))
	waitParked(t, h)
	close(release[2])
	eventually(t, "the first attempt to fail", func() bool {
		j, _ := h.Snapshot(ctx)
		return j.LastError != ""
	})
	e.clock.Advance(time.Second)
	out, err := h.Wait(ctx)
	if err != nil || out != 20 {
		t.Fatalf("got %d %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(wins) != 2 || wins[0] != 2 || wins[1] != 2 {
		t.Fatalf("winners %v, want [2 2]", wins)
	}
	close(release[1])
}

// With CancelChildrenOnCancel, cancelling the parked parent cancels its
// children that have not ended; without it they keep going.
func TestAwaitCancelChildrenOnCancel(t *testing.T) {
	for _, cancelKids := range []bool{true, false} {
		t.Run(fmt.Sprint("cancel-children=", cancelKids), func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"fan"} })
			var kids []*boson.Handle[int]
			var mu sync.Mutex
			_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
				// The children sit in a queue no worker serves.
				hs, err := spawnChildren(ctx, e.client, "nobody", n)
				if err != nil {
					return 0, err
				}
				mu.Lock()
				kids = hs
				mu.Unlock()
				var opts []boson.AwaitOption
				if cancelKids {
					opts = append(opts, boson.CancelChildrenOnCancel())
				}
				_, err = boson.AwaitAll(ctx, hs, opts...)
				return 0, err
			})
			e.start(w)
			h, _ := boson.Spawn(ctx, e.client, fanParent, 4, boson.WithQueue("fan"))
			waitParked(t, h)
			if err := h.Cancel(ctx, "no longer needed"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range kids {
				j, err := k.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]core.JobState{true: core.StateCancelled, false: core.StateQueued}[cancelKids]; j.State != want {
					t.Errorf("child %s is %s, want %s", j.ID, j.State, want)
				}
			}
		})
	}
}

// A failed child gives a *TaskError once every child has ended; the
// others' results come back with it. A child retried meanwhile makes the
// parent wait again, and its new result counts.
func TestAwaitAllFailedChildAndRetry(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"fan"} })
	var failOnce atomic.Bool
	failOnce.Store(true)
	var sawErr, parentID atomic.Value
	_ = boson.Register(w, fanChild, func(ctx context.Context, in int) (int, error) {
		if in == 1 && failOnce.CompareAndSwap(true, false) {
			return 0, boson.Permanent(errors.New("bad input"))
		}
		if in == 1 {
			// The retried child ends only once the parent has parked on
			// it again: otherwise a fast worker could finish it before
			// the second await, which would then not park.
			waitSleeping(ctx, e.b, &parentID)
		}
		return in + 1, nil
	})
	_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
		hs, err := spawnChildren(ctx, e.client, "fan", n)
		if err != nil {
			return 0, err
		}
		outs, err := boson.AwaitAll(ctx, hs)
		var te *boson.TaskError
		if errors.As(err, &te) {
			sawErr.Store(fmt.Sprintf("%s %v %v", te.State, outs[0], outs[2]))
			if err := hs[1].Retry(ctx); err != nil {
				return 0, err
			}
			outs, err = boson.AwaitAll(ctx, hs) // child 1 is active again: park again
		}
		if err != nil {
			return 0, err
		}
		return outs[0] + outs[1] + outs[2], nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, fanParent, 3, boson.WithQueue("fan"))
	parentID.Store(h.ID())
	out, err := h.Wait(ctx)
	if err != nil || out != 1+2+3 {
		t.Fatalf("got %d %v", out, err)
	}
	if got, _ := sawErr.Load().(string); got != "failed 1 3" {
		t.Errorf("first wake saw %q, want the failure and the others' results", got)
	}
	if st := runStatuses(t, e.b, h.ID()); len(st) < 2 || st[len(st)-1] != core.RunSucceeded {
		t.Errorf("parent runs %v, want (sleeping)... succeeded", st)
	}
}

// A bound on the wait wakes the parent when it comes, and the await
// returns ErrAwaitTimeout with the results that are in.
func TestAwaitTimeout(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"fan"} })
	var got atomic.Value
	_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
		hs, err := spawnChildren(ctx, e.client, "nobody", n)
		if err != nil {
			return 0, err
		}
		_, _, err = boson.AwaitAny(ctx, hs, boson.AwaitTimeout(time.Minute))
		if errors.Is(err, boson.ErrAwaitTimeout) {
			got.Store(err.Error())
			return -1, nil
		}
		return 0, err
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, fanParent, 2, boson.WithQueue("fan"))
	waitParked(t, h)
	wt, err := e.b.JobWait(ctx, h.ID())
	if err != nil || wt.Until.IsZero() || wt.Mode != core.AwaitAny {
		t.Fatalf("wait %+v %v", wt, err)
	}
	e.clock.Advance(2 * time.Minute)
	out, err := h.Wait(ctx)
	if err != nil || out != -1 {
		t.Fatalf("got %d %v", out, err)
	}
	if s, _ := got.Load().(string); !strings.Contains(s, "2 of 2") {
		t.Errorf("timeout error %q", s)
	}
}

// noAwaiter hides the mem backend's Awaiter.
type noAwaiter struct{ core.QueueBackend }

// Bad input, a deleted child, a child of another store and a backend that
// cannot park a job each fail the parent with a clear error and park
// nothing.
func TestAwaitRefusals(t *testing.T) {
	cases := []struct {
		name string
		want error
		// children returns the handles the parent awaits.
		children func(ctx context.Context, e *env, other *boson.Client) ([]*boson.Handle[int], error)
		backend  func(e *env) core.QueueBackend
	}{
		{name: "no handles", want: core.ErrInvalidArgument, children: func(context.Context, *env, *boson.Client) ([]*boson.Handle[int], error) {
			return nil, nil
		}},
		{name: "nil handle", want: core.ErrInvalidArgument, children: func(context.Context, *env, *boson.Client) ([]*boson.Handle[int], error) {
			return []*boson.Handle[int]{nil}, nil
		}},
		{name: "itself", want: core.ErrInvalidArgument, children: func(ctx context.Context, e *env, _ *boson.Client) ([]*boson.Handle[int], error) {
			info, _ := boson.Info(ctx)
			h, err := boson.HandleFor(ctx, e.client, fanParent, info.JobID)
			return []*boson.Handle[int]{h}, err
		}},
		{name: "deleted", want: core.ErrNotFound, children: func(ctx context.Context, e *env, _ *boson.Client) ([]*boson.Handle[int], error) {
			hs, err := spawnChildren(ctx, e.client, "nobody", 2)
			if err == nil {
				err = e.b.DeleteJob(ctx, hs[1].ID(), false)
			}
			return hs, err
		}},
		{name: "other store", want: core.ErrInvalidArgument, children: func(ctx context.Context, _ *env, other *boson.Client) ([]*boson.Handle[int], error) {
			return spawnChildren(ctx, other, "nobody", 1)
		}},
		{name: "no awaiter", want: core.ErrUnsupported, children: func(ctx context.Context, e *env, _ *boson.Client) ([]*boson.Handle[int], error) {
			return spawnChildren(ctx, e.client, "nobody", 1)
		}, backend: func(e *env) core.QueueBackend { return noAwaiter{e.b} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			ob := mem.New(mem.Options{Logger: quiet})
			t.Cleanup(func() { _ = ob.Close() })
			other, _ := boson.NewClient(ob, boson.ClientOptions{Logger: quiet})
			o := boson.WorkerOptions{Queues: []string{"fan"}, Clock: e.clock, Logger: quiet, PollInterval: 10 * time.Millisecond, RescueInterval: -1, RetentionInterval: -1}
			b := core.QueueBackend(e.b)
			if tc.backend != nil {
				b = tc.backend(e)
			}
			w, err := boson.NewWorker(b, o)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
				hs, err := tc.children(ctx, e, other)
				if err != nil {
					return 0, err
				}
				_, err = boson.AwaitAll(ctx, hs)
				got <- err
				return 0, err
			})
			e.start(w)
			h, _ := boson.Spawn(ctx, e.client, fanParent, 0, boson.WithQueue("fan"), boson.WithMaxAttempts(5))
			_, err = h.Wait(ctx)
			j, _ := h.Snapshot(ctx)
			if !errors.Is(err, boson.ErrTaskFailed) || j.Attempt != 1 || !strings.Contains(j.LastError, "fan-in") {
				t.Fatalf("got %v; job %s attempt %d: %s", err, j.State, j.Attempt, j.LastError)
			}
			if st := runStatuses(t, e.b, h.ID()); len(st) != 1 || st[0] != core.RunFailed {
				t.Errorf("runs %v, want one failed run", st)
			}
			if _, err := e.b.JobWait(ctx, h.ID()); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("a wait was stored: %v", err)
			}
			if err := <-got; !errors.Is(err, tc.want) || !boson.IsPermanent(err) {
				t.Errorf("AwaitAll gave %v, want a permanent error wrapping %v", err, tc.want)
			}
		})
	}
}

// An invalid bound is refused, and AwaitAll outside a task.
func TestAwaitBadBound(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"fan"} })
	errs := make(chan error, 2)
	_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
		hs, err := spawnChildren(ctx, e.client, "nobody", 1)
		if err != nil {
			return 0, err
		}
		_, err = boson.AwaitAll(ctx, hs, boson.AwaitTimeout(0))
		errs <- err
		_, _, err = boson.AwaitAny(ctx, hs, boson.AwaitUntil(core.WaitForever))
		errs <- err
		return 0, nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, fanParent, 0, boson.WithQueue("fan"))
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; !errors.Is(err, core.ErrInvalidArgument) || !boson.IsPermanent(err) {
			t.Errorf("bound %d: %v, want a permanent error wrapping core.ErrInvalidArgument", i, err)
		}
	}
	if _, err := boson.AwaitAll[int](context.Background(), nil); !errors.Is(err, boson.ErrNotInTask) {
		t.Errorf("outside a task: %v", err)
	}
}

// refusingAwaiter is the mem backend whose store refuses every wait, as a
// store refuses one it cannot keep (say, across cluster slots).
type refusingAwaiter struct{ *mem.Backend }

func (refusingAwaiter) AwaitJobs(context.Context, core.AwaitRequest) (core.AwaitResult, error) {
	return core.AwaitResult{}, fmt.Errorf("%w: not across these queues", core.ErrUnsupported)
}

// A wait the store refuses fails the job at once, with the store's reason,
// instead of leaving it to its lease.
func TestAwaitRefusedByStore(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	b := refusingAwaiter{e.b}
	o := boson.WorkerOptions{Queues: []string{"fan"}, Clock: e.clock, Logger: quiet, PollInterval: 10 * time.Millisecond, RescueInterval: -1, RetentionInterval: -1}
	w, err := boson.NewWorker(b, o)
	if err != nil {
		t.Fatal(err)
	}
	_ = boson.Register(w, fanParent, func(ctx context.Context, n int) (int, error) {
		hs, err := spawnChildren(ctx, e.client, "nobody", n)
		if err != nil {
			return 0, err
		}
		_, err = boson.AwaitAll(ctx, hs)
		return 0, err
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, fanParent, 2, boson.WithQueue("fan"), boson.WithMaxAttempts(5))
	_, err = h.Wait(ctx)
	j, _ := h.Snapshot(ctx)
	if !errors.Is(err, boson.ErrTaskFailed) || j.Attempt != 1 || !strings.Contains(j.LastError, "not across these queues") {
		t.Fatalf("got %v; job %s attempt %d: %s", err, j.State, j.Attempt, j.LastError)
	}
}
