package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testLease: heartbeats extend leases; rescue requeues or fails jobs whose
// lease expired.
func testLease(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"HeartbeatExtends":     leaseHeartbeat,
		"RescueRequeues":       leaseRescueRequeues,
		"RescueExhaustedFails": leaseRescueExhausted,
		"RescueBounded":        leaseRescueBounded,
		"RescueOnlyExpired":    leaseRescueOnlyExpired,
		"ExpiredLeaseFences":   leaseExpiredStillWorks,
	})
}

func leaseHeartbeat(e *env) {
	j := e.claimWithTTL(10 * time.Second)
	e.advance(8 * time.Second)
	l, err := e.b.Heartbeat(e.ctx, j.Lease, 10*time.Second)
	if err != nil {
		e.t.Fatalf("Heartbeat: %v", err)
	}
	requireTime(e.t, l.ExpiresAt, e.now().Add(10*time.Second), "new expiry")
	requireEq(e.t, l.Token, j.Lease.Token, "token after heartbeat")
	requireEq(e.t, l.JobID, j.ID, "lease job id")
	requireEq(e.t, l.WorkerID, j.Lease.WorkerID, "lease worker")
	requireTime(e.t, e.get(j.ID).Lease.ExpiresAt, l.ExpiresAt, "stored expiry")

	e.advance(8 * time.Second) // past the first expiry, before the new one
	if r := e.rescue(10); r.Total() != 0 {
		e.t.Fatalf("Rescue changed %+v jobs whose lease was extended", r)
	}
	e.requireState(j.ID, core.StateRunning)
	e.complete(l, nil)
}

// claimWithTTL enqueues one job in "q" and claims it with ttl.
func (e *env) claimWithTTL(ttl time.Duration) core.Job {
	e.t.Helper()
	return e.claimWithTTLReq(req("q", "t"), ttl)
}

func (e *env) claimWithTTLReq(r core.EnqueueRequest, ttl time.Duration) core.Job {
	e.t.Helper()
	j := e.enqueueOne(r)
	c := e.claimAs(j.Queue, "w1", 1, ttl)
	if len(c) != 1 || c[0].ID != j.ID {
		e.t.Fatalf("claim returned %d jobs, want %s", len(c), j.ID)
	}
	return c[0]
}

func leaseRescueRequeues(e *env) {
	j := e.claimWithTTL(5 * time.Second)
	e.advance(5*time.Second - time.Millisecond)
	if r := e.rescue(10); r.Total() != 0 {
		e.t.Fatalf("Rescue before expiry changed %+v", r)
	}
	e.advance(time.Millisecond)
	if r := e.rescue(10); r != (core.RescueResult{Requeued: 1}) {
		e.t.Fatalf("Rescue at expiry = %+v, want 1 requeued", r)
	}
	got := e.requireState(j.ID, core.StateQueued)
	requireEq(e.t, got.Attempt, 1, "attempt after rescue (the lost run counts)")
	requireTime(e.t, got.RunAt, e.now(), "run at after rescue")
	runs := e.runs(j.ID)
	if len(runs) != 1 || runs[0].Status != core.RunLost {
		e.t.Fatalf("runs after rescue: %+v, want one lost run", runs)
	}
	requireTime(e.t, runs[0].FinishedAt, e.now(), "lost run's finished at")

	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 2, "attempt of the next claim")
	requireEq(e.t, c.Lease.Token, int64(2), "token of the next claim")
}

func leaseRescueExhausted(e *env) {
	r := req("q", "t")
	r.MaxAttempts = 2
	j := e.claimWithTTLReq(r, time.Second)
	e.advance(time.Second)
	e.rescue(10)
	e.claimAs("q", "w2", 1, time.Second)
	e.advance(time.Second)
	if res := e.rescue(10); res != (core.RescueResult{Failed: 1}) {
		e.t.Fatalf("Rescue of the last attempt = %+v, want 1 failed", res)
	}
	got := e.requireState(j.ID, core.StateFailed)
	requireEq(e.t, got.Attempt, 2, "attempt")
	requireTime(e.t, got.FinishedAt, e.now(), "finished at")
	if got.LastError == "" {
		e.t.Fatal("a job failed by rescue has no last error")
	}
	runs := e.runs(j.ID)
	if len(runs) != 2 || runs[0].Status != core.RunLost || runs[1].Status != core.RunLost {
		e.t.Fatalf("runs: %+v, want two lost runs", runs)
	}
	e.claimNone("q", "the job failed")
}

func leaseRescueBounded(e *env) {
	e.enqueueN("q", "t", 7)
	e.claimAs("q", "w", 7, time.Second)
	e.advance(time.Second)
	for i, want := range []int{3, 3, 1, 0} {
		if r := e.rescue(3); r.Requeued != want || r.Total() != want {
			e.t.Fatalf("rescue pass %d = %+v, want %d requeued", i, r, want)
		}
	}
	requireEq(e.t, e.count(core.JobFilter{})[core.StateQueued], 7, "queued")
}

func leaseRescueOnlyExpired(e *env) {
	short := e.claimWithTTL(time.Second)
	long := e.claimWithTTL(time.Minute)
	queued := e.enqueueOne(req("q", "t"))
	e.advance(time.Second)
	if r := e.rescue(10); r != (core.RescueResult{Requeued: 1}) {
		e.t.Fatalf("Rescue = %+v, want 1 requeued", r)
	}
	e.requireState(short.ID, core.StateQueued)
	e.requireState(long.ID, core.StateRunning)
	e.requireState(queued.ID, core.StateQueued)
}

func leaseExpiredStillWorks(e *env) {
	j := e.claimWithTTL(time.Second)
	e.advance(time.Hour)
	l, err := e.b.Heartbeat(e.ctx, j.Lease, time.Minute)
	if err != nil {
		e.t.Fatalf("Heartbeat on an expired lease that nobody rescued: %v", err)
	}
	e.complete(l, []byte("late but fine"))
	e.requireState(j.ID, core.StateSucceeded)
}
