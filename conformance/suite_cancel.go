package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testCancel: cancel a queued, sleeping or running job; what cannot be
// cancelled says so.
func testCancel(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Queued":        cancelQueued,
		"DefaultReason": cancelDefaultReason,
		"Scheduled":     cancelScheduled,
		"Sleeping":      cancelSleeping,
		"Running":       cancelRunning,
		"Twice":         cancelTwice,
		"Succeeded":     cancelSucceeded,
		"Failed":        cancelFailed,
		"Unknown":       cancelUnknown,
	})
}

func cancelQueued(e *env) {
	j := e.enqueueOne(req("q", "t"))
	e.advance(time.Second)
	got := e.cancel(j.ID, "not needed")
	requireEq(e.t, got.State, core.StateCancelled, "returned state")
	requireEq(e.t, got.LastError, "not needed", "returned last error")
	requireTime(e.t, got.FinishedAt, e.now(), "returned finished at")
	stored := e.requireState(j.ID, core.StateCancelled)
	if d := diff(got, stored); d != "" {
		e.t.Fatalf("Cancel returned a job that differs from the stored one: %s", d)
	}
	e.claimNone("q", "the only job was cancelled")
	if runs := e.runs(j.ID); len(runs) != 0 {
		e.t.Fatalf("a job cancelled before it ran has %d runs", len(runs))
	}
}

func cancelDefaultReason(e *env) {
	j := e.enqueueOne(req("q", "t"))
	requireEq(e.t, e.cancel(j.ID, "").LastError, "cancelled", "default reason")
}

func cancelScheduled(e *env) {
	r := req("q", "t")
	r.RunAt = e.now().Add(time.Minute)
	j := e.enqueueOne(r)
	e.cancel(j.ID, "")
	e.advance(time.Hour)
	e.claimNone("q", "the scheduled job was cancelled")
}

func cancelSleeping(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.sleep(j.Lease, e.now().Add(time.Minute))
	e.advance(time.Second)
	got := e.cancel(j.ID, "abandon")
	requireEq(e.t, got.State, core.StateCancelled, "state")
	requireTime(e.t, got.FinishedAt, e.now(), "finished at")
	e.advance(time.Hour)
	e.claimNone("q", "the sleeping job was cancelled")
	runs := e.runs(j.ID)
	if len(runs) != 1 || runs[0].Status != core.RunSleeping {
		e.t.Fatalf("runs: %+v, want the one sleeping run unchanged", runs)
	}
}

func cancelRunning(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(2 * time.Second)
	got := e.cancel(j.ID, "operator")
	requireEq(e.t, got.State, core.StateCancelled, "state")
	requireEq(e.t, got.LastError, "operator", "last error")
	e.requireCancelledRunning(j)
}

// requireCancelledRunning checks job j of queue "q", cancelled now while
// it ran under j.Lease: its one run ended cancelled now, the lease is
// lost to Heartbeat and Complete, which change nothing, and neither Claim
// nor Rescue finds the job again.
func (e *env) requireCancelledRunning(j core.Job) {
	e.t.Helper()
	runs := e.runs(j.ID)
	if len(runs) != 1 || runs[0].Status != core.RunCancelled {
		e.t.Fatalf("runs: %+v, want one cancelled run", runs)
	}
	requireTime(e.t, runs[0].FinishedAt, e.now(), "cancelled run's finished at")
	before := e.snap(j.ID)
	_, err := e.b.Heartbeat(e.ctx, j.Lease, leaseTTL)
	requireErr(e.t, err, core.ErrLeaseLost, "the cancelled worker's Heartbeat")
	errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: j.Lease, Result: []byte("too late")}})
	if err == nil {
		err = errs[0]
	}
	requireErr(e.t, err, core.ErrLeaseLost, "the cancelled worker's Complete")
	e.requireUnchanged(before, "the cancelled worker's Heartbeat and Complete")
	e.advance(time.Hour)
	e.claimNone("q", "the running job was cancelled")
	if r := e.rescue(10); r.Total() != 0 {
		e.t.Fatalf("Rescue touched a cancelled job: %+v", r)
	}
}

func cancelTwice(e *env) {
	j := e.enqueueOne(req("q", "t"))
	first := e.cancel(j.ID, "one")
	e.advance(time.Minute)
	second, err := e.b.Cancel(e.ctx, j.ID, "two")
	if err != nil {
		e.t.Fatalf("second Cancel: %v", err)
	}
	if d := diff(first, second); d != "" {
		e.t.Fatalf("second Cancel changed the job: %s", d)
	}
}

