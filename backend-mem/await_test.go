package mem

import (
	"context"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestAwaitLeavesNothing: the edges of a wait go once its jobs end, a
// wait replaced by another keeps no edge, a deleted waiting job keeps no
// wait, and a store that never waited never allocates either map.
func TestAwaitLeavesNothing(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	b := New(Options{Clock: clock})
	defer b.Close()
	enqueue := func(queue string, n int) []string {
		reqs := make([]core.EnqueueRequest, n)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: queue, Task: "t"}
		}
		res, err := b.Enqueue(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, n)
		for i, r := range res {
			ids[i] = r.Job.ID
		}
		return ids
	}
	claim := func(queue string, n int) []core.Job {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: n, LeaseTTL: time.Minute})
		if err != nil || len(jobs) != n {
			t.Fatalf("Claim(%s, %d): %d jobs, %v", queue, n, len(jobs), err)
		}
		return jobs
	}
	completeAll := func(jobs []core.Job) {
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease}
		}
		if _, err := b.Complete(ctx, items); err != nil {
			t.Fatal(err)
		}
	}

	enqueue("c", 3)
	completeAll(claim("c", 3))
	if b.s.waits != nil || b.s.edges != nil {
		t.Fatal("a store without waits allocated their maps")
	}

	enqueue("p", 1)
	p := claim("p", 1)[0]
	kids := enqueue("c", 100)
	if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: kids, Mode: core.AwaitAll}); err != nil {
		t.Fatal(err)
	}
	if len(b.s.edges) != 100 {
		t.Fatalf("%d edges for a wait on 100 jobs", len(b.s.edges))
	}
	completeAll(claim("c", 100))
	if len(b.s.edges) != 0 {
		t.Fatalf("%d edges left after every awaited job ended", len(b.s.edges))
	}
	for _, id := range kids {
		if b.s.ids.find(id).awaited {
			t.Fatalf("job %s is still marked awaited", id)
		}
	}

	x := enqueue("c", 1)
	for range 3 {
		l := claim("p", 1)[0].Lease
		if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: l, JobIDs: x, Mode: core.AwaitAny, Until: clock.Now().Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if n := len(b.s.edges[x[0]]); n != 1 {
		t.Fatalf("job awaited by three successive waits of one job holds %d edges, want 1", n)
	}
	if err := b.DeleteJob(ctx, p.ID, false); err != nil {
		t.Fatal(err)
	}
	if len(b.s.waits) != 0 {
		t.Fatalf("%d waits left after the waiting job was deleted", len(b.s.waits))
	}
	completeAll(claim("c", 1))
	if len(b.s.edges) != 0 {
		t.Fatalf("%d edges left", len(b.s.edges))
	}
}
