package sqltest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// AwaitBackend is a backend with fan-in and the operations the fan-in
// tests drive.
type AwaitBackend interface {
	core.QueueBackend
	core.Awaiter
	core.JobDeleter
	core.BulkActor
}

// Await runs the store's own fan-in tests against backends from open.
func Await(t *testing.T, open func(t *testing.T) AwaitBackend) {
	t.Run("AllCountsEveryPath", func(t *testing.T) { awaitAllPaths(t, open(t)) })
	t.Run("AnyAndAtOnce", func(t *testing.T) { awaitAny(t, open(t)) })
	t.Run("RefusedChangesNothing", func(t *testing.T) { awaitRefused(t, open(t)) })
	t.Run("CancelChildren", func(t *testing.T) { awaitCancelChildren(t, open(t)) })
	t.Run("StaleWaitNeverWakes", func(t *testing.T) { awaitStale(t, open(t)) })
	t.Run("ConcurrentCompletions", func(t *testing.T) { awaitConcurrent(t, open(t)) })
}

// enqueueN enqueues n jobs of queue with maxAttempts and returns their ids.
func enqueueN(t *testing.T, b core.QueueBackend, queue string, n, maxAttempts int) []string {
	t.Helper()
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: queue, Task: "t", MaxAttempts: maxAttempts}
	}
	res := try(b.Enqueue(context.Background(), reqs)).must(t)
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

// claimAll claims up to limit jobs of queue.
func claimAll(t *testing.T, b core.QueueBackend, queue string, limit int) []core.Job {
	t.Helper()
	return try(b.Claim(context.Background(), core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: limit, LeaseTTL: time.Minute})).must(t)
}

// parked starts a parent in queue "p" and parks it on children.
func parked(t *testing.T, b AwaitBackend, req core.AwaitRequest) (core.Job, core.AwaitResult) {
	t.Helper()
	enqueueN(t, b, "p", 1, 3)
	p := claimOne(t, b, "p")
	req.Lease = p.Lease
	res := try(b.AwaitJobs(context.Background(), req)).must(t)
	return p, res
}

// due reports whether job id is claimable now (claiming it when it is).
func due(t *testing.T, b core.QueueBackend, queue string) (core.Job, bool) {
	t.Helper()
	jobs := claimAll(t, b, queue, 1)
	if len(jobs) == 0 {
		return core.Job{}, false
	}
	return jobs[0], true
}

func wantWait(t *testing.T, b core.Awaiter, id string, pending int, woken bool) core.Wait {
	t.Helper()
	w := try(b.JobWait(context.Background(), id)).must(t)
	if w.Pending != pending || w.Woken != woken {
		t.Fatalf("wait of %s: pending %d woken %v, want %d %v (token %d, %d jobs)", id, w.Pending, w.Woken, pending, woken, w.Token, len(w.JobIDs))
	}
	return w
}

