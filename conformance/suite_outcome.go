package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testOutcome: complete, fail, and the run rows they leave.
func testOutcome(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"CompleteWithResult":       outcomeComplete,
		"CompleteBatchOneStale":    outcomeCompleteBatch,
		"FailRetryAt":              outcomeFailRetryAt,
		"FailRetryAtPast":          outcomeFailRetryPast,
		"FailTerminal":             outcomeFailTerminal,
		"FailAttemptsExhausted":    outcomeFailExhausted,
		"FailErrorTruncated":       outcomeFailTruncated,
		"RunPerClaim":              outcomeRuns,
		"CompleteNotClaimableMore": outcomeNotClaimable,
	})
}

func outcomeComplete(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(1500 * time.Millisecond)
	e.complete(j.Lease, []byte(`{"ok":true}`))
	got := e.requireState(j.ID, core.StateSucceeded)
	requireEq(e.t, string(got.Result), `{"ok":true}`, "result")
	requireTime(e.t, got.FinishedAt, e.now(), "finished at")
	requireEq(e.t, got.Attempt, 1, "attempt")
	requireEq(e.t, got.Lease.Token, j.Lease.Token, "token kept after the claim ended")
	runs := e.runs(j.ID)
	if len(runs) != 1 {
		e.t.Fatalf("%d runs, want 1", len(runs))
	}
	requireEq(e.t, runs[0].Status, core.RunSucceeded, "run status")
	requireTime(e.t, runs[0].FinishedAt, e.now(), "run finished at")
	requireEq(e.t, runs[0].Duration(), 1500*time.Millisecond, "run duration")
}

func outcomeCompleteBatch(e *env) {
	e.enqueueN("q", "t", 4)
	jobs := e.claim("q", 4)
	e.cancel(jobs[2].ID, "gone")
	items := make([]core.Completion, len(jobs))
	for i, j := range jobs {
		items[i] = core.Completion{Lease: j.Lease, Result: []byte("r" + itoa(i))}
	}
	errs, err := e.b.Complete(e.ctx, items)
	if err != nil {
		e.t.Fatalf("Complete: %v", err)
	}
	if len(errs) != len(items) {
		e.t.Fatalf("Complete returned %d item errors for %d items", len(errs), len(items))
	}
	for i, j := range jobs {
		if i == 2 {
			requireErr(e.t, errs[i], core.ErrLeaseLost, "completing the cancelled job")
			got := e.requireState(j.ID, core.StateCancelled)
			if len(got.Result) != 0 {
				e.t.Fatalf("the cancelled job got result %q", got.Result)
			}
			continue
		}
		if errs[i] != nil {
			e.t.Fatalf("item %d: %v", i, errs[i])
		}
		got := e.requireState(j.ID, core.StateSucceeded)
		requireEq(e.t, string(got.Result), "r"+itoa(i), "result of item "+itoa(i))
	}
}

func outcomeFailRetryAt(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	retryAt := e.now().Add(30 * time.Second)
	st := e.fail(core.Failure{Lease: j.Lease, Error: "transient", RetryAt: retryAt})
	requireEq(e.t, st, core.StateQueued, "state returned by Fail")
	got := e.requireState(j.ID, core.StateQueued)
	requireTime(e.t, got.RunAt, retryAt, "run at")
	requireEq(e.t, got.LastError, "transient", "last error")
	requireEq(e.t, got.Attempt, 1, "attempt")
	e.claimNone("q", "retry is 30s away")
	e.advance(30*time.Second - time.Millisecond)
	e.claimNone("q", "retry is 1ms away")
	e.advance(time.Millisecond)
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 2, "attempt of the retry")
	requireEq(e.t, c.Lease.Token, int64(2), "token of the retry")
}

func outcomeFailRetryPast(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(time.Second)
	st := e.fail(core.Failure{Lease: j.Lease, Error: "x", RetryAt: e.now().Add(-time.Hour)})
	requireEq(e.t, st, core.StateQueued, "state")
	requireTime(e.t, e.get(j.ID).RunAt, e.now(), "run at of a retry in the past")
	e.claimOne("q")
}

