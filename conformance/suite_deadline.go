package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testDeadline: cancellation deadlines are enforced at claim, heartbeat and
// rescue with the backend's clock.
func testDeadline(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"MaxDelayAtClaim":              deadlineDelayClaim,
		"MaxDelayAtRescue":             deadlineDelayRescue,
		"MaxDelayEndsAtStart":          deadlineDelayEnds,
		"MaxDurationAtHeartbeat":       deadlineDurationHeartbeat,
		"MaxDurationAtClaimAfterRetry": deadlineDurationClaim,
		"MaxDurationAtRescue":          deadlineDurationRescue,
		"MaxDurationRunningAtRescue":   deadlineDurationRunningRescue,
	})
}

// requireDeadlineCancelled checks that job id was cancelled by a deadline at now.
func (e *env) requireDeadlineCancelled(id string) core.Job {
	e.t.Helper()
	j := e.requireState(id, core.StateCancelled)
	requireTime(e.t, j.FinishedAt, e.now(), "finished at of a deadline cancel")
	if !strings.Contains(j.LastError, "deadline") {
		e.t.Fatalf("last error %q does not say a deadline passed", j.LastError)
	}
	return j
}

func deadlineDelayClaim(e *env) {
	r := req("q", "t")
	r.Cancel.MaxDelay = 10 * time.Second
	late := e.enqueueOne(r)
	plain := e.enqueueOne(req("q", "t"))
	e.advance(10*time.Second - time.Millisecond)
	e.advance(time.Millisecond)
	c := e.claim("q", 1)
	if len(c) != 1 || c[0].ID != plain.ID {
		e.t.Fatalf("claim of 1 returned %d jobs, want the job without a deadline (a cancelled job must not use up the limit)", len(c))
	}
	e.requireDeadlineCancelled(late.ID)
	if runs := e.runs(late.ID); len(runs) != 0 {
		e.t.Fatalf("the job cancelled at claim has %d runs", len(runs))
	}
}

func deadlineDelayRescue(e *env) {
	r := req("q", "t")
	r.Cancel.MaxDelay = 10 * time.Second
	j := e.enqueueOne(r)
	e.advance(10*time.Second - time.Millisecond)
	if res := e.rescue(10); res.Total() != 0 {
		e.t.Fatalf("Rescue before the deadline = %+v", res)
	}
	e.advance(time.Millisecond)
	if res := e.rescue(10); res != (core.RescueResult{Cancelled: 1}) {
		e.t.Fatalf("Rescue at the deadline = %+v, want 1 cancelled", res)
	}
	e.requireDeadlineCancelled(j.ID)
}

func deadlineDelayEnds(e *env) {
	r := req("q", "t")
	r.Cancel.MaxDelay = 10 * time.Second
	j := e.enqueueOne(r)
	e.advance(9 * time.Second)
	c := e.claimOne("q")
	e.advance(time.Minute)
	if _, err := e.b.Heartbeat(e.ctx, c.Lease, time.Hour); err != nil {
		e.t.Fatalf("Heartbeat after MaxDelay passed on a started job: %v", err)
	}
	if res := e.rescue(10); res.Total() != 0 {
		e.t.Fatalf("Rescue of a started job past MaxDelay = %+v", res)
	}
	e.complete(c.Lease, nil)
	e.requireState(j.ID, core.StateSucceeded)
}

func deadlineDurationHeartbeat(e *env) {
	r := req("q", "t")
	r.Cancel.MaxDuration = 30 * time.Second
	j := e.enqueueClaim(r)
	e.advance(30*time.Second - time.Millisecond)
	l, err := e.b.Heartbeat(e.ctx, j.Lease, time.Minute)
	if err != nil {
		e.t.Fatalf("Heartbeat before the deadline: %v", err)
	}
	e.advance(time.Millisecond)
	_, err = e.b.Heartbeat(e.ctx, l, time.Minute)
	requireErr(e.t, err, core.ErrLeaseLost, "Heartbeat at the MaxDuration deadline")
	e.requireDeadlineCancelled(j.ID)
	runs := e.runs(j.ID)
	if len(runs) != 1 || runs[0].Status != core.RunCancelled {
		e.t.Fatalf("runs: %+v, want one cancelled run", runs)
	}
	errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: l}})
	if err == nil {
		err = errs[0]
	}
	requireErr(e.t, err, core.ErrLeaseLost, "Complete after the deadline cancelled the job")
}

func deadlineDurationClaim(e *env) {
	r := req("q", "t")
	r.Cancel.MaxDuration = 30 * time.Second
	j := e.enqueueClaim(r)
	e.advance(time.Second)
	e.fail(core.Failure{Lease: j.Lease, Error: "later", RetryAt: e.now().Add(time.Minute)})
	e.advance(time.Minute)
	e.claimNone("q", "the retry is past the MaxDuration deadline")
	e.requireDeadlineCancelled(j.ID)
}

func deadlineDurationRescue(e *env) {
	r := req("q", "t")
	r.Cancel.MaxDuration = 30 * time.Second
	j := e.enqueueClaim(r)
	e.sleep(j.Lease, e.now().Add(time.Hour))
	e.advance(30 * time.Second)
	if res := e.rescue(10); res != (core.RescueResult{Cancelled: 1}) {
		e.t.Fatalf("Rescue of a sleeping job past its deadline = %+v, want 1 cancelled", res)
	}
	e.requireDeadlineCancelled(j.ID)
}

func deadlineDurationRunningRescue(e *env) {
	r := req("q", "t")
	r.Cancel.MaxDuration = 30 * time.Second
	j := e.enqueueOne(r)
	c := e.claimAs("q", "w", 1, time.Hour)[0]
	e.advance(30 * time.Second)
	if res := e.rescue(10); res != (core.RescueResult{Cancelled: 1}) {
		e.t.Fatalf("Rescue of a running job past its deadline = %+v, want 1 cancelled", res)
	}
	e.requireDeadlineCancelled(j.ID)
	_, err := e.b.Heartbeat(e.ctx, c.Lease, time.Minute)
	requireErr(e.t, err, core.ErrLeaseLost, "Heartbeat of a job cancelled by rescue")
}
