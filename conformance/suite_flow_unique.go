package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testFlowUnique: the unique modes say how long an IdempotencyKey holds.
// In every mode a held key with the same fingerprint reuses the holder, a
// different fingerprint is a conflict, and a free key makes a new job;
// FindByIdempotencyKey returns the job that holds the key now.
func testFlowUnique(t *testing.T, h Harness) {
	cs := map[string]func(e *env){
		"WhileActiveHeldWhileActive": uniqueWhileActiveHeld,
		"WhileActiveFreedBySuccess":  func(e *env) { uniqueWhileActiveFreed(e, "success") },
		"WhileActiveFreedByFailure":  func(e *env) { uniqueWhileActiveFreed(e, "failure") },
		"WhileActiveFreedByCancel":   func(e *env) { uniqueWhileActiveFreed(e, "cancel") },
		"WhileActiveRetryRetakes":    uniqueRetryRetakes,
		"WhileActiveRetryConflict":   uniqueRetryConflict,
		"WhileActiveWithinBatch":     uniqueWithinBatch,
		"ByPeriod":                   uniqueByPeriod,
		"ByPeriodAligned":            uniqueByPeriodAligned,
		"ByPeriodHeldAfterTerminal":  uniqueByPeriodTerminal,
		"ByPeriodCleanupFrees":       uniqueByPeriodCleanup,
		"ConflictInEveryMode":        uniqueConflictEveryMode,
		"UntilRetentionUnchanged":    uniqueUntilRetention,
		"KeysPerQueue":               uniquePerQueue,
	}
	if h.Capabilities.Search {
		cs["FindReturnsHolder"] = uniqueFindHolder
		cs["BulkRetryConflict"] = uniqueBulkRetryConflict
	}
	if h.Capabilities.TxControl {
		cs["RetryTxConflict"] = uniqueRetryTxConflict
	}
	cases(t, h, flowCases(h, cs))
}

// ureq is a keyed request of task t in q with a unique mode.
func ureq(q, key, payload string, mode core.UniqueMode, period time.Duration) core.EnqueueRequest {
	r := keyed(q, key, payload)
	r.Unique, r.UniquePeriod = mode, period
	return r
}

// active is a while-active request.
func active(key, payload string) core.EnqueueRequest {
	return ureq("q", key, payload, core.UniqueWhileActive, 0)
}

// enqueueResult enqueues one request and returns its result.
func (e *env) enqueueResult(r core.EnqueueRequest) core.EnqueueResult {
	e.t.Helper()
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r})
	if err != nil {
		e.t.Fatalf("Enqueue(key %q, mode %q): %v", r.IdempotencyKey, r.Unique, err)
	}
	return res[0]
}

// requireReused enqueues r and requires it to reuse job want.
func (e *env) requireReused(r core.EnqueueRequest, want core.Job, what string) {
	e.t.Helper()
	res := e.enqueueResult(r)
	if !res.Reused || res.Job.ID != want.ID {
		e.t.Fatalf("%s: Enqueue returned %s (reused %v), want job %s reused", what, res.Job.ID, res.Reused, want.ID)
	}
}

// requireNew enqueues r and requires a new job, not any of old.
func (e *env) requireNew(r core.EnqueueRequest, what string, old ...core.Job) core.Job {
	e.t.Helper()
	res := e.enqueueResult(r)
	if res.Reused {
		e.t.Fatalf("%s: Enqueue reused job %s, want a new job", what, res.Job.ID)
	}
	for _, o := range old {
		if res.Job.ID == o.ID {
			e.t.Fatalf("%s: Enqueue returned the old job %s", what, o.ID)
		}
	}
	return res.Job
}

// requireConflict enqueues r, requires ErrIdempotencyConflict and no new job.
func (e *env) requireConflict(r core.EnqueueRequest, what string) {
	e.t.Helper()
	before := e.total()
	_, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r})
	requireErr(e.t, err, core.ErrIdempotencyConflict, what)
	requireEq(e.t, e.total(), before, "jobs after a conflict")
}