func cancelSucceeded(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.complete(j.Lease, nil)
	before := e.snap(j.ID)
	_, err := e.b.Cancel(e.ctx, j.ID, "")
	requireErr(e.t, err, core.ErrInvalidState, "Cancel of a succeeded job")
	e.requireUnchanged(before, "Cancel of a succeeded job")
}

func cancelFailed(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.fail(core.Failure{Lease: j.Lease, Error: "x", Terminal: true})
	_, err := e.b.Cancel(e.ctx, j.ID, "")
	requireErr(e.t, err, core.ErrInvalidState, "Cancel of a failed job")
	e.requireState(j.ID, core.StateFailed)
}

func cancelUnknown(e *env) {
	_, err := e.b.Cancel(e.ctx, core.NewID(e.now()), "")
	requireErr(e.t, err, core.ErrNotFound, "Cancel of an unknown job")
}

// testRetry: manual retry of failed and cancelled jobs.
func testRetry(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Failed":        retryFailed,
		"Cancelled":     retryCancelled,
		"SpentBudget":   retrySpent,
		"InvalidStates": retryInvalid,
		"Unknown":       retryUnknown,
	})
}

func (e *env) retry(id string) core.Job {
	e.t.Helper()
	j, err := e.b.Retry(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Retry(%s): %v", id, err)
	}
	return j
}

func retryFailed(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.fail(core.Failure{Lease: j.Lease, Error: "boom", Terminal: true})
	e.advance(time.Minute)
	got := e.retry(j.ID)
	requireEq(e.t, got.State, core.StateQueued, "state")
	requireTime(e.t, got.RunAt, e.now(), "run at")
	if !got.FinishedAt.IsZero() {
		e.t.Fatalf("a retried job keeps finished at %v", got.FinishedAt)
	}
	requireEq(e.t, got.MaxAttempts, core.DefaultMaxAttempts, "max attempts (budget left)")
	if d := diff(got, e.get(j.ID)); d != "" {
		e.t.Fatalf("Retry returned a job that differs from the stored one: %s", d)
	}
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 2, "attempt after a manual retry")
	e.complete(c.Lease, nil)
}

func retryCancelled(e *env) {
	j := e.enqueueOne(req("q", "t"))
	e.cancel(j.ID, "")
	got := e.retry(j.ID)
	requireEq(e.t, got.State, core.StateQueued, "state")
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 1, "attempt")
}

func retrySpent(e *env) {
	r := req("q", "t")
	r.MaxAttempts = 1
	j := e.enqueueClaim(r)
	requireEq(e.t, e.fail(core.Failure{Lease: j.Lease, Error: "x"}), core.StateFailed, "state after the only attempt")
	got := e.retry(j.ID)
	requireEq(e.t, got.MaxAttempts, 2, "max attempts after retrying a spent budget")
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 2, "attempt")
	requireEq(e.t, e.fail(core.Failure{Lease: c.Lease, Error: "y"}), core.StateFailed, "state after the extra attempt")
}

// unretryable makes one job in each state that Retry refuses: queued (in
// queue q), running (q2), succeeded (q3) and sleeping (q4).
func (e *env) unretryable() []core.Job {
	e.t.Helper()
	queued := e.enqueueOne(req("q", "t"))
	running := e.enqueueClaim(req("q2", "t"))
	done := e.enqueueClaim(req("q3", "t"))
	e.complete(done.Lease, nil)
	sleeping := e.enqueueClaim(req("q4", "t"))
	e.sleep(sleeping.Lease, e.now().Add(time.Hour))
	return []core.Job{queued, running, done, sleeping}
}

func retryInvalid(e *env) {
	for _, j := range e.unretryable() {
		before := e.snap(j.ID)
		_, err := e.b.Retry(e.ctx, j.ID)
		requireErr(e.t, err, core.ErrInvalidState, "Retry of a "+string(before.Job.State)+" job")
		e.requireUnchanged(before, "Retry of a "+string(before.Job.State)+" job")
	}
}

func retryUnknown(e *env) {
	_, err := e.b.Retry(e.ctx, core.NewID(e.now()))
	requireErr(e.t, err, core.ErrNotFound, "Retry of an unknown job")
}
