package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testCleanup: retention deletes only old terminal jobs, in bounded passes.
func testCleanup(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"OnlyTerminalBeforeHorizon": cleanupHorizon,
		"Bounded":                   cleanupBounded,
		"OneQueue":                  cleanupQueue,
		"DeletesRuns":               cleanupRuns,
	})
}

func (e *env) cleanup(r core.CleanupRequest) int {
	e.t.Helper()
	n, err := e.b.Cleanup(e.ctx, r)
	if err != nil {
		e.t.Fatalf("Cleanup(%+v): %v", r, err)
	}
	return n
}

func cleanupHorizon(e *env) {
	t0 := e.now()
	succeeded := e.enqueueClaim(req("q", "t"))
	e.complete(succeeded.Lease, nil)
	failed := e.enqueueClaim(req("q", "t"))
	e.fail(core.Failure{Lease: failed.Lease, Error: "x", Terminal: true})
	cancelled := e.enqueueOne(req("q", "t"))
	e.cancel(cancelled.ID, "")
	queued := e.enqueueOne(req("q", "t"))
	running := e.enqueueClaim(req("q2", "t"))
	sleeping := e.enqueueClaim(req("q3", "t"))
	e.sleep(sleeping.Lease, e.now().Add(time.Hour))
	e.advance(time.Hour)
	atHorizon := e.enqueueClaim(req("q4", "t"))
	e.complete(atHorizon.Lease, nil)
	horizon := e.now()
	e.advance(time.Hour)
	recent := e.enqueueClaim(req("q4", "t"))
	e.complete(recent.Lease, nil)
	e.advance(time.Hour)

	requireEq(e.t, e.cleanup(core.CleanupRequest{FinishedBefore: t0, Limit: 100}), 0, "deleted before anything finished")
	requireEq(e.t, e.cleanup(core.CleanupRequest{FinishedBefore: horizon, Limit: 100}), 3, "deleted")
	for _, j := range []core.Job{succeeded, failed, cancelled} {
		_, err := e.b.GetJob(e.ctx, j.ID)
		requireErr(e.t, err, core.ErrNotFound, "GetJob of a deleted job")
	}
	for _, j := range []core.Job{queued, running, sleeping, atHorizon, recent} {
		e.get(j.ID)
	}
	requireEq(e.t, e.cleanup(core.CleanupRequest{FinishedBefore: horizon, Limit: 100}), 0, "deleted by a second pass")
}

func cleanupBounded(e *env) {
	var finished []core.Job
	for range 7 {
		j := e.enqueueClaim(req("q", "t"))
		e.complete(j.Lease, nil)
		finished = append(finished, j)
		e.advance(time.Second)
	}
	for pass, want := range []int{3, 3, 1, 0} {
		requireEq(e.t, e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 3}), want, "deleted by pass "+itoa(pass))
		if pass == 0 {
			// The oldest finished go first.
			for i, j := range finished {
				_, err := e.b.GetJob(e.ctx, j.ID)
				if gone := err != nil; gone != (i < 3) {
					e.t.Fatalf("after one pass job %d gone=%v (%v), want the 3 oldest gone", i, gone, err)
				}
			}
		}
	}
	requireEq(e.t, e.total(), 0, "jobs left")
}

func cleanupQueue(e *env) {
	a := e.enqueueClaim(req("qa", "t"))
	e.complete(a.Lease, nil)
	b := e.enqueueClaim(req("qb", "t"))
	e.complete(b.Lease, nil)
	e.advance(time.Minute)
	requireEq(e.t, e.cleanup(core.CleanupRequest{Queue: "qb", FinishedBefore: e.now(), Limit: 10}), 1, "deleted in qb")
	e.get(a.ID)
	_, err := e.b.GetJob(e.ctx, b.ID)
	requireErr(e.t, err, core.ErrNotFound, "GetJob of the deleted qb job")
}

func cleanupRuns(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.fail(core.Failure{Lease: j.Lease, Error: "x"})
	c := e.claimOne("q")
	e.complete(c.Lease, nil)
	e.advance(time.Minute)
	e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 10})
	_, err := e.b.ListRuns(e.ctx, j.ID)
	requireErr(e.t, err, core.ErrNotFound, "ListRuns of a deleted job")
	st, err := e.b.TaskStats(e.ctx, "t")
	if err != nil {
		e.t.Fatalf("TaskStats: %v", err)
	}
	if len(nonZero(st.Runs)) != 0 || len(nonZero(st.Jobs)) != 0 {
		e.t.Fatalf("TaskStats after cleanup still counts %+v", st)
	}
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	for _, q := range qs {
		if len(nonZero(q.Jobs)) != 0 {
			e.t.Fatalf("ListQueues after cleanup still counts %+v", q)
		}
	}
}
