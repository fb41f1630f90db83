package redisq

import (
	"context"
	"fmt"
	"testing"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// TestBulkStepPerSlot cancels the jobs of three queues, enqueued in runs of
// five per queue, in steps of up to ten over every queue. On a cluster
// with a slot per queue each step ends where its run ends (five jobs of
// one queue, one slot) and resumes after it; on one node and with OneSlot
// a step spans queues (ten jobs). Either way the steps cancel every job
// once.
func TestBulkStepPerSlot(t *testing.T) {
	standalone := func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }
	cluster := func(t testing.TB) redis.UniversalClient { return clusterClient(t) }
	for _, c := range []struct {
		name   string
		client func(t testing.TB) redis.UniversalClient
		opts   Options
		step   int
	}{
		{"standalone", standalone, Options{}, 10},
		{"cluster-one-slot", cluster, Options{OneSlot: true}, 10},
		{"cluster-slots", cluster, Options{}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			b := newBackend(t, c.client(t), c.opts)
			const runs, run = 6, 5
			for i := range runs {
				reqs := make([]core.EnqueueRequest, run)
				for j := range reqs {
					reqs[j] = core.EnqueueRequest{Queue: fmt.Sprint("q", i%3), Task: "t"}
				}
				if _, err := b.Enqueue(ctx, reqs); err != nil {
					t.Fatal(err)
				}
			}
			req := core.BulkRequest{Action: core.BulkCancel, Limit: 10}
			changed := 0
			for step := 1; ; step++ {
				res, err := core.Bulk(ctx, b, req)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if res.Matched != int64(c.step) || res.Changed != c.step {
					t.Fatalf("step %d = %+v, want %d jobs changed", step, res, c.step)
				}
				changed += res.Changed
				if res.Done {
					break
				}
				req.Cursor = res.Next
			}
			counts, err := b.CountJobs(ctx, core.JobFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if changed != runs*run || counts[core.StateCancelled] != runs*run {
				t.Fatalf("the steps changed %d jobs, leaving %v; want all %d cancelled", changed, counts, runs*run)
			}
		})
	}
}
