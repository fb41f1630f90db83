package conformance

import (
	"slices"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testClaim: what a claim returns, in which order, and when.
func testClaim(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Fields":              claimFields,
		"Order":               claimOrder,
		"OrderBatch":          claimOrderBatch,
		"FutureRunAt":         claimFutureRunAt,
		"QueueIsolation":      claimQueueIsolation,
		"PausedQueue":         claimPaused,
		"Limit":               claimLimit,
		"EmptyQueue":          claimEmpty,
		"RunningNotReclaimed": claimRunningNotReclaimed,
	})
}

func claimFields(e *env) {
	j := e.enqueueOne(req("q", "t"))
	e.advance(3 * time.Second)
	c := e.claimAs("q", "worker-7", 1, 45*time.Second)
	if len(c) != 1 {
		e.t.Fatalf("claimed %d jobs, want 1", len(c))
	}
	got := c[0]
	requireEq(e.t, got.ID, j.ID, "id")
	requireEq(e.t, got.State, core.StateRunning, "state")
	requireEq(e.t, got.Attempt, 1, "attempt")
	requireEq(e.t, got.Lease.JobID, j.ID, "lease job id")
	requireEq(e.t, got.Lease.WorkerID, "worker-7", "lease worker")
	requireEq(e.t, got.Lease.Token, int64(1), "first token")
	requireTime(e.t, got.Lease.ExpiresAt, e.now().Add(45*time.Second), "lease expiry")
	requireTime(e.t, got.FirstStartedAt, e.now(), "first started at")
	requireEq(e.t, string(got.Payload), string(j.Payload), "payload")
	if d := diff(got, e.get(j.ID)); d != "" {
		e.t.Fatalf("claimed job and stored job differ: %s", d)
	}
	runs := e.runs(j.ID)
	if len(runs) != 1 {
		e.t.Fatalf("%d runs after one claim, want 1", len(runs))
	}
	r := runs[0]
	if r.ID == "" {
		e.t.Fatal("run has no id")
	}
	requireEq(e.t, r.JobID, j.ID, "run job id")
	requireEq(e.t, r.Attempt, 1, "run attempt")
	requireEq(e.t, r.WorkerID, "worker-7", "run worker")
	requireEq(e.t, r.Token, int64(1), "run token")
	requireEq(e.t, r.Status, core.RunRunning, "run status")
	requireTime(e.t, r.StartedAt, e.now(), "run started at")
	if !r.FinishedAt.IsZero() {
		e.t.Fatalf("open run has finished at %v", r.FinishedAt)
	}
}

// orderFixture enqueues jobs whose claim order is known and makes them all
// due. It returns their ids in the order a claim must hand them out.
func orderFixture(e *env) []string {
	now := e.now()
	at := func(d time.Duration) time.Time { return now.Add(d) }
	type spec struct {
		name     string
		priority int
		runAt    time.Time
	}
	specs := []spec{
		{"p0-late", 0, at(3 * time.Second)},
		{"p5", 5, time.Time{}},
		{"p-3-late", -3, at(2 * time.Second)},
		{"p0-early-a", 0, at(1 * time.Second)},
		{"p-3-early", -3, at(1 * time.Second)},
		{"p0-now", 0, time.Time{}},
		{"p0-early-b", 0, at(1 * time.Second)},
		{"p1000", core.MaxPriority, time.Time{}},
		{"p-1000", core.MinPriority, at(4 * time.Second)},
	}
	want := []string{"p-1000", "p-3-early", "p-3-late", "p0-now", "p0-early-a", "p0-early-b", "p0-late", "p5", "p1000"}
	ids := map[string]string{}
	for _, s := range specs {
		r := req("q", "t")
		r.Priority, r.RunAt = s.priority, s.runAt
		r.Payload = []byte(s.name)
		ids[s.name] = e.enqueueOne(r).ID
	}
	e.advance(5 * time.Second)
	out := make([]string, len(want))
	for i, n := range want {
		out[i] = ids[n]
	}
	return out
}

