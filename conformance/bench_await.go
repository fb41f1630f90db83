package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// Fan-in benchmarks, run by [Bench] when the harness declares Await:
//
//   - Await/fanIn1000: one job waits on 1,000 children, which are claimed
//     and completed in batches of 100, until the woken job is claimed.
//     b.N counts fan-ins: ns/op is the time from AwaitJobs to the claim
//     of the woken job, and children/s the children it went through.
//   - Await/completeWaited and Await/completeUnwaited: claim 100 children
//     and complete them in one call, with every child awaited (1,000 per
//     waiting job, which the last of them wakes) and with no wait at all.
//     b.N counts children, so ns/op is the time per child and the pair
//     reads as the cost of a wait on the hot path.
func benchAwait(b *testing.B, h Harness) {
	b.Run("Await/fanIn1000", func(b *testing.B) { benchFanIn(b, h, 1000) })
	b.Run("Await/completeWaited", func(b *testing.B) { benchAwaitComplete(b, h, true) })
	b.Run("Await/completeUnwaited", func(b *testing.B) { benchAwaitComplete(b, h, false) })
}

// awaitBenchBatch is how many children one claim and one Complete take.
const awaitBenchBatch = 100

// benchParents enqueues n jobs in queue "bench-parent" and claims them.
func benchParents(b *testing.B, be core.QueueBackend, n int) []core.Job {
	b.Helper()
	ctx := context.Background()
	enqueueAll(b, be, n, func(int) core.EnqueueRequest {
		return core.EnqueueRequest{Queue: "bench-parent", Task: "parent"}
	}, nil)
	var out []core.Job
	for len(out) < n {
		jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench-parent", WorkerID: "bench", Limit: min(n-len(out), 1000), LeaseTTL: time.Hour})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim of the waiting jobs: %d jobs, %v", len(jobs), err)
		}
		out = append(out, jobs...)
	}
	return out
}

// benchChildren enqueues n children in queue "bench" and returns their ids.
func benchChildren(b *testing.B, be core.QueueBackend, n int) []string {
	b.Helper()
	ids := make([]string, 0, n)
	enqueueAll(b, be, n, benchReq, func(r core.EnqueueResult) { ids = append(ids, r.Job.ID) })
	return ids
}

// benchAwaiter returns be as a core.Awaiter, and fails b when it is not one.
func benchAwaiter(b *testing.B, be core.QueueBackend) core.Awaiter {
	b.Helper()
	a, ok := be.(core.Awaiter)
	if !ok {
		b.Fatalf("the harness declares Await but %T does not implement core.Awaiter", be)
	}
	return a
}

func benchFanIn(b *testing.B, h Harness, children int) {
	var a core.Awaiter
	benchTimed(b, h, "children", func(ctx context.Context, be core.QueueBackend) {
		a = benchAwaiter(b, be)
	}, func(ctx context.Context, be core.QueueBackend) int {
		for range b.N {
			b.StopTimer()
			p := benchParents(b, be, 1)[0]
			ids := benchChildren(b, be, children)
			b.StartTimer()
			res, err := a.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: ids, Mode: core.AwaitAll})
			if err != nil || res.Pending != children {
				b.Fatalf("AwaitJobs: %+v, %v", res, err)
			}
			drainBench(b, be, children, awaitBenchBatch)
			jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench-parent", WorkerID: "bench", Limit: 1, LeaseTTL: time.Minute})
			if err != nil || len(jobs) != 1 || jobs[0].ID != p.ID {
				b.Fatalf("Claim of the woken job: %d jobs, %v", len(jobs), err)
			}
			b.StopTimer()
			if _, err := be.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease}}); err != nil {
				b.Fatalf("Complete: %v", err)
			}
			b.StartTimer()
		}
		return b.N * children
	})
}

func benchAwaitComplete(b *testing.B, h Harness, waited bool) {
	benchTimed(b, h, "jobs", func(ctx context.Context, be core.QueueBackend) {
		ids := benchChildren(b, be, b.N)
		if !waited {
			return
		}
		a := benchAwaiter(b, be)
		const group = 1000
		parents := benchParents(b, be, (len(ids)+group-1)/group)
		for i, p := range parents {
			g := ids[i*group : min((i+1)*group, len(ids))]
			if _, err := a.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: g, Mode: core.AwaitAll}); err != nil {
				b.Fatalf("AwaitJobs: %v", err)
			}
		}
	}, func(ctx context.Context, be core.QueueBackend) int {
		drainBench(b, be, b.N, awaitBenchBatch)
		return b.N
	})
}
