package redisq

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// TestDeleteWaiterAfterChild deletes, in one script, a job a sleeping job
// awaits and then the sleeping job, by a bulk delete in descending order
// (the child, the newer id, first) and by a DeleteQueue step (the task
// index puts task "child" first): the child's deletion counts it and wakes
// the waiter, whose deletion then drops it, and the script writes no
// record of the deleted waiter back.
func TestDeleteWaiterAfterChild(t *testing.T) {
	for _, how := range []string{"bulk", "queue"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			b := newBackend(t, standaloneClient(t), Options{})
			b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "parent"})
			jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claim = %v, %v", jobs, err)
			}
			child := b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "child"})
			if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: jobs[0].Lease, JobIDs: []string{child.ID}, Mode: core.AwaitAll}); err != nil {
				t.Fatal(err)
			}
			if how == "bulk" {
				res, err := core.Bulk(ctx, b, core.BulkRequest{Action: core.BulkDelete, Limit: 10, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "q", Desc: true}}})
				if err != nil || res.Changed != 2 || !res.Done {
					t.Fatalf("bulk delete = %+v, %v; want both jobs deleted", res, err)
				}
			} else {
				res, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q", Limit: 10})
				if err != nil || res.Deleted != 2 || !res.Done {
					t.Fatalf("delete queue = %+v, %v; want both jobs deleted", res, err)
				}
			}
			n, err := b.rdb.HLen(ctx, b.ks.queueKeys("q")[kJob]).Result()
			if err != nil || n != 0 {
				t.Fatalf("the job hash holds %d fields (%v), want none", n, err)
			}
		})
	}
}