func outcomeFailTerminal(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(time.Second)
	st := e.fail(core.Failure{Lease: j.Lease, Error: "bad input", Terminal: true, RetryAt: e.now()})
	requireEq(e.t, st, core.StateFailed, "state returned by a terminal Fail")
	got := e.requireState(j.ID, core.StateFailed)
	requireEq(e.t, got.LastError, "bad input", "last error")
	requireTime(e.t, got.FinishedAt, e.now(), "finished at")
	requireEq(e.t, got.Attempt, 1, "attempt")
	e.advance(time.Hour)
	e.claimNone("q", "the job failed terminally")
}

func outcomeFailExhausted(e *env) {
	r := req("q", "t")
	r.MaxAttempts = 2
	j := e.enqueueClaim(r)
	requireEq(e.t, e.fail(core.Failure{Lease: j.Lease, Error: "one"}), core.StateQueued, "state after attempt 1 of 2")
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 2, "attempt")
	requireEq(e.t, e.fail(core.Failure{Lease: c.Lease, Error: "two", RetryAt: e.now()}), core.StateFailed, "state after attempt 2 of 2")
	got := e.requireState(j.ID, core.StateFailed)
	requireEq(e.t, got.LastError, "two", "last error")
	requireTime(e.t, got.FinishedAt, e.now(), "finished at")
	e.claimNone("q", "attempts are spent")
}

func outcomeFailTruncated(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	long := strings.Repeat("é", core.MaxErrorLength) // 2 bytes each
	e.fail(core.Failure{Lease: j.Lease, Error: long, Terminal: true})
	got := e.get(j.ID)
	requireEq(e.t, got.LastError, core.TruncateError(long), "stored last error")
	runs := e.runs(j.ID)
	requireEq(e.t, runs[0].Error, core.TruncateError(long), "stored run error")
}

func outcomeRuns(e *env) {
	r := req("q", "t")
	r.MaxAttempts = 3
	j := e.enqueueOne(r)
	t0 := e.now()
	a := e.claimAs("q", "wa", 1, leaseTTL)[0]
	e.advance(2 * time.Second)
	e.fail(core.Failure{Lease: a.Lease, Error: "first failure"})
	t1 := e.now()
	b := e.claimAs("q", "wb", 1, leaseTTL)[0]
	e.advance(leaseTTL)
	e.rescue(10)
	t2 := e.now()
	c := e.claimAs("q", "wc", 1, leaseTTL)[0]
	e.advance(3 * time.Second)
	e.complete(c.Lease, nil)

	runs := e.runs(j.ID)
	if len(runs) != 3 {
		e.t.Fatalf("%d runs after three claims, want 3", len(runs))
	}
	want := []core.Run{
		{JobID: j.ID, Attempt: 1, WorkerID: "wa", Token: 1, Status: core.RunFailed, StartedAt: t0, FinishedAt: t0.Add(2 * time.Second), Error: "first failure"},
		{JobID: j.ID, Attempt: 2, WorkerID: "wb", Token: 2, Status: core.RunLost, StartedAt: t1, FinishedAt: t1.Add(leaseTTL)},
		{JobID: j.ID, Attempt: 3, WorkerID: "wc", Token: 3, Status: core.RunSucceeded, StartedAt: t2, FinishedAt: t2.Add(3 * time.Second)},
	}
	ids := map[string]bool{}
	for i := range runs {
		if runs[i].ID == "" || ids[runs[i].ID] {
			e.t.Fatalf("run %d has an empty or repeated id %q", i, runs[i].ID)
		}
		ids[runs[i].ID] = true
		want[i].ID = runs[i].ID
		// ListRuns may leave the job's queue and task out; set, they are the job's.
		if runs[i].Queue != "" || runs[i].Task != "" {
			want[i].Queue, want[i].Task = j.Queue, j.Task
		}
		if runs[i].Status == core.RunLost {
			// The text a rescue records is the backend's choice.
			want[i].Error = runs[i].Error
		}
		if d := diff(want[i], runs[i]); d != "" {
			e.t.Fatalf("run %d: %s", i, d)
		}
	}
	requireEq(e.t, runs[0].Duration(), 2*time.Second, "duration of run 1")
	requireEq(e.t, runs[2].Duration(), 3*time.Second, "duration of run 3")
	_ = b
}

func outcomeNotClaimable(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.complete(j.Lease, nil)
	e.advance(time.Hour)
	e.claimNone("q", "the job succeeded")
	errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: j.Lease}})
	if err == nil && len(errs) == 1 {
		err = errs[0]
	}
	if !errors.Is(err, core.ErrLeaseLost) {
		e.t.Fatalf("completing twice: %v, want ErrLeaseLost", err)
	}
}
