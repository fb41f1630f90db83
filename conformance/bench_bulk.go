package conformance

import (
	"context"
	"testing"

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
		req := core.BulkRequest{Action: core.BulkCancel, Limit: 1000, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "bench"}}}
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
	})
}
