package natsq_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
)

// Compaction on both server versions: after a snapshot and a purge, a new
// replica reads exactly what the writer reads, and work goes on.
func TestCompaction(t *testing.T) {
	for _, srv := range []struct {
		name string
		url  func(testing.TB) string
	}{{"embedded", embeddedURL}, {"server", externalURL}} {
		t.Run(srv.name, func(t *testing.T) {
			url := srv.url(t)
			nc := connect(t, url)
			ctx := context.Background()
			clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
			opts := natsq.Options{Namespace: namespace("compact"), DecisionClock: clock, CompactEvery: 40, CompactKeep: 5}
			w := newBackend(t, nc, opts)
			for i := 0; i < 60; i++ {
				res, err := w.Enqueue(ctx, []core.EnqueueRequest{{Task: "c", IdempotencyKey: fmt.Sprint(i), Payload: []byte(fmt.Sprint(i))}})
				if err != nil {
					t.Fatal(err)
				}
				jobs, err := w.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
				if err != nil || len(jobs) != 1 {
					t.Fatalf("claim: %v", err)
				}
				if _, err := w.SaveCheckpoint(ctx, jobs[0].Lease, "s", []byte("v")); err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 {
					_, err = w.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease, Result: res[0].Job.Payload}})
				} else {
					_, err = w.Fail(ctx, core.Failure{Lease: jobs[0].Lease, Error: "again", RetryAt: clock.Now().Add(time.Hour)})
				}
				if err != nil {
					t.Fatal(err)
				}
				clock.Advance(time.Second)
			}
			seq, err := w.Compact(ctx)
			if err != nil || seq == 0 {
				t.Fatalf("compact: %d %v", seq, err)
			}
			r, err := natsq.New(ctx, connect(t, url), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, f := range []core.JobFilter{{Limit: 1000}, {States: []core.JobState{core.StateQueued}, Desc: true}} {
				a, err1 := w.ListJobs(ctx, f)
				b, err2 := r.ListJobs(ctx, f)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) || len(a.Jobs) == 0 {
					t.Fatalf("listings differ: %v %v\n%+v\n%+v", err1, err2, a, b)
				}
				for _, j := range a.Jobs {
					ra, _ := w.ListRuns(ctx, j.ID)
					rb, _ := r.ListRuns(ctx, j.ID)
					ca, _ := w.Checkpoints(ctx, j.ID)
					cb, _ := r.Checkpoints(ctx, j.ID)
					if !reflect.DeepEqual(ra, rb) || !reflect.DeepEqual(ca, cb) {
						t.Fatalf("runs or checkpoints of %s differ", j.ID)
					}
				}
			}
			sa, _ := w.TaskStats(ctx, "c")
			sb, _ := r.TaskStats(ctx, "c")
			if !reflect.DeepEqual(sa, sb) {
				t.Fatalf("stats differ: %+v %+v", sa, sb)
			}
			again, err := r.Enqueue(ctx, []core.EnqueueRequest{{Task: "c", IdempotencyKey: "7", Payload: []byte("7")}})
			if err != nil || !again[0].Reused {
				t.Fatalf("key held before the snapshot: %v %+v", err, again)
			}
		})
	}
}
