package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// Flow-control benchmarks, run by [Bench] when the harness declares Flow.
// b.N counts claimed jobs, so ns/op is the time per claimed job and two
// variants of one benchmark compare as a ratio:
//
//   - FlowClaim/saturated10 and FlowClaim/saturated10000: claim one job
//     and complete it, while 10 or 10,000 limit keys of the same task and
//     queue are saturated (one job running, one held back, each ahead of
//     the claimable jobs in claim order). The claimable jobs are unkeyed
//     or have keys of their own. A store that keeps held-back jobs out of
//     the claim path costs the same in both.
//   - FlowDrain/perKeyLimit and FlowDrain/noLimit: drain jobs spread over
//     100 limit keys in claims of 10, with a per-key limit that is never
//     reached, and with no limit stored.
func benchFlow(b *testing.B, h Harness) {
	b.Run("FlowClaim/saturated10", func(b *testing.B) { benchFlowClaim(b, h, 10) })
	b.Run("FlowClaim/saturated10000", func(b *testing.B) { benchFlowClaim(b, h, 10_000) })
	b.Run("FlowDrain/perKeyLimit", func(b *testing.B) { benchFlowDrain(b, h, true) })
	b.Run("FlowDrain/noLimit", func(b *testing.B) { benchFlowDrain(b, h, false) })
}

// flowBenchReq is a request of the flow benchmarks' task with a limit key.
func flowBenchReq(key string, priority int) core.EnqueueRequest {
	return core.EnqueueRequest{Queue: "bench", Task: "bench", Payload: []byte(`{"n":1}`), LimitKey: key, Priority: priority}
}

func benchFlowClaim(b *testing.B, h Harness, saturated int) {
	benchTimed(b, h, "jobs", func(ctx context.Context, be core.QueueBackend) {
		if err := be.PutTaskConfig(ctx, core.TaskConfig{Task: "bench", MaxRunningPerKey: 1}); err != nil {
			b.Fatalf("PutTaskConfig: %v", err)
		}
		// Two jobs per saturated key, first in claim order: claiming until
		// nothing is left runs one of each and holds the other back.
		enqueueAll(b, be, 2*saturated, func(i int) core.EnqueueRequest {
			return flowBenchReq(fmt.Sprintf("sat-%d", i/2), -1)
		}, nil)
		running := 0
		for {
			jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench", WorkerID: "setup", Limit: 1000, LeaseTTL: time.Hour})
			if err != nil {
				b.Fatalf("Claim: %v", err)
			}
			if len(jobs) == 0 {
				break
			}
			running += len(jobs)
		}
		if running != saturated {
			b.Fatalf("%d jobs running after the setup, want one per saturated key (%d)", running, saturated)
		}
		enqueueAll(b, be, b.N, func(i int) core.EnqueueRequest {
			key := ""
			if i%2 == 1 {
				key = fmt.Sprintf("free-%d", i)
			}
			return flowBenchReq(key, 0)
		}, nil)
	}, func(ctx context.Context, be core.QueueBackend) int {
		done := 0
		for done < b.N {
			jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench", WorkerID: "bench", Limit: 1, LeaseTTL: time.Minute})
			if err != nil {
				b.Fatalf("Claim: %v", err)
			}
			if len(jobs) != 1 {
				b.Fatalf("Claim found %d jobs after %d of %d", len(jobs), done, b.N)
			}
			if strings.HasPrefix(jobs[0].LimitKey, "sat-") {
				b.Fatalf("Claim handed out job %s of the saturated key %s", jobs[0].ID, jobs[0].LimitKey)
			}
			errs, err := be.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease}})
			if err != nil || errs[0] != nil {
				b.Fatalf("Complete: %v %v", err, errs)
			}
			done++
		}
		return done
	})
}

func benchFlowDrain(b *testing.B, h Harness, limit bool) {
	benchTimed(b, h, "jobs", func(ctx context.Context, be core.QueueBackend) {
		if limit {
			if err := be.PutTaskConfig(ctx, core.TaskConfig{Task: "bench", MaxRunningPerKey: 100}); err != nil {
				b.Fatalf("PutTaskConfig: %v", err)
			}
		}
		enqueueAll(b, be, b.N, func(i int) core.EnqueueRequest {
			return flowBenchReq(fmt.Sprintf("key-%d", i%100), 0)
		}, nil)
	}, func(ctx context.Context, be core.QueueBackend) int {
		drainBench(b, be, b.N, 10)
		return b.N
	})
}
