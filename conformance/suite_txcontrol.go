package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testTxControl: cancel and retry inside the caller's transaction take
// effect when it commits and leave no trace when it rolls back; a running
// job's lease works until the commit and is lost after it. A backend that
// does not declare TxControl reports core.ErrUnsupported.
//
// While a case's transaction is open it reads through the backend (which
// sees only committed state) and never writes, since a store may serialise
// writers behind the open transaction.
func testTxControl(t *testing.T, h Harness) {
	if !h.Capabilities.TxControl {
		cases(t, h, map[string]func(e *env){"Undeclared": txControlUndeclared})
		return
	}
	cs := map[string]func(e *env){
		"CancelCommit":          txCancelCommit,
		"CancelRollback":        txCancelRollback,
		"CancelRunningCommit":   txCancelRunningCommit,
		"CancelRunningRollback": txCancelRunningRollback,
		"CancelStates":          txCancelStates,
		"RetryCommit":           txRetryCommit,
		"RetryRollback":         txRetryRollback,
		"RetrySpentCommit":      txRetrySpentCommit,
		"RetryStates":           txRetryStates,
		"WrongType":             txControlWrongType,
	}
	if h.Capabilities.TxEnqueue {
		cs["CancelEnqueuedInTx"] = txCancelEnqueued
	}
	cases(t, h, cs)
}

// openTx begins a transaction that is rolled back at cleanup if the case
// ends without ending it, so that a failed case never leaves it open.
func (e *env) openTx() (tx any, commit, rollback func()) {
	e.t.Helper()
	tx, c, r := e.beginTx()
	ended := false
	e.t.Cleanup(func() {
		if !ended {
			_ = r()
		}
	})
	commit = func() {
		e.t.Helper()
		ended = true
		if err := c(); err != nil {
			e.t.Fatalf("commit: %v", err)
		}
	}
	rollback = func() {
		e.t.Helper()
		ended = true
		if err := r(); err != nil {
			e.t.Fatalf("rollback: %v", err)
		}
	}
	return tx, commit, rollback
}

func (e *env) cancelTx(tx any, id, reason string) core.Job {
	e.t.Helper()
	j, err := core.CancelTx(e.ctx, e.b, tx, id, reason)
	if err != nil {
		e.t.Fatalf("CancelTx(%s): %v", id, err)
	}
	requireEq(e.t, j.ID, id, "CancelTx's job id")
	return j
}

func (e *env) retryTx(tx any, id string) core.Job {
	e.t.Helper()
	j, err := core.RetryTx(e.ctx, e.b, tx, id)
	if err != nil {
		e.t.Fatalf("RetryTx(%s): %v", id, err)
	}
	requireEq(e.t, j.ID, id, "RetryTx's job id")
	return j
}

// failedJob claims a job of queue and fails it for good.
func (e *env) failedJob(r core.EnqueueRequest) core.Job {
	e.t.Helper()
	j := e.enqueueClaim(r)
	requireEq(e.t, e.fail(core.Failure{Lease: j.Lease, Error: "boom", Terminal: true}), core.StateFailed, "state after a terminal failure")
	return j
}

// heartbeat extends l and requires success.
func (e *env) heartbeat(l core.Lease, what string) core.Lease {
	e.t.Helper()
	nl, err := e.b.Heartbeat(e.ctx, l, leaseTTL)
	if err != nil {
		e.t.Fatalf("Heartbeat %s: %v", what, err)
	}
	return nl
}

func txCancelCommit(e *env) {
	j := e.enqueueOne(req("q", "t"))
	e.advance(time.Second)
	tx, commit, _ := e.openTx()
	got := e.cancelTx(tx, j.ID, "moved")
	requireEq(e.t, got.State, core.StateCancelled, "CancelTx's state")
	requireEq(e.t, got.LastError, "moved", "CancelTx's last error")
	e.requireState(j.ID, core.StateQueued)
	commit()
	stored := e.requireState(j.ID, core.StateCancelled)
	requireEq(e.t, stored.LastError, "moved", "last error after the commit")
	requireTime(e.t, stored.FinishedAt, e.now(), "finished at after the commit")
	e.claimNone("q", "the cancel committed")
}

func txCancelRollback(e *env) {
	j := e.enqueueOne(req("q", "t"))
	before := e.snap(j.ID)
	tx, _, rollback := e.openTx()
	e.cancelTx(tx, j.ID, "")
	rollback()
	e.requireUnchanged(before, "a rolled-back CancelTx")
	requireEq(e.t, e.claimOne("q").ID, j.ID, "claimed job after the rollback")
}

