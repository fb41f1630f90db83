package mem_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestClaimOrderAtScale drives the ready lanes through every path: many
// priorities (more than the lanes a queue keeps idle), jobs coming due out
// of order from the scheduled heap, failed attempts queued again, and
// enough cancels in the middle of the FIFOs to compact them. Claims must
// still follow (priority, run-at, id) exactly.
func TestClaimOrderAtScale(t *testing.T) {
	b, clock := newBackend(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))

	var reqs []core.EnqueueRequest
	for i := range 6000 {
		r := core.EnqueueRequest{Task: "t"}
		if i >= 3000 {
			r.Priority = rng.IntN(12) - 3
		}
		if i%7 == 0 {
			r.RunAt = t0.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		}
		reqs = append(reqs, r)
	}
	var jobs []core.Job
	for lo := 0; lo < len(reqs); lo += 1000 {
		clock.Advance(time.Millisecond)
		jobs = append(jobs, enqueue(t, b, reqs[lo:lo+1000]...)...)
	}
	// Cancel two jobs in three, in random order.
	live := map[string]core.Job{}
	for _, i := range rng.Perm(len(jobs)) {
		if i%3 == 0 {
			live[jobs[i].ID] = jobs[i]
			continue
		}
		if _, err := b.Cancel(ctx, jobs[i].ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	// Claim some and fail them back with a retry time in the past or
	// future, so that they re-enter out of order.
	for _, j := range claim(t, b, core.DefaultQueue, 300) {
		st, err := b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "x", RetryAt: t0.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)})
		if err != nil || st != core.StateQueued {
			t.Fatal(st, err)
		}
		live[j.ID] = get(t, b, j.ID)
	}
	clock.Advance(10 * time.Second)
	want := make([]core.Job, 0, len(live))
	for _, j := range live {
		want = append(want, j)
	}
	sort.Slice(want, func(i, k int) bool {
		a, c := want[i], want[k]
		if a.Priority != c.Priority {
			return a.Priority < c.Priority
		}
		if !a.RunAt.Equal(c.RunAt) {
			return a.RunAt.Before(c.RunAt)
		}
		return a.ID < c.ID
	})
	var got []core.Job
	for {
		batch := claim(t, b, core.DefaultQueue, 97)
		if len(batch) == 0 {
			break
		}
		got = append(got, batch...)
	}
	if len(got) != len(want) {
		t.Fatalf("claimed %d jobs, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID {
			t.Fatalf("claim %d: job %s (priority %d, run at %v), want %s (priority %d, run at %v)",
				i, got[i].ID, got[i].Priority, got[i].RunAt, want[i].ID, want[i].Priority, want[i].RunAt)
		}
	}

	// Then one job at each of many priorities, more than a queue keeps
	// lanes for, highest priority value first.
	var more []core.EnqueueRequest
	for p := 20; p > 0; p-- {
		more = append(more, core.EnqueueRequest{Task: "t", Priority: p * 10})
	}
	enqueue(t, b, more...)
	got = claim(t, b, core.DefaultQueue, 100)
	if len(got) != 20 {
		t.Fatalf("claimed %d jobs, want 20", len(got))
	}
	for i, j := range got {
		if j.Priority != (i+1)*10 {
			t.Fatalf("claim %d has priority %d, want %d", i, j.Priority, (i+1)*10)
		}
	}
}