// awaitAllPaths counts one child per terminal path: Complete, Fail
// without retry, Cancel, bulk cancel, DeleteJob and Rescue out of
// attempts; the parent wakes at the last and keeps its attempt.
func awaitAllPaths(t *testing.T, b AwaitBackend) {
	ctx := context.Background()
	kids := enqueueN(t, b, "c", 6, 1)
	p, res := parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAll})
	if res.Pending != 6 || res.Woken {
		t.Fatalf("await: %+v", res)
	}
	w := wantWait(t, b, p.ID, 6, false)
	if w.Token != p.Lease.Token || w.Mode != core.AwaitAll || len(w.JobIDs) != 6 || w.JobIDs[0] != kids[0] {
		t.Fatalf("wait: %+v", w)
	}
	if _, ok := due(t, b, "p"); ok {
		t.Fatal("parked parent claimable")
	}
	jobs := claimAll(t, b, "c", 6)
	byID := map[string]core.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	complete(t, b, byID[kids[0]])
	wantWait(t, b, p.ID, 5, false)
	if st := try(b.Fail(ctx, core.Failure{Lease: byID[kids[1]].Lease, Error: "x"})).must(t); st != core.StateFailed {
		t.Fatalf("fail: %s", st)
	}
	wantWait(t, b, p.ID, 4, false)
	try(b.Cancel(ctx, kids[2], "")).must(t)
	wantWait(t, b, p.ID, 3, false)
	r := try(b.BulkStep(ctx, core.BulkRequest{Action: core.BulkCancel, Search: core.JobSearch{IDs: []string{kids[3]}}, Limit: 10})).must(t)
	if r.Changed != 1 {
		t.Fatalf("bulk cancel: %+v", r)
	}
	wantWait(t, b, p.ID, 2, false)
	if err := b.DeleteJob(ctx, kids[4], true); err != nil {
		t.Fatal(err)
	}
	wantWait(t, b, p.ID, 1, false)
	// A delete of a counted (terminal) child counts nothing more.
	if err := b.DeleteJob(ctx, kids[0], false); err != nil {
		t.Fatal(err)
	}
	wantWait(t, b, p.ID, 1, false)
	if _, ok := due(t, b, "p"); ok {
		t.Fatal("parent due before its last child")
	}
	// The last child runs out of attempts in Rescue.
	lease := byID[kids[5]].Lease
	if _, err := b.Heartbeat(ctx, lease, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(550 * time.Millisecond)
	rr := try(b.Rescue(ctx, core.RescueRequest{Limit: 10})).must(t)
	if rr.Failed != 1 {
		t.Fatalf("rescue: %+v", rr)
	}
	wantWait(t, b, p.ID, 0, true)
	again, ok := due(t, b, "p")
	if !ok || again.ID != p.ID || again.Attempt != p.Attempt {
		t.Fatalf("woken parent: %v %+v (was attempt %d)", ok, again, p.Attempt)
	}
	complete(t, b, again)
	// Deleting the waiter removes its wait.
	if err := b.DeleteJob(ctx, p.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JobWait(ctx, p.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("wait of a deleted job: %v", err)
	}
}

// awaitAny wakes at once when a child is already terminal, and on the
// first child otherwise; a retried child does not count twice.
func awaitAny(t *testing.T, b AwaitBackend) {
	ctx := context.Background()
	kids := enqueueN(t, b, "c", 3, 1)
	try(b.Cancel(ctx, kids[0], "")).must(t)
	p, res := parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAny})
	if res.Pending != 2 || !res.Woken {
		t.Fatalf("await any with a terminal child: %+v", res)
	}
	again, ok := due(t, b, "p")
	if !ok || again.ID != p.ID {
		t.Fatal("parent woken at once is not due")
	}
	res = try(b.AwaitJobs(ctx, core.AwaitRequest{Lease: again.Lease, JobIDs: kids[1:], Mode: core.AwaitAny})).must(t)
	if res.Pending != 2 || res.Woken {
		t.Fatalf("await any: %+v", res)
	}
	try(b.Cancel(ctx, kids[1], "")).must(t)
	wantWait(t, b, p.ID, 1, true)
	// Retry and cancel it again: the wait does not count it twice.
	try(b.Retry(ctx, kids[1])).must(t)
	try(b.Cancel(ctx, kids[1], "")).must(t)
	wantWait(t, b, p.ID, 1, true)
	if _, ok := due(t, b, "p"); !ok {
		t.Fatal("woken parent not due")
	}
}

// awaitRefused: a stale lease, an unknown child and a bad request change
// nothing and keep the claim.
func awaitRefused(t *testing.T, b AwaitBackend) {
	ctx := context.Background()
	kids := enqueueN(t, b, "c", 2, 1)
	enqueueN(t, b, "p", 1, 3)
	p := claimOne(t, b, "p")
	stale := p.Lease
	stale.Token++
	_, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: stale, JobIDs: kids, Mode: core.AwaitAll})
	wantErr(t, "stale lease", err, core.ErrLeaseLost)
	_, err = b.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: []string{kids[0], "nope"}, Mode: core.AwaitAll})
	wantErr(t, "unknown child", err, core.ErrNotFound)
	_, err = b.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: []string{p.ID}, Mode: core.AwaitAll})
	wantErr(t, "self", err, core.ErrInvalidArgument)
	if _, err := b.JobWait(ctx, p.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("wait after refusals: %v", err)
	}
	complete(t, b, p) // the claim was kept
	// The children carry no waiter: completing them touches nothing.
	for _, j := range claimAll(t, b, "c", 2) {
		complete(t, b, j)
	}
}