func txCancelRunningCommit(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(2 * time.Second)
	tx, commit, _ := e.openTx()
	got := e.cancelTx(tx, j.ID, "operator")
	requireEq(e.t, got.State, core.StateCancelled, "CancelTx's state")
	e.requireState(j.ID, core.StateRunning)
	commit()
	stored := e.requireState(j.ID, core.StateCancelled)
	requireEq(e.t, stored.LastError, "operator", "last error after the commit")
	e.requireCancelledRunning(j)
}

func txCancelRunningRollback(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	before := e.snap(j.ID)
	tx, _, rollback := e.openTx()
	e.cancelTx(tx, j.ID, "")
	rollback()
	e.requireUnchanged(before, "a rolled-back CancelTx")
	l := e.heartbeat(j.Lease, "after a rolled-back CancelTx")
	e.complete(l, []byte("done"))
	e.requireState(j.ID, core.StateSucceeded)
}

// txCancelStates: a cancelled job is returned unchanged, finished jobs are
// refused, an unknown one is not found, and none of it spoils the
// transaction for the cancel that follows.
func txCancelStates(e *env) {
	done := e.enqueueClaim(req("q", "t"))
	e.complete(done.Lease, nil)
	failed := e.failedJob(req("q2", "t"))
	cancelled := e.enqueueOne(req("q3", "t"))
	e.cancel(cancelled.ID, "earlier")
	target := e.enqueueOne(req("q4", "t"))
	snaps := []snapshot{e.snap(done.ID), e.snap(failed.ID), e.snap(cancelled.ID)}
	tx, commit, _ := e.openTx()
	for _, s := range snaps[:2] {
		_, err := core.CancelTx(e.ctx, e.b, tx, s.Job.ID, "")
		requireErr(e.t, err, core.ErrInvalidState, "CancelTx of a "+string(s.Job.State)+" job")
	}
	_, err := core.CancelTx(e.ctx, e.b, tx, core.NewID(e.now()), "")
	requireErr(e.t, err, core.ErrNotFound, "CancelTx of an unknown job")
	again := e.cancelTx(tx, cancelled.ID, "again")
	if d := diff(snaps[2].Job, again); d != "" {
		e.t.Fatalf("CancelTx of a cancelled job changed it: %s", d)
	}
	e.cancelTx(tx, target.ID, "after refusals")
	commit()
	for _, s := range snaps {
		e.requireUnchanged(s, "CancelTx of a "+string(s.Job.State)+" job")
	}
	requireEq(e.t, e.requireState(target.ID, core.StateCancelled).LastError, "after refusals", "last error of the job cancelled after refusals")
}

func txCancelEnqueued(e *env) {
	tx, commit, _ := e.openTx()
	res, err := core.EnqueueTx(e.ctx, e.b, tx, []core.EnqueueRequest{req("q", "t")})
	if err != nil {
		e.t.Fatalf("EnqueueTx: %v", err)
	}
	got := e.cancelTx(tx, res[0].Job.ID, "second thoughts")
	requireEq(e.t, got.State, core.StateCancelled, "CancelTx's state of a job enqueued in the same transaction")
	requireEq(e.t, e.total(), 0, "jobs visible before the commit")
	commit()
	requireEq(e.t, e.requireState(res[0].Job.ID, core.StateCancelled).LastError, "second thoughts", "last error")
	e.claimNone("q", "the job was enqueued and cancelled in one transaction")
}

func txRetryCommit(e *env) {
	j := e.failedJob(req("q", "t"))
	e.advance(time.Minute)
	var sig <-chan struct{}
	if e.h.Capabilities.Notify {
		sig, _ = e.subscribe("q")
		drain(sig)
	}
	tx, commit, _ := e.openTx()
	got := e.retryTx(tx, j.ID)
	requireEq(e.t, got.State, core.StateQueued, "RetryTx's state")
	requireEq(e.t, got.MaxAttempts, core.DefaultMaxAttempts, "RetryTx's max attempts (budget left)")
	e.requireState(j.ID, core.StateFailed)
	commit()
	if sig != nil {
		e.awaitSignal(sig, "a committed RetryTx")
	}
	stored := e.requireState(j.ID, core.StateQueued)
	requireTime(e.t, stored.RunAt, e.now(), "run at after the commit")
	if !stored.FinishedAt.IsZero() {
		e.t.Fatalf("a job retried in a transaction keeps finished at %v", stored.FinishedAt)
	}
	requireEq(e.t, stored.MaxAttempts, core.DefaultMaxAttempts, "max attempts after the commit")
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 2, "attempt after a committed RetryTx")
	e.complete(c.Lease, nil)
}