// requireHolder checks FindByIdempotencyKey, when the harness has Search:
// want is the holder, or the zero job for none.
func (e *env) requireHolder(q, key string, want core.Job, what string) {
	e.t.Helper()
	if !e.h.Capabilities.Search {
		return
	}
	got, err := e.searcher().FindByIdempotencyKey(e.ctx, q, key)
	if want.ID == "" {
		requireErr(e.t, err, core.ErrNotFound, what+": FindByIdempotencyKey of a free key")
		return
	}
	if err != nil {
		e.t.Fatalf("%s: FindByIdempotencyKey(%s, %s): %v", what, q, key, err)
	}
	requireEq(e.t, got.ID, want.ID, what+": FindByIdempotencyKey's holder")
}

func uniqueWhileActiveHeld(e *env) {
	j := e.enqueueOne(active("k", "p"))
	e.requireReused(active("k", "p"), j, "queued holder")
	e.requireConflict(active("k", "other"), "queued holder, other payload")
	c := e.claimOne("q")
	e.requireReused(active("k", "p"), j, "running holder")
	e.requireConflict(active("k", "other"), "running holder, other payload")
	e.sleepJob(c.Lease, time.Hour)
	e.requireReused(active("k", "p"), j, "sleeping holder")
	e.requireConflict(active("k", "other"), "sleeping holder, other payload")
	e.requireHolder("q", "k", j, "sleeping holder")
	requireEq(e.t, e.total(), 1, "jobs stored")
}

func uniqueWhileActiveFreed(e *env, how string) {
	j := e.enqueueOne(active("k", "p"))
	switch how {
	case "success":
		e.complete(e.claimOne("q").Lease, nil)
	case "failure":
		e.fail(core.Failure{Lease: e.claimOne("q").Lease, Error: "boom", Terminal: true})
	case "cancel":
		e.cancel(j.ID, "")
	}
	e.requireHolder("q", "k", core.Job{}, "after the holder's "+how)
	// The key is free: a new job, even with another payload.
	n := e.requireNew(active("k", "other"), "after the holder's "+how, j)
	requireEq(e.t, n.IdempotencyKey, "k", "the new job's key")
	requireEq(e.t, n.Unique, core.UniqueWhileActive, "the new job's mode")
	e.requireReused(active("k", "other"), n, "the new holder")
	e.requireConflict(active("k", "p"), "the new holder, the first job's payload")
	e.requireHolder("q", "k", n, "the new job holds the key")
	old := e.get(j.ID)
	requireEq(e.t, old.IdempotencyKey, "k", "the old job keeps its key value")
}

func uniqueRetryRetakes(e *env) {
	j := e.enqueueOne(active("k", "p"))
	e.fail(core.Failure{Lease: e.claimOne("q").Lease, Error: "boom", Terminal: true})
	e.requireHolder("q", "k", core.Job{}, "failed")
	r := e.retry(j.ID)
	requireEq(e.t, r.State, core.StateQueued, "retried state")
	e.requireReused(active("k", "p"), j, "the retried job holds the key again")
	e.requireConflict(active("k", "other"), "the retried job holds the key again")
	e.requireHolder("q", "k", j, "retried")
}

// conflictFixture makes a failed while-active job j whose key another job
// n holds by now.
func (e *env) conflictFixture() (j, n core.Job) {
	e.t.Helper()
	j = e.enqueueOne(active("k", "p"))
	e.fail(core.Failure{Lease: e.claimOne("q").Lease, Error: "boom", Terminal: true})
	n = e.requireNew(active("k", "p2"), "after the failure", j)
	return j, n
}

func uniqueRetryConflict(e *env) {
	j, n := e.conflictFixture()
	before := e.snap(j.ID)
	_, err := e.b.Retry(e.ctx, j.ID)
	requireErr(e.t, err, core.ErrIdempotencyConflict, "Retry of a job whose key another job holds")
	e.requireUnchanged(before, "a refused Retry")
	e.requireHolder("q", "k", n, "after the refused retry")
	requireEq(e.t, e.count(core.JobFilter{Queue: "q"})[core.StateQueued], 1, "queued jobs")

	// Once the holder is terminal, the retry retakes the key.
	e.cancel(n.ID, "")
	e.retry(j.ID)
	e.requireHolder("q", "k", j, "after the retry")
	e.requireReused(active("k", "p"), j, "the retried job holds the key")
}

