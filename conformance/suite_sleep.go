package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testSleep: a durable sleep releases the claim, wakes at its time, keeps
// the attempt and is no failure.
func testSleep(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Until":         sleepUntil,
		"PastIsNow":     sleepPast,
		"Repeated":      sleepRepeated,
		"NotRescued":    sleepNotRescued,
		"KeepsPriority": sleepOrder,
	})
}

func (e *env) sleep(l core.Lease, until time.Time) {
	e.t.Helper()
	if err := e.b.Sleep(e.ctx, l, until); err != nil {
		e.t.Fatalf("Sleep(%s): %v", l.JobID, err)
	}
}

func sleepUntil(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(time.Second)
	until := e.now().Add(time.Minute)
	e.sleep(j.Lease, until)
	got := e.requireState(j.ID, core.StateSleeping)
	requireTime(e.t, got.RunAt, until, "run at of the sleeping job")
	requireEq(e.t, got.Attempt, 1, "attempt while sleeping")
	requireEq(e.t, got.LastError, "", "last error")
	runs := e.runs(j.ID)
	if len(runs) != 1 || runs[0].Status != core.RunSleeping {
		e.t.Fatalf("runs after sleep: %+v, want one sleeping run", runs)
	}
	requireTime(e.t, runs[0].FinishedAt, e.now(), "sleeping run's finished at")

	e.claimNone("q", "the job sleeps for a minute")
	e.advance(time.Minute - time.Millisecond)
	e.claimNone("q", "the job wakes in 1ms")
	e.advance(time.Millisecond)
	c := e.claimOne("q")
	requireEq(e.t, c.ID, j.ID, "woken job")
	requireEq(e.t, c.Attempt, 1, "attempt after waking (a sleep consumes none)")
	requireEq(e.t, c.Lease.Token, int64(2), "token after waking")
	requireEq(e.t, c.State, core.StateRunning, "state after waking")
	e.complete(c.Lease, []byte("done"))

	runs = e.runs(j.ID)
	if len(runs) != 2 || runs[1].Status != core.RunSucceeded || runs[1].Attempt != 1 {
		e.t.Fatalf("runs after waking and completing: %+v", runs)
	}
	stats, err := e.b.TaskStats(e.ctx, "t")
	if err != nil {
		e.t.Fatalf("TaskStats: %v", err)
	}
	if n := stats.Runs[core.RunFailed]; n != 0 {
		e.t.Fatalf("a sleep counted as %d failed runs", n)
	}
}

func sleepPast(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(time.Second)
	e.sleep(j.Lease, e.now().Add(-time.Hour))
	got := e.requireState(j.ID, core.StateSleeping)
	requireTime(e.t, got.RunAt, e.now(), "run at of a sleep into the past")
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 1, "attempt")
}

func sleepRepeated(e *env) {
	r := req("q", "t")
	r.MaxAttempts = 1
	j := e.enqueueClaim(r)
	for i := range 5 {
		e.sleep(e.get(j.ID).Lease, e.now().Add(time.Second))
		e.advance(time.Second)
		c := e.claimOne("q")
		requireEq(e.t, c.Attempt, 1, "attempt after wake "+itoa(i))
	}
	e.complete(e.get(j.ID).Lease, nil)
	requireEq(e.t, len(e.runs(j.ID)), 6, "runs after five sleeps")
}

func sleepNotRescued(e *env) {
	j := e.claimWithTTL(time.Second)
	e.sleep(j.Lease, e.now().Add(time.Hour))
	e.advance(time.Minute)
	if r := e.rescue(10); r.Total() != 0 {
		e.t.Fatalf("Rescue changed a sleeping job: %+v", r)
	}
	e.requireState(j.ID, core.StateSleeping)
}

func sleepOrder(e *env) {
	// A woken job competes by (priority, run at, id) like any other.
	r := req("q", "t")
	r.Priority = -1
	j := e.enqueueClaim(r)
	e.sleep(j.Lease, e.now().Add(time.Second))
	plain := e.enqueueOne(req("q", "t"))
	e.advance(time.Second)
	requireEq(e.t, e.claimOne("q").ID, j.ID, "first claim (priority -1 sleeper)")
	requireEq(e.t, e.claimOne("q").ID, plain.ID, "second claim")
}