func txRetryRollback(e *env) {
	j := e.failedJob(req("q", "t"))
	before := e.snap(j.ID)
	tx, _, rollback := e.openTx()
	e.retryTx(tx, j.ID)
	rollback()
	e.requireUnchanged(before, "a rolled-back RetryTx")
	e.advance(time.Hour)
	e.claimNone("q", "the retry was rolled back")
}

func txRetrySpentCommit(e *env) {
	r := req("q", "t")
	r.MaxAttempts = 1
	j := e.failedJob(r)
	tx, commit, _ := e.openTx()
	got := e.retryTx(tx, j.ID)
	requireEq(e.t, got.MaxAttempts, 2, "RetryTx's max attempts after a spent budget")
	requireEq(e.t, e.get(j.ID).MaxAttempts, 1, "max attempts before the commit")
	commit()
	requireEq(e.t, e.requireState(j.ID, core.StateQueued).MaxAttempts, 2, "max attempts after the commit")
	c := e.claimOne("q")
	requireEq(e.t, c.Attempt, 2, "attempt")
	requireEq(e.t, e.fail(core.Failure{Lease: c.Lease, Error: "y"}), core.StateFailed, "state after the extra attempt")
}

// txRetryStates: jobs that are not failed or cancelled are refused, an
// unknown one is not found, and the transaction still retries the
// cancelled job that follows.
func txRetryStates(e *env) {
	refused := e.unretryable()
	cancelled := e.enqueueOne(req("q5", "t"))
	e.cancel(cancelled.ID, "")
	var snaps []snapshot
	for _, j := range refused {
		snaps = append(snaps, e.snap(j.ID))
	}
	tx, commit, _ := e.openTx()
	for _, s := range snaps {
		_, err := core.RetryTx(e.ctx, e.b, tx, s.Job.ID)
		requireErr(e.t, err, core.ErrInvalidState, "RetryTx of a "+string(s.Job.State)+" job")
	}
	_, err := core.RetryTx(e.ctx, e.b, tx, core.NewID(e.now()))
	requireErr(e.t, err, core.ErrNotFound, "RetryTx of an unknown job")
	e.retryTx(tx, cancelled.ID)
	commit()
	for _, s := range snaps {
		e.requireUnchanged(s, "RetryTx of a "+string(s.Job.State)+" job")
	}
	e.requireState(cancelled.ID, core.StateQueued)
	requireEq(e.t, e.claimOne("q5").ID, cancelled.ID, "claimed job retried after refusals")
}

func txControlWrongType(e *env) {
	queued := e.enqueueOne(req("q", "t"))
	failed := e.failedJob(req("q2", "t"))
	snaps := []snapshot{e.snap(queued.ID), e.snap(failed.ID)}
	for _, tx := range []any{struct{}{}, nil} {
		_, err := core.CancelTx(e.ctx, e.b, tx, queued.ID, "")
		requireErr(e.t, err, core.ErrInvalidArgument, "CancelTx with a foreign or nil transaction")
		_, err = core.RetryTx(e.ctx, e.b, tx, failed.ID)
		requireErr(e.t, err, core.ErrInvalidArgument, "RetryTx with a foreign or nil transaction")
	}
	for _, s := range snaps {
		e.requireUnchanged(s, "a call with a foreign or nil transaction")
	}
}

func txControlUndeclared(e *env) {
	queued := e.enqueueOne(req("q", "t"))
	failed := e.failedJob(req("q2", "t"))
	snaps := []snapshot{e.snap(queued.ID), e.snap(failed.ID)}
	_, err := core.CancelTx(e.ctx, e.b, struct{}{}, queued.ID, "")
	e.requireUnsupported(err, "core.CancelTx")
	_, err = core.RetryTx(e.ctx, e.b, struct{}{}, failed.ID)
	e.requireUnsupported(err, "core.RetryTx")
	if tc, ok := e.b.(core.TxController); ok {
		_, err := tc.CancelTx(e.ctx, nil, queued.ID, "")
		e.requireUnsupported(err, "CancelTx")
		_, err = tc.RetryTx(e.ctx, nil, failed.ID)
		e.requireUnsupported(err, "RetryTx")
	}
	for _, s := range snaps {
		e.requireUnchanged(s, "a transactional call of an undeclared capability")
	}
}
