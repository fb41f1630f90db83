package redisq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

func TestSmokeLifecycle(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	b := newBackend(t, standaloneClient(t), Options{Clock: clock})

	res, err := b.Enqueue(ctx, []core.EnqueueRequest{
		{Task: "a", Payload: []byte("p1"), Priority: 5},
		{Task: "a", Payload: []byte("p2"), Priority: -5, Headers: map[string]string{"x": "y"}},
		{Task: "b", RunAt: clock.Now().Add(time.Minute), IdempotencyKey: "k1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[2].Job.RunAt != clock.Now().Add(time.Minute) || !res[0].Job.CreatedAt.Equal(clock.Now()) {
		t.Fatalf("results %+v", res)
	}
	again, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "b", RunAt: clock.Now().Add(time.Minute), IdempotencyKey: "k1"}})
	if err != nil || !again[0].Reused || again[0].Job.ID != res[2].Job.ID {
		t.Fatalf("reuse: %+v %v", again, err)
	}
	_, err = b.Enqueue(ctx, []core.EnqueueRequest{{Task: "b", Payload: []byte("other"), IdempotencyKey: "k1"}})
	if !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}

	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w1", Limit: 10, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != res[1].Job.ID || jobs[0].Attempt != 1 || jobs[0].Lease.Token != 1 || jobs[0].Headers["x"] != "y" {
		t.Fatalf("claim: %+v", jobs)
	}
	if _, err := b.Heartbeat(ctx, jobs[0].Lease, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	errs, err := b.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease, Result: []byte("r")}, {Lease: core.Lease{JobID: jobs[1].ID, Token: 9}}})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], core.ErrLeaseLost) {
		t.Fatalf("complete: %v %v", errs, err)
	}
	st, err := b.Fail(ctx, core.Failure{Lease: jobs[1].Lease, Error: "boom", RetryAt: clock.Now().Add(time.Second)})
	if err != nil || st != core.StateQueued {
		t.Fatalf("fail: %v %v", st, err)
	}
	clock.Advance(2 * time.Minute)
	jobs2, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w2", Limit: 10, LeaseTTL: time.Minute})
	if err != nil || len(jobs2) != 2 {
		t.Fatalf("claim2: %+v %v", jobs2, err)
	}
	for _, j := range jobs2 {
		if j.ID == jobs[1].ID && (j.Attempt != 2 || j.Lease.Token != 2) {
			t.Fatalf("retried job %+v", j)
		}
	}
	if err := b.Sleep(ctx, jobs2[0].Lease, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	v, err := b.SaveCheckpoint(ctx, jobs2[1].Lease, "s1", []byte("v1"))
	if err != nil || string(v) != "v1" {
		t.Fatal(v, err)
	}
	v, _ = b.SaveCheckpoint(ctx, jobs2[1].Lease, "s1", []byte("v2"))
	if string(v) != "v1" {
		t.Fatal(string(v))
	}
	cps, err := b.Checkpoints(ctx, jobs2[1].ID)
	if err != nil || len(cps) != 1 || cps[0].Step != "s1" {
		t.Fatal(cps, err)
	}
	clock.Advance(2 * time.Minute)
	rr, err := b.Rescue(ctx, core.RescueRequest{Limit: 10})
	if err != nil || rr.Requeued != 1 {
		t.Fatalf("rescue %+v %v", rr, err)
	}
	c, err := b.Cancel(ctx, jobs2[1].ID, "")
	if err != nil || c.State != core.StateCancelled {
		t.Fatal(c, err)
	}
	r, err := b.Retry(ctx, jobs2[1].ID)
	if err != nil || r.State != core.StateQueued {
		t.Fatal(r, err)
	}
	runs, err := b.ListRuns(ctx, jobs2[1].ID)
	if err != nil || len(runs) == 0 {
		t.Fatal(runs, err)
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counts %v runs %+v", counts, runs)
	page, err := b.ListJobs(ctx, core.JobFilter{Limit: 2})
	if err != nil || len(page.Jobs) != 2 || page.Next == "" {
		t.Fatalf("page %+v %v", page, err)
	}
	page2, err := b.ListJobs(ctx, core.JobFilter{Limit: 2, Cursor: page.Next})
	if err != nil || len(page2.Jobs) != 1 || page2.Next != "" {
		t.Fatalf("page2 %+v %v", page2, err)
	}
	stats, err := b.TaskStats(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v", stats)
	qs, err := b.ListQueues(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatal(qs, err)
	}
	n, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: clock.Now().Add(time.Hour), Limit: 10})
	if err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if _, err := b.GetJob(ctx, jobs[0].ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatal(err)
	}
}