func claimOrder(e *env) {
	want := orderFixture(e)
	for i, id := range want {
		c := e.claimOne("q")
		if c.ID != id {
			e.t.Fatalf("claim %d returned %s (%s), want %s (%s)", i, c.ID, c.Payload, id, e.get(id).Payload)
		}
	}
	e.claimNone("q", "every job was claimed")
}

func claimOrderBatch(e *env) {
	want := orderFixture(e)
	first := e.claim("q", 4)
	got := make([]string, len(first))
	for i, j := range first {
		got[i] = j.ID
	}
	slices.Sort(got)
	head := slices.Clone(want[:4])
	slices.Sort(head)
	if !slices.Equal(got, head) {
		e.t.Fatalf("a claim of 4 returned %v, want the first four by (priority, run at, id) %v", got, head)
	}
	rest := e.claim("q", 100)
	requireEq(e.t, len(rest), len(want)-4, "jobs left for the second claim")
}

func claimFutureRunAt(e *env) {
	r := req("q", "t")
	r.RunAt = e.now().Add(10 * time.Second)
	j := e.enqueueOne(r)
	e.claimNone("q", "run at is 10s away")
	e.advance(10*time.Second - time.Millisecond)
	e.claimNone("q", "run at is 1ms away")
	e.advance(time.Millisecond)
	if c := e.claimOne("q"); c.ID != j.ID {
		e.t.Fatalf("claimed %s, want %s", c.ID, j.ID)
	}
}

func claimQueueIsolation(e *env) {
	a := e.enqueueN("qa", "t", 3)
	b := e.enqueueN("qb", "t", 2)
	e.claimNone("qc", "qc has no jobs")
	got := e.claim("qb", 10)
	requireEq(e.t, len(got), 2, "jobs claimed from qb")
	for _, j := range got {
		if j.Queue != "qb" || (j.ID != b[0].ID && j.ID != b[1].ID) {
			e.t.Fatalf("claim of qb returned %s of queue %s", j.ID, j.Queue)
		}
	}
	for _, j := range a {
		e.requireState(j.ID, core.StateQueued)
	}
	requireEq(e.t, len(e.claim("qa", 10)), 3, "jobs claimed from qa")
}

func claimPaused(e *env) {
	e.enqueueN("q", "t", 2)
	e.enqueueN("other", "t", 1)
	if err := e.b.PutQueueConfig(e.ctx, core.QueueConfig{Queue: "q", Paused: true}); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	e.claimNone("q", "the queue is paused")
	e.enqueueN("q", "t", 1) // enqueue still works
	requireEq(e.t, len(e.claim("other", 10)), 1, "jobs claimed from an unpaused queue")
	e.advance(time.Minute)
	e.claimNone("q", "the queue is still paused")
	if err := e.b.PutQueueConfig(e.ctx, core.QueueConfig{Queue: "q"}); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	requireEq(e.t, len(e.claim("q", 10)), 3, "jobs claimed after resuming")
}

func claimLimit(e *env) {
	e.enqueueN("q", "t", 5)
	requireEq(e.t, len(e.claim("q", 3)), 3, "first claim of 3")
	requireEq(e.t, len(e.claim("q", 3)), 2, "second claim of 3")
	requireEq(e.t, len(e.claim("q", 3)), 0, "third claim of 3")
}

func claimEmpty(e *env) {
	jobs, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: "nothing", WorkerID: "w", Limit: 5, LeaseTTL: time.Second})
	if err != nil || len(jobs) != 0 {
		e.t.Fatalf("Claim of an empty queue = %d jobs, %v; want none, nil", len(jobs), err)
	}
}

func claimRunningNotReclaimed(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.claimNone("q", "the only job is running")
	e.advance(2 * leaseTTL)
	e.claimNone("q", "an expired lease is not claimable before rescue")
	requireEq(e.t, e.get(j.ID).Lease.Token, int64(1), "token")
}