func uniqueBulkRetryConflict(e *env) {
	j, n := e.conflictFixture()
	free := e.enqueueOne(active("f", "p"))
	e.cancel(free.ID, "")
	before := e.snap(j.ID)
	tot := e.bulkAll(core.BulkRequest{Action: core.BulkRetry, Limit: 10, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}})
	if tot.Changed != 1 || tot.Failed != 1 {
		e.t.Fatalf("bulk retry = %+v, want the free job changed and the conflicting one failed", tot)
	}
	e.requireUnchanged(before, "a bulk retry refused for its key")
	e.requireHolder("q", "k", n, "after the bulk retry")
	e.requireState(free.ID, core.StateQueued)
	e.requireHolder("q", "f", free, "the bulk retry retook a free key")
}

func uniqueRetryTxConflict(e *env) {
	j, n := e.conflictFixture()
	before := e.snap(j.ID)
	tx, _, rollback := e.openTx()
	_, err := core.RetryTx(e.ctx, e.b, tx, j.ID)
	rollback()
	requireErr(e.t, err, core.ErrIdempotencyConflict, "RetryTx of a job whose key another job holds")
	e.requireUnchanged(before, "a refused RetryTx")
	e.requireHolder("q", "k", n, "after the refused RetryTx")

	e.cancel(n.ID, "")
	tx, commit, _ := e.openTx()
	e.retryTx(tx, j.ID)
	commit()
	e.requireState(j.ID, core.StateQueued)
	e.requireReused(active("k", "p"), j, "RetryTx retook the free key")
}

func uniqueWithinBatch(e *env) {
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{active("k", "p"), active("k", "p")})
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	if res[0].Reused || !res[1].Reused || res[1].Job.ID != res[0].Job.ID {
		e.t.Fatalf("a batch with one key twice: reused %v %v, ids %s %s", res[0].Reused, res[1].Reused, res[0].Job.ID, res[1].Job.ID)
	}
	_, err = e.b.Enqueue(e.ctx, []core.EnqueueRequest{active("k2", "p"), active("k2", "other")})
	requireErr(e.t, err, core.ErrIdempotencyConflict, "a batch with one key and two payloads")
	requireEq(e.t, e.total(), 1, "jobs stored")
}

func uniqueByPeriod(e *env) {
	// The suite clock starts at 05:06:07: the hour's window ends at 06:00.
	end := core.PeriodEnd(e.now(), time.Hour)
	requireTime(e.t, end, e.now().Truncate(time.Hour).Add(time.Hour), "core.PeriodEnd")
	r := ureq("q", "k", "p", core.UniqueByPeriod, time.Hour)
	j := e.enqueueOne(r)
	requireEq(e.t, j.UniquePeriod, time.Hour, "stored period")
	e.requireReused(r, j, "same window")
	e.requireConflict(ureq("q", "k", "other", core.UniqueByPeriod, time.Hour), "same window, other payload")
	e.advance(end.Sub(e.now()) - time.Millisecond)
	e.requireReused(r, j, "the window's last millisecond")
	e.requireHolder("q", "k", j, "the window's last millisecond")
	e.advance(time.Millisecond)
	e.requireHolder("q", "k", core.Job{}, "the window ended")
	n := e.requireNew(ureq("q", "k", "other", core.UniqueByPeriod, time.Hour), "the next window", j)
	e.requireReused(ureq("q", "k", "other", core.UniqueByPeriod, time.Hour), n, "the next window's holder")
	e.requireConflict(r, "the next window's holder, the first payload")
	e.requireHolder("q", "k", n, "the next window")
	e.requireState(j.ID, core.StateQueued) // the first job itself is untouched
}

