package redisq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// BenchmarkClaimSaturatedKeys measures a claim of 10 and the completion of
// what it took, on a queue whose head holds a job for each of n limit keys
// that are all at their MaxRunningPerKey of 1 (one job of each runs): the
// held-back jobs wait in their keys' gates, out of the claim's way, so the
// cost must not grow with n.
func BenchmarkClaimSaturatedKeys(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			be := newBackend(b, standaloneClient(b), Options{})
			if err := be.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxRunningPerKey: 1}); err != nil {
				b.Fatal(err)
			}
			// two jobs per key: one runs, one is held back
			for i := 0; i < 2*n; i += 1000 {
				var reqs []core.EnqueueRequest
				for j := i; j < min(i+1000, 2*n); j++ {
					reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t", LimitKey: fmt.Sprintf("k%d", j%n)})
				}
				if _, err := be.Enqueue(ctx, reqs); err != nil {
					b.Fatal(err)
				}
			}
			for {
				jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "hold", Limit: 1000, LeaseTTL: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				if len(jobs) == 0 {
					break
				}
			}
			refill := func() {
				reqs := make([]core.EnqueueRequest, 1000)
				for i := range reqs {
					reqs[i] = core.EnqueueRequest{Queue: "q", Task: "u"}
				}
				if _, err := be.Enqueue(ctx, reqs); err != nil {
					b.Fatal(err)
				}
			}
			refill()
			left := 1000
			for b.Loop() {
				if left < 10 {
					b.StopTimer()
					refill()
					left += 1000
					b.StartTimer()
				}
				jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
				if err != nil || len(jobs) != 10 {
					b.Fatalf("claimed %d: %v", len(jobs), err)
				}
				left -= 10
				done := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					if j.Task != "u" {
						b.Fatalf("claimed %s of a saturated key", j.LimitKey)
					}
					done[i] = core.Completion{Lease: j.Lease}
				}
				if _, err := be.Complete(ctx, done); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDrainLimited measures enqueue-then-drain of 1,000 jobs in claims
// and completions of 100: plain jobs, and jobs of 100 limit keys under a
// task limit and a per-key limit that never bind.
func BenchmarkDrainLimited(b *testing.B) {
	for _, limited := range []bool{false, true} {
		name := "plain"
		if limited {
			name = "unsaturated-limits"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			be := newBackend(b, standaloneClient(b), Options{})
			if limited {
				if err := be.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxRunning: core.MaxFlowLimit, MaxRunningPerKey: core.MaxFlowLimit}); err != nil {
					b.Fatal(err)
				}
			}
			reqs := make([]core.EnqueueRequest, 1000)
			for i := range reqs {
				reqs[i] = core.EnqueueRequest{Queue: "q", Task: "t"}
				if limited {
					reqs[i].LimitKey = fmt.Sprintf("k%d", i%100)
				}
			}
			for b.Loop() {
				b.StopTimer()
				if _, err := be.Enqueue(ctx, reqs); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for n := 0; n < len(reqs); {
					jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 100, LeaseTTL: time.Minute})
					if err != nil || len(jobs) == 0 {
						b.Fatalf("claimed %d: %v", len(jobs), err)
					}
					done := make([]core.Completion, len(jobs))
					for i, j := range jobs {
						done[i] = core.Completion{Lease: j.Lease}
					}
					if _, err := be.Complete(ctx, done); err != nil {
						b.Fatal(err)
					}
					n += len(jobs)
				}
			}
		})
	}
}
