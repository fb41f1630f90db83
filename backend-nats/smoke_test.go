package natsq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
)

func TestSmoke(t *testing.T) {
	for _, srv := range []struct {
		name string
		url  func(testing.TB) string
	}{{"embedded", embeddedURL}, {"external", externalURL}} {
		t.Run(srv.name, func(t *testing.T) {
			nc := connect(t, srv.url(t))
			clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
			b := newBackend(t, nc, natsq.Options{DecisionClock: clock})
			ctx := context.Background()
			res, err := b.Enqueue(ctx, []core.EnqueueRequest{
				{Task: "a", Priority: 5}, {Task: "b", Priority: -1}, {Task: "c", RunAt: clock.Now().Add(time.Minute)},
			})
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 2 || jobs[0].ID != res[1].Job.ID || jobs[1].ID != res[0].Job.ID {
				t.Fatalf("claim order: %+v", jobs)
			}
			if jobs[0].Lease.Token != 1 || jobs[0].Attempt != 1 {
				t.Fatalf("lease %+v attempt %d", jobs[0].Lease, jobs[0].Attempt)
			}
			errs, err := b.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease, Result: []byte("ok")}, {Lease: core.Lease{JobID: jobs[1].ID, Token: 9}}})
			if err != nil || errs[0] != nil || !errors.Is(errs[1], core.ErrLeaseLost) {
				t.Fatalf("complete: %v %v", errs, err)
			}
			clock.Advance(time.Minute)
			jobs, err = b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
			if err != nil || len(jobs) != 1 || jobs[0].ID != res[2].Job.ID {
				t.Fatalf("second claim: %v %+v", err, jobs)
			}
			// A second replica on the same namespace replays the log.
			ns := res[0].Job.ID
			_ = ns
		})
	}
}