func uniqueByPeriodAligned(e *env) {
	// Created at 05:06:07 with a 10 s period: the window is [05:06:00,
	// 05:06:10), not 10 s from the creation.
	r := ureq("q", "k", "p", core.UniqueByPeriod, 10*time.Second)
	j := e.enqueueOne(r)
	e.advance(2999 * time.Millisecond)
	e.requireReused(r, j, "05:06:09.999")
	e.advance(time.Millisecond)
	e.requireNew(r, "05:06:10, a new aligned window", j)
}

func uniqueByPeriodTerminal(e *env) {
	r := ureq("q", "k", "p", core.UniqueByPeriod, time.Hour)
	j := e.enqueueOne(r)
	e.complete(e.claimOne("q").Lease, nil)
	e.requireReused(r, j, "a succeeded job holds its key until the window ends")
	e.requireHolder("q", "k", j, "succeeded within the window")
}

func uniqueByPeriodCleanup(e *env) {
	r := ureq("q", "k", "p", core.UniqueByPeriod, time.Hour)
	j := e.enqueueOne(r)
	e.complete(e.claimOne("q").Lease, nil)
	e.advance(time.Second)
	requireEq(e.t, e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 10}), 1, "cleaned up")
	e.requireNew(r, "retention ended the hold before the window did", j)
}

func uniqueConflictEveryMode(e *env) {
	modes := []struct {
		mode   core.UniqueMode
		period time.Duration
	}{{core.UniqueUntilRetention, 0}, {core.UniqueWhileActive, 0}, {core.UniqueByPeriod, time.Minute}}
	for _, m := range modes {
		key := "k-" + string(m.mode)
		j := e.enqueueOne(ureq("q", key, "p", m.mode, m.period))
		e.requireReused(ureq("q", key, "p", m.mode, m.period), j, "mode "+string(m.mode))
		e.requireConflict(ureq("q", key, "other", m.mode, m.period), "mode "+string(m.mode)+", other payload")
		for _, o := range modes {
			if o != m {
				// The mode is part of the fingerprint: the same key in
				// another mode is another request.
				e.requireConflict(ureq("q", key, "p", o.mode, o.period), "held in mode "+string(m.mode)+", asked in mode "+string(o.mode))
			}
		}
	}
}

func uniqueUntilRetention(e *env) {
	r := keyed("q", "k", "p")
	j := e.enqueueOne(r)
	e.complete(e.claimOne("q").Lease, nil)
	e.advance(366 * 24 * time.Hour)
	e.requireReused(r, j, "the default mode holds the key after the job finished")
	e.requireHolder("q", "k", j, "default mode, succeeded")
}

func uniquePerQueue(e *env) {
	a := e.enqueueOne(ureq("q", "k", "p", core.UniqueWhileActive, 0))
	b := e.requireNew(ureq("q2", "k", "p", core.UniqueWhileActive, 0), "another queue", a)
	e.requireHolder("q", "k", a, "q")
	e.requireHolder("q2", "k", b, "q2")
}

func uniqueFindHolder(e *env) {
	// Three generations of one while-active key: only the last holds it.
	var gens []core.Job
	for i := range 3 {
		j := e.requireNew(active("k", "p"), "generation "+itoa(i), gens...)
		gens = append(gens, j)
		e.requireHolder("q", "k", j, "generation "+itoa(i))
		if i < 2 {
			e.complete(e.claimOne("q").Lease, nil)
			e.requireHolder("q", "k", core.Job{}, "between generations")
		}
	}
	var withKey int
	for _, j := range e.allJobs() {
		if j.IdempotencyKey == "k" {
			withKey++
		}
	}
	requireEq(e.t, withKey, 3, "jobs carrying the key value")
	_, err := e.searcher().FindByIdempotencyKey(e.ctx, "q", "never")
	if !errors.Is(err, core.ErrNotFound) {
		e.t.Fatalf("FindByIdempotencyKey of an unknown key: %v, want ErrNotFound", err)
	}
}
