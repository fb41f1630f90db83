package natsq

import (
	"fmt"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// BenchmarkApplyClaimSaturated measures the replica's own cost of a claim
// command (and the completion that follows), without the server: 10 or
// 10,000 limit keys of the task are saturated, each with a job running and
// one held back ahead of the claimable jobs in claim order. The claim cost
// must not grow with the saturated keys.
//
//	go test -run '^$' -bench ApplyClaimSaturated -count 5 ./
func BenchmarkApplyClaimSaturated(b *testing.B) {
	for _, keys := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchApplyClaim(b, keys, true) })
	}
	b.Run("plain", func(b *testing.B) { benchApplyClaim(b, 0, false) })
}

func benchApplyClaim(b *testing.B, keys int, limit bool) {
	s := newState()
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	var req uint64
	apply := func(c command) outcome {
		req++
		c.Origin, c.Req, c.Now = "bench", req, now
		out, err := s.apply(&c)
		if err != nil {
			b.Fatal(err)
		}
		clear(s.touched)
		return out
	}
	if limit {
		apply(command{Op: opTaskConfig, TaskConfig: &core.TaskConfig{Task: "t", MaxRunningPerKey: 1}})
	}
	enqueue := func(reqs []core.EnqueueRequest) {
		for len(reqs) > 0 {
			n := min(len(reqs), 1000)
			jobs, err := core.PrepareJobs(reqs[:n], now, core.DefaultLimits)
			if err != nil {
				b.Fatal(err)
			}
			apply(command{Op: opEnqueue, Jobs: jobs})
			reqs = reqs[n:]
		}
	}
	held := make([]core.EnqueueRequest, 0, 2*keys)
	for i := range keys {
		for range 2 {
			held = append(held, core.EnqueueRequest{Task: "t", LimitKey: fmt.Sprint("k", i), Priority: -1})
		}
	}
	enqueue(held)
	for {
		out := apply(command{Op: opClaim, Queue: "default", WorkerID: "w", Limit: 1000, TTL: time.Hour})
		if len(out.jobs) == 0 {
			break
		}
	}
	if n := s.flow.taskRunning["t"]; n != int64(keys) && limit {
		b.Fatalf("%d jobs run, want one per key (%d)", n, keys)
	}
	todo := make([]core.EnqueueRequest, b.N)
	for i := range todo {
		todo[i] = core.EnqueueRequest{Task: "t"}
	}
	enqueue(todo)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out := apply(command{Op: opClaim, Queue: "default", WorkerID: "w", Limit: 1, TTL: time.Hour})
		if len(out.jobs) != 1 || out.jobs[0].LimitKey != "" {
			b.Fatalf("claim handed out %v", out.jobs)
		}
		apply(command{Op: opComplete, Completions: []completionItem{{Lease: out.jobs[0].Lease}}})
	}
}

// BenchmarkApplyDrain measures the replica's own cost of draining jobs
// spread over 100 limit keys in claims of 10 (each followed by the
// completion of the ten), with a per-key limit that is never reached and
// with no limit: what an unsaturated limit adds to a claim.
func BenchmarkApplyDrain(b *testing.B) {
	b.Run("perKeyLimit", func(b *testing.B) { benchApplyDrain(b, true) })
	b.Run("noLimit", func(b *testing.B) { benchApplyDrain(b, false) })
}

func benchApplyDrain(b *testing.B, limit bool) {
	s := newState()
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	var req uint64
	apply := func(c command) outcome {
		req++
		c.Origin, c.Req, c.Now = "bench", req, now
		out, err := s.apply(&c)
		if err != nil {
			b.Fatal(err)
		}
		clear(s.touched)
		return out
	}
	if limit {
		apply(command{Op: opTaskConfig, TaskConfig: &core.TaskConfig{Task: "t", MaxRunningPerKey: 100}})
	}
	n := b.N * 10
	for done := 0; done < n; {
		reqs := make([]core.EnqueueRequest, min(1000, n-done))
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Task: "t", LimitKey: fmt.Sprint("key-", (done+i)%100)}
		}
		jobs, err := core.PrepareJobs(reqs, now, core.DefaultLimits)
		if err != nil {
			b.Fatal(err)
		}
		apply(command{Op: opEnqueue, Jobs: jobs})
		done += len(reqs)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out := apply(command{Op: opClaim, Queue: "default", WorkerID: "w", Limit: 10, TTL: time.Hour})
		if len(out.jobs) != 10 {
			b.Fatalf("claim handed out %d jobs", len(out.jobs))
		}
		items := make([]completionItem, len(out.jobs))
		for i, j := range out.jobs {
			items[i] = completionItem{Index: i, Lease: j.Lease}
		}
		apply(command{Op: opComplete, Completions: items})
	}
}