// awaitCancelChildren: cancelling a current waiter with CancelChildren
// cancels its open children (recursively); without it, they are left.
func awaitCancelChildren(t *testing.T, b AwaitBackend) {
	ctx := context.Background()
	kids := enqueueN(t, b, "c", 3, 1)
	done := claimAll(t, b, "c", 1)[0]
	complete(t, b, done)
	// One child waits itself on a grandchild, with CancelChildren.
	grand := enqueueN(t, b, "g", 1, 1)
	var mid core.Job
	for _, j := range claimAll(t, b, "c", 2) {
		if mid.ID == "" {
			mid = j
			try(b.AwaitJobs(ctx, core.AwaitRequest{Lease: j.Lease, JobIDs: grand, Mode: core.AwaitAll, CancelChildren: true})).must(t)
		}
	}
	p, _ := parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAll, CancelChildren: true})
	try(b.Cancel(ctx, p.ID, "")).must(t)
	for _, id := range append(kids, grand...) {
		j := try(b.GetJob(ctx, id)).must(t)
		want := core.StateCancelled
		if id == done.ID {
			want = core.StateSucceeded
		}
		if j.State != want {
			t.Fatalf("job %s: %s, want %s", id, j.State, want)
		}
	}
	wantWait(t, b, p.ID, 0, false)
	// Without the option the children stay.
	kids = enqueueN(t, b, "c2", 1, 1)
	p, _ = parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAll})
	try(b.Cancel(ctx, p.ID, "")).must(t)
	if j := try(b.GetJob(ctx, kids[0])).must(t); j.State != core.StateQueued {
		t.Fatalf("child of a waiter without CancelChildren: %s", j.State)
	}
}

// awaitStale: a parent claimed at Until is not woken by its old wait.
func awaitStale(t *testing.T, b AwaitBackend) {
	ctx := context.Background()
	kids := enqueueN(t, b, "c", 1, 1)
	p, _ := parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAll, Until: time.Now().Add(30 * time.Millisecond)})
	time.Sleep(60 * time.Millisecond)
	again, ok := due(t, b, "p")
	if !ok || again.ID != p.ID {
		t.Fatal("parent not due at Until")
	}
	if err := b.Sleep(ctx, again.Lease, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	complete(t, b, claimOne(t, b, "c"))
	if _, ok := due(t, b, "p"); ok {
		t.Fatal("stale wait woke a sleeping parent")
	}
	w := try(b.JobWait(ctx, p.ID)).must(t)
	if w.Woken || w.Token != p.Lease.Token {
		t.Fatalf("stale wait: %+v", w)
	}
}

// awaitConcurrent completes many children of one waiter from several
// goroutines in batches: no deadlock, every child counted, one wake.
func awaitConcurrent(t *testing.T, b AwaitBackend) {
	const n, workers = 400, 8
	ctx := context.Background()
	kids := enqueueN(t, b, "c", n, 1)
	p, _ := parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAll})
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "c", WorkerID: fmt.Sprint("w", w), Limit: 10, LeaseTTL: time.Minute})
				if err != nil {
					errc <- err
					return
				}
				if len(jobs) == 0 {
					return
				}
				cs := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					cs[i] = core.Completion{Lease: j.Lease}
				}
				errs, err := b.Complete(ctx, cs)
				if err == nil {
					err = errors.Join(errs...)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	wantWait(t, b, p.ID, 0, true)
	again, ok := due(t, b, "p")
	if !ok || again.ID != p.ID {
		t.Fatal("parent not woken")
	}
}

// AwaitDown checks the down step of the fan-in migration on b, migrated
// and holding a wait: down undoes it (the wait is forgotten and the
// parked job stays sleeping), up applies it again, and then a new wait
// on the same jobs works as on a fresh store.
func AwaitDown(t *testing.T, b AwaitBackend, down, up func() error) {
	ctx := context.Background()
	kids := enqueueN(t, b, "c", 2, 1)
	p, _ := parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAll})
	if err := down(); err != nil {
		t.Fatal(err)
	}
	if err := up(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JobWait(ctx, p.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("wait after down and up: %v", err)
	}
	if j := try(b.GetJob(ctx, p.ID)).must(t); j.State != core.StateSleeping {
		t.Fatalf("parked job after down and up: %s", j.State)
	}
	// The children carry no waits any more: completing one wakes nothing.
	complete(t, b, claimOne(t, b, "c"))
	p2, res := parked(t, b, core.AwaitRequest{JobIDs: kids, Mode: core.AwaitAll})
	if res.Pending != 1 || res.Woken {
		t.Fatalf("await after down and up: %+v", res)
	}
	complete(t, b, claimOne(t, b, "c"))
	wantWait(t, b, p2.ID, 0, true)
	if got, ok := due(t, b, "p"); !ok || got.ID != p2.ID {
		t.Fatalf("woken job after down and up: %v %v", ok, got.ID)
	}
}
