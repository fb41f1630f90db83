package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// BenchmarkListJobs measures one page of ListJobs over 20,000 jobs in two
// queues (2,000 of them claimed and 1,000 of those completed): every state,
// one task in one state, and the largest page.
func BenchmarkListJobs(b *testing.B) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	be := newBackend(b, standaloneClient(b), Options{Clock: clock})
	for range 20 {
		var reqs []core.EnqueueRequest
		for i := range 1000 {
			reqs = append(reqs, core.EnqueueRequest{Queue: []string{"q1", "q2"}[i%2], Task: []string{"a", "b"}[i/2%2]})
		}
		if _, err := be.Enqueue(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range []string{"q1", "q2"} {
		jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: q, WorkerID: "w", Limit: 1000, LeaseTTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		var done []core.Completion
		for _, j := range jobs[:500] {
			done = append(done, core.Completion{Lease: j.Lease})
		}
		if _, err := be.Complete(ctx, done); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		f    core.JobFilter
		want int
	}{
		{"all/100", core.JobFilter{}, 100},
		{"task-succeeded/100", core.JobFilter{Task: "a", States: []core.JobState{core.StateSucceeded}}, 100},
		{"running/100", core.JobFilter{Queue: "q1", States: []core.JobState{core.StateRunning}}, 100},
		{"all/1000", core.JobFilter{Limit: 1000}, 1000},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := be.ListJobs(ctx, c.f)
				if err != nil || len(page.Jobs) != c.want {
					b.Fatalf("%d jobs, %v", len(page.Jobs), err)
				}
			}
		})
	}
}
