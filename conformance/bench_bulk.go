package conformance

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// perJobBulk hides a backend's core.BulkActor, so that core.Bulk runs
// each step with one Cancel, Retry or DeleteJob call per job.
type perJobBulk struct {
	core.QueueBackend
	core.JobSearcher
}

// benchBulkCancel cancels b.N queued jobs with core.Bulk in steps of
// 1,000; with perJob set, through the per-job calls even when the backend
// runs bulk steps itself. A backend without search skips it.
func benchBulkCancel(b *testing.B, h Harness, perJob bool) {
	var target core.QueueBackend
	benchTimed(b, h, "jobs", func(ctx context.Context, be core.QueueBackend) {
		js, ok := be.(core.JobSearcher)
		if !ok {
			b.Skip("the backend does not search jobs")
		}
		target = be
		if perJob {
			target = perJobBulk{be, js}
		}
		enqueueAll(b, be, b.N, benchReq, nil)
	}, func(ctx context.Context, be core.QueueBackend) int {
		return bulkCancelQueue(ctx, b, target, "bench")
	})
}

// benchBulkWhileDraining cancels b.N queued jobs of queue "bulk" with
// core.Bulk in steps of 1,000 while a worker keeps draining queue "bench"
// of the same store: it claims up to 10 jobs, completes them and enqueues
// as many new ones, so that a backlog of 1,000 stays, as an operator's
// bulk action meets a running fleet. The timer starts once the worker has
// completed its first jobs. It reports the cancels per second and the
// jobs the worker completed per second meanwhile. A backend without
// search skips it.
func benchBulkWhileDraining(b *testing.B, h Harness) {
	var stop context.CancelFunc
	var completed atomic.Int64
	finished := make(chan struct{})
	var during int64
	benchTimed(b, h, "jobs", func(ctx context.Context, be core.QueueBackend) {
		if _, ok := be.(core.JobSearcher); !ok {
			b.Skip("the backend does not search jobs")
		}
		enqueueAll(b, be, b.N, func(int) core.EnqueueRequest {
			return core.EnqueueRequest{Queue: "bulk", Task: "bench", Payload: []byte(`{"n":1}`)}
		}, nil)
		enqueueAll(b, be, 1000, benchReq, nil)
		var wctx context.Context
		wctx, stop = context.WithCancel(ctx)
		go func() {
			defer close(finished)
			keepDraining(wctx, be, &completed)
		}()
		for completed.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
	}, func(ctx context.Context, be core.QueueBackend) int {
		before := completed.Load()
		n := bulkCancelQueue(ctx, b, be, "bulk")
		during = completed.Load() - before
		return n
	})
	stop()
	<-finished
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(during)/s, "completed/s")
	}
}

// keepDraining claims up to 10 jobs of queue "bench" at a time, completes
// them, counts them in completed and enqueues as many new ones, until ctx
// ends. An error or an empty claim is retried after a millisecond.
func keepDraining(ctx context.Context, be core.QueueBackend, completed *atomic.Int64) {
	for ctx.Err() == nil {
		jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench", WorkerID: "drainer", Limit: 10, LeaseTTL: time.Minute})
		if err != nil || len(jobs) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease}
		}
		if _, err := be.Complete(ctx, items); err != nil {
			continue
		}
		completed.Add(int64(len(jobs)))
		_, _ = be.Enqueue(ctx, benchReqs(len(jobs)))
	}
}

// bulkCancelQueue cancels every job of queue with core.Bulk on target in
// steps of 1,000 and returns how many it changed; it fails b unless that
// is b.N.
func bulkCancelQueue(ctx context.Context, b *testing.B, target core.QueueBackend, queue string) int {
	b.Helper()
	req := core.BulkRequest{Action: core.BulkCancel, Limit: 1000, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: queue}}}
	changed := 0
	for {
		res, err := core.Bulk(ctx, target, req)
		if err != nil {
			b.Fatalf("Bulk: %v", err)
		}
		changed += res.Changed
		if res.Done {
			break
		}
		req.Cursor = res.Next
	}
	if changed != b.N {
		b.Fatalf("bulk cancel changed %d of %d jobs", changed, b.N)
	}
	return changed
}
