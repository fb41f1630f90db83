package conformance

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testAwait: fan-in ([core.Awaiter]). A job parks on other jobs as in a
// durable sleep and the store wakes it, in the step of the transition
// that satisfies its wait; every terminal path of an awaited job counts
// it once; a stale wait wakes and cancels nothing; bad input stores
// nothing. A harness that does not declare Await runs only the check
// that the capability is missing or reports [core.ErrUnsupported].
func testAwait(t *testing.T, h Harness) {
	if !h.Capabilities.Await {
		cases(t, h, map[string]func(e *env){"Undeclared": awaitUndeclared})
		return
	}
	cs := map[string]func(e *env){
		"AllComplete":              awaitAllComplete,
		"AllFail":                  awaitAllFail,
		"AllFailRetriedNot":        awaitAllFailRetried,
		"AllCancel":                awaitAllCancel,
		"AllRescueFail":            awaitAllRescueFail,
		"AllDeadline":              awaitAllDeadline,
		"AllCleanupOnce":           awaitAllCleanupOnce,
		"AnyFirst":                 awaitAnyFirst,
		"AlreadyTerminal":          awaitAlreadyTerminal,
		"AnyAlreadyTerminal":       awaitAnyAlreadyTerminal,
		"ParksLikeSleep":           awaitParks,
		"Until":                    awaitUntil,
		"UntilPast":                awaitUntilPast,
		"MaxJobs":                  awaitMaxJobs,
		"CancelChildrenNested":     awaitCancelChildrenNested,
		"StaleLease":               awaitStaleLease,
		"UnknownChild":             awaitUnknownChild,
		"Validation":               awaitValidation,
		"OwnQueue":                 awaitOwnQueue,
		"SharedChild":              awaitSharedChild,
		"CancelChildren":           awaitCancelChildren,
		"CancelChildrenOff":        awaitCancelChildrenOff,
		"CancelChildrenStale":      awaitCancelChildrenStale,
		"CancelChildrenByDeadline": awaitCancelChildrenDeadline,
		"StaleNotWoken":            awaitStaleNotWoken,
		"RetryNoUncount":           awaitRetryNoUncount,
		"Replace":                  awaitReplace,
		"WaitFields":               awaitFields,
		"NoWait":                   awaitNoWait,
		"CleanupWaiter":            awaitCleanupWaiter,
		"RaceChildren":             awaitRaceChildren,
		"RaceAnyWakesOnce":         awaitRaceAnyOnce,
		"RaceBegin":                awaitRaceBegin,
	}
	if h.Capabilities.Delete {
		cs["AllDeleteJob"] = awaitAllDeleteJob
		cs["AllDeleteQueue"] = awaitAllDeleteQueue
		cs["DeleteWaiter"] = awaitDeleteWaiter
	}
	if h.Capabilities.Search {
		cs["AllBulkCancel"] = awaitAllBulkCancel
	}
	if h.Capabilities.Notify {
		cs["WakeNotifies"] = awaitWakeNotifies
	}
	cases(t, h, cs)
}

// awaiter returns the backend's core.Awaiter.
func (e *env) awaiter() core.Awaiter {
	e.t.Helper()
	a, ok := e.b.(core.Awaiter)
	if !ok {
		e.t.Fatalf("the harness declares Await but %T does not implement core.Awaiter", e.b)
	}
	return a
}

// await begins a wait and requires success.
func (e *env) await(r core.AwaitRequest) core.AwaitResult {
	e.t.Helper()
	res, err := e.awaiter().AwaitJobs(e.ctx, r)
	if err != nil {
		e.t.Fatalf("AwaitJobs(%s, %d jobs, %s): %v", r.Lease.JobID, len(r.JobIDs), r.Mode, err)
	}
	return res
}

// awaitOn parks p on jobs with mode and no bound, and checks the result.
func (e *env) awaitOn(p core.Job, mode core.AwaitMode, jobs []core.Job, pending int, woken bool) {
	e.t.Helper()
	res := e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(jobs), Mode: mode})
	requireEq(e.t, res, core.AwaitResult{Pending: pending, Woken: woken}, "AwaitJobs result")
}

// jobWait returns a job's wait, which must exist.
func (e *env) jobWait(id string) core.Wait {
	e.t.Helper()
	w, err := e.awaiter().JobWait(e.ctx, id)
	if err != nil {
		e.t.Fatalf("JobWait(%s): %v", id, err)
	}
	return w
}

// requireNoWait checks that JobWait reports no wait for id.
func (e *env) requireNoWait(id, what string) {
	e.t.Helper()
	_, err := e.awaiter().JobWait(e.ctx, id)
	requireErr(e.t, err, core.ErrNotFound, "JobWait "+what)
}

// requirePending checks a wait's count.
func (e *env) requirePending(id string, pending int, woken bool) {
	e.t.Helper()
	w := e.jobWait(id)
	if w.Pending != pending || w.Woken != woken {
		e.t.Fatalf("wait of %s has pending %d, woken %v; want %d, %v", id, w.Pending, w.Woken, pending, woken)
	}
}

// parent enqueues and claims a job in queue "p", the waiting job of most
// cases.
func (e *env) parent() core.Job {
	e.t.Helper()
	return e.enqueueClaim(req("p", "parent"))
}

// jobIDs returns the ids of jobs, in order.
func jobIDs(jobs []core.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// claimAll claims the n jobs of queue and fails unless it gets them all.
func (e *env) claimAll(queue string, n int) []core.Job {
	e.t.Helper()
	var out []core.Job
	for len(out) < n {
		got := e.claim(queue, min(n-len(out), 100))
		if len(got) == 0 {
			e.t.Fatalf("claimed %d jobs of %s, want %d", len(out), queue, n)
		}
		out = append(out, got...)
	}
	return out
}

// requireParked checks that p waits: sleeping, due at wakeAt, its wait
// not woken, and nothing claimable in queue "p".
func (e *env) requireParked(p core.Job, wakeAt time.Time, what string) {
	e.t.Helper()
	j := e.get(p.ID)
	if j.State != core.StateSleeping || !j.RunAt.Equal(wakeAt) {
		e.t.Fatalf("%s: waiting job is %s due at %v, want sleeping due at %v", what, j.State, j.RunAt, wakeAt)
	}
	if w := e.jobWait(p.ID); w.Woken {
		e.t.Fatalf("%s: the wait reports woken (pending %d)", what, w.Pending)
	}
	if p.Queue == "p" {
		e.claimNone("p", what+": the waiting job must not be claimable")
	}
}

// requireWoken checks that p was woken now, and claims it: the claim
// keeps p's attempt and takes the next token.
func (e *env) requireWoken(p core.Job, what string) core.Job {
	e.t.Helper()
	j := e.get(p.ID)
	if j.State != core.StateSleeping || !j.RunAt.Equal(e.now()) {
		e.t.Fatalf("%s: waiting job is %s due at %v, want sleeping due now (%v)", what, j.State, j.RunAt, e.now())
	}
	if w := e.jobWait(p.ID); !w.Woken {
		e.t.Fatalf("%s: the wait does not report woken (pending %d)", what, w.Pending)
	}
	c := e.claim(p.Queue, 1)
	if len(c) != 1 || c[0].ID != p.ID {
		e.t.Fatalf("%s: claim of %s returned %d jobs, want the woken job %s", what, p.Queue, len(c), p.ID)
	}
	requireEq(e.t, c[0].Attempt, p.Attempt, what+": attempt of the woken job")
	requireEq(e.t, c[0].Lease.Token, p.Lease.Token+1, what+": token of the woken job")
	return c[0]
}

// fanOut is the common start: a parent claimed in "p" and n children
// enqueued in "c".
func (e *env) fanOut(n int) (core.Job, []core.Job) {
	e.t.Helper()
	p := e.parent()
	return p, e.enqueueN("c", "child", n)
}

func awaitUndeclared(e *env) {
	a, ok := e.b.(core.Awaiter)
	if !ok {
		return
	}
	p := e.parent()
	child := e.enqueueOne(req("c", "child"))
	_, err := a.AwaitJobs(e.ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: []string{child.ID}, Mode: core.AwaitAll})
	e.requireUnsupported(err, "AwaitJobs")
	e.requireState(p.ID, core.StateRunning)
	_, err = a.JobWait(e.ctx, p.ID)
	e.requireUnsupported(err, "JobWait")
}

// awaitAllTerminal parks a parent on three children in another queue,
// ends the first two with end, checks the parent still waits, ends the
// last and checks the wake.
func awaitAllTerminal(e *env, end func(e *env, c core.Job)) {
	e.t.Helper()
	p, kids := e.fanOut(3)
	e.awaitOn(p, core.AwaitAll, kids, 3, false)
	e.requireParked(p, core.WaitForever, "before any child ended")
	for i, c := range kids[:2] {
		e.advance(time.Second)
		end(e, c)
		e.requirePending(p.ID, 2-i, false)
		e.requireParked(p, core.WaitForever, "after child "+itoa(i)+" of 3 ended")
	}
	e.advance(time.Second)
	end(e, kids[2])
	e.requirePending(p.ID, 0, true)
	e.requireWoken(p, "after the last child ended")
}

// claimChild claims c, which must be the next job of its queue.
func (e *env) claimChild(c core.Job) core.Job {
	e.t.Helper()
	got := e.claim(c.Queue, 1)
	if len(got) != 1 || got[0].ID != c.ID {
		e.t.Fatalf("claim of %s did not return child %s", c.Queue, c.ID)
	}
	return got[0]
}

func awaitAllComplete(e *env) {
	awaitAllTerminal(e, func(e *env, c core.Job) { e.complete(e.claimChild(c).Lease, []byte("ok")) })
}

func awaitAllFail(e *env) {
	awaitAllTerminal(e, func(e *env, c core.Job) {
		requireEq(e.t, e.fail(core.Failure{Lease: e.claimChild(c).Lease, Error: "boom", Terminal: true}), core.StateFailed, "state after a terminal Fail")
	})
}

// awaitAllFailRetried: a Fail that retries is no terminal transition and
// does not count; the child counts once it fails for good.
func awaitAllFailRetried(e *env) {
	p := e.parent()
	r := req("c", "child")
	r.MaxAttempts = 2
	c := e.enqueueOne(r)
	e.awaitOn(p, core.AwaitAll, []core.Job{c}, 1, false)
	requireEq(e.t, e.fail(core.Failure{Lease: e.claimChild(c).Lease, Error: "again"}), core.StateQueued, "state after a retried Fail")
	e.requirePending(p.ID, 1, false)
	e.requireParked(p, core.WaitForever, "after a Fail that retries")
	requireEq(e.t, e.fail(core.Failure{Lease: e.claimChild(c).Lease, Error: "spent"}), core.StateFailed, "state after the last attempt failed")
	e.requireWoken(p, "after the child's attempts were spent")
}

func awaitAllCancel(e *env) {
	n := 0
	awaitAllTerminal(e, func(e *env, c core.Job) {
		n++
		if n == 2 {
			c = e.claimChild(c) // a running child is cancelled as well as a queued one
		}
		e.cancel(c.ID, "no longer needed")
	})
}

func awaitAllRescueFail(e *env) {
	p := e.parent()
	r := req("c", "child")
	r.MaxAttempts = 1
	kids := e.enqueue(r, r)
	e.awaitOn(p, core.AwaitAll, kids, 2, false)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	if got := e.claimAs("c", "w1", 1, time.Second); len(got) != 1 || got[0].ID != kids[1].ID {
		e.t.Fatalf("claim of the second child returned %d jobs", len(got))
	}
	e.advance(time.Second)
	e.requireParked(p, core.WaitForever, "while the last child's lease expires")
	if res := e.rescue(10); res.Failed != 1 {
		e.t.Fatalf("Rescue = %+v, want the child failed out of attempts", res)
	}
	e.requireState(kids[1].ID, core.StateFailed)
	e.requireWoken(p, "after Rescue failed the last child")
}

func awaitAllDeadline(e *env) {
	p := e.parent()
	r := req("c", "child")
	r.Cancel.MaxDelay = 10 * time.Second
	plain := e.enqueueOne(req("c", "child"))
	late := e.enqueueOne(r)
	e.awaitOn(p, core.AwaitAll, []core.Job{late, plain}, 2, false)
	e.complete(e.claimChild(plain).Lease, nil)
	e.advance(10 * time.Second)
	e.requireParked(p, core.WaitForever, "before the deadline is enforced")
	e.claimNone("c", "the only job left is past its deadline")
	e.requireDeadlineCancelled(late.ID)
	e.requireWoken(p, "after Claim cancelled the last child at its deadline")
}

// awaitAllCleanupOnce: a counted child that Cleanup deletes does not
// count again.
func awaitAllCleanupOnce(e *env) {
	p, kids := e.fanOut(2)
	e.awaitOn(p, core.AwaitAll, kids, 2, false)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.advance(time.Second)
	if n := e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 10, Queue: "c"}); n != 1 {
		e.t.Fatalf("Cleanup deleted %d jobs, want the finished child", n)
	}
	e.requirePending(p.ID, 1, false)
	e.requireParked(p, core.WaitForever, "after Cleanup deleted a counted child")
	e.complete(e.claimChild(kids[1]).Lease, nil)
	e.requireWoken(p, "after the last child completed")
}

func awaitAllDeleteJob(e *env) {
	awaitAllTerminal(e, func(e *env, c core.Job) { e.deleteJob(c.ID, false) })
}

func awaitAllDeleteQueue(e *env) {
	p := e.parent()
	kids := []core.Job{e.enqueueOne(req("c", "child")), e.enqueueOne(req("d", "child")), e.enqueueOne(req("d", "child"))}
	e.awaitOn(p, core.AwaitAll, kids, 3, false)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.claimChild(kids[1]) // a running child goes with its queue
	e.requireParked(p, core.WaitForever, "before the queue is deleted")
	e.deleteQueueSteps("d", 1, func(int) {
		if e.jobWait(p.ID).Pending > 0 {
			e.requireParked(p, core.WaitForever, "while the queue is deleted")
		}
	})
	e.requireWoken(p, "after DeleteQueue deleted the last children")
}

func awaitAllBulkCancel(e *env) {
	p, kids := e.fanOut(5)
	e.awaitOn(p, core.AwaitAll, kids, 5, false)
	e.claimChild(kids[0])
	tot := e.bulkAll(core.BulkRequest{Action: core.BulkCancel, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "c"}}, Limit: 2, Reason: "bulk"})
	requireEq(e.t, tot.Changed, 5, "children cancelled in bulk")
	e.requireWoken(p, "after a bulk cancel of every child")
}

func awaitAnyFirst(e *env) {
	p, kids := e.fanOut(3)
	e.awaitOn(p, core.AwaitAny, kids, 3, false)
	e.requireParked(p, core.WaitForever, "before any child ended")
	running := e.claimAll("c", 3)
	e.advance(time.Second)
	e.complete(running[1].Lease, nil)
	e.requirePending(p.ID, 2, true)
	c := e.requireWoken(p, "after the first child ended")
	// The others still count, and change nothing else.
	e.cancel(kids[0].ID, "")
	e.requirePending(p.ID, 1, true)
	requireEq(e.t, e.get(p.ID).State, core.StateRunning, "woken job after another child ended")
	e.complete(c.Lease, nil)
}

func awaitAlreadyTerminal(e *env) {
	p, kids := e.fanOut(3)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.fail(core.Failure{Lease: e.claimChild(kids[1]).Lease, Error: "x", Terminal: true})
	e.cancel(kids[2].ID, "")
	e.advance(time.Second)
	e.awaitOn(p, core.AwaitAll, kids, 0, true)
	e.requirePending(p.ID, 0, true)
	if runs := e.runs(p.ID); len(runs) != 1 || runs[0].Status != core.RunSleeping {
		e.t.Fatalf("runs of a job woken at once: %+v, want one sleeping run", runs)
	}
	e.requireWoken(p, "a wait on terminal jobs")
}

func awaitAnyAlreadyTerminal(e *env) {
	p, kids := e.fanOut(3)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.awaitOn(p, core.AwaitAny, kids, 2, true)
	e.requireWoken(p, "an any-wait with a terminal job")
	// An all-wait with the same jobs parks.
	e.complete(e.claimChild(kids[1]).Lease, nil)
	p = e.get(p.ID)
	e.awaitOn(p, core.AwaitAll, kids, 1, false)
	e.requireParked(p, core.WaitForever, "an all-wait with one job left")
}

// awaitParks: a waiting job is parked as a durable sleep parks it.
func awaitParks(e *env) {
	p, kids := e.fanOut(1)
	e.advance(time.Second)
	e.awaitOn(p, core.AwaitAll, kids, 1, false)
	got := e.requireState(p.ID, core.StateSleeping)
	requireTime(e.t, got.RunAt, core.WaitForever, "run at of a waiting job without a bound")
	requireEq(e.t, got.Attempt, 1, "attempt while waiting")
	runs := e.runs(p.ID)
	if len(runs) != 1 || runs[0].Status != core.RunSleeping {
		e.t.Fatalf("runs after AwaitJobs: %+v, want one sleeping run", runs)
	}
	requireTime(e.t, runs[0].FinishedAt, e.now(), "finished at of the run that began the wait")
	_, err := e.b.Heartbeat(e.ctx, p.Lease, time.Minute)
	requireErr(e.t, err, core.ErrLeaseLost, "Heartbeat with the lease of a waiting job")
	errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: p.Lease}})
	if err != nil || len(errs) != 1 {
		e.t.Fatalf("Complete with a waiting job's lease: %v, %v", errs, err)
	}
	requireErr(e.t, errs[0], core.ErrLeaseLost, "Complete with the lease of a waiting job")
	if err := e.b.Sleep(e.ctx, p.Lease, e.now()); !errors.Is(err, core.ErrLeaseLost) {
		e.t.Fatalf("Sleep with the lease of a waiting job: %v, want ErrLeaseLost", err)
	}
	e.advance(24 * time.Hour)
	if r := e.rescue(10); r.Total() != 0 {
		e.t.Fatalf("Rescue changed a waiting job: %+v", r)
	}
	e.requireParked(p, core.WaitForever, "a day later")
	e.complete(e.claimChild(kids[0]).Lease, nil)
	c := e.requireWoken(p, "after the child completed")
	requireEq(e.t, c.Attempt, 1, "attempt after the wake (a wait consumes none)")
	e.complete(c.Lease, []byte("sum"))
	runs = e.runs(p.ID)
	if len(runs) != 2 || runs[1].Status != core.RunSucceeded || runs[1].Attempt != 1 {
		e.t.Fatalf("runs after the wake and Complete: %+v", runs)
	}
	stats, err := e.b.TaskStats(e.ctx, "parent")
	if err != nil {
		e.t.Fatalf("TaskStats: %v", err)
	}
	if n := stats.Runs[core.RunFailed]; n != 0 {
		e.t.Fatalf("a wait counted as %d failed runs", n)
	}
}

func awaitUntil(e *env) {
	p, kids := e.fanOut(2)
	until := e.now().Add(time.Minute)
	res := e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: core.AwaitAll, Until: until})
	requireEq(e.t, res, core.AwaitResult{Pending: 2}, "AwaitJobs result")
	e.requireParked(p, until, "a bounded wait")
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.advance(time.Minute - time.Millisecond)
	e.requireParked(p, until, "1ms before the bound")
	e.advance(time.Millisecond)
	c := e.claimOne("p")
	requireEq(e.t, c.ID, p.ID, "job due at its bound")
	requireEq(e.t, c.Attempt, 1, "attempt at the bound")
	e.requirePending(p.ID, 1, false)
	// The wait is stale now: the last child changes nothing.
	e.complete(e.claimChild(kids[1]).Lease, nil)
	requireEq(e.t, e.get(p.ID).State, core.StateRunning, "job claimed at its bound after the last child ended")
	e.requirePending(p.ID, 0, false)
	e.complete(c.Lease, nil)
}

// requireUntouched checks that a failed AwaitJobs left the claim as it
// was: the job runs under l, unchanged, with no wait.
func (e *env) requireUntouched(s snapshot, l core.Lease, what string) {
	e.t.Helper()
	e.requireUnchanged(s, what)
	e.requireNoWait(l.JobID, "after "+what)
	if _, err := e.b.Heartbeat(e.ctx, l, leaseTTL); err != nil {
		e.t.Fatalf("Heartbeat after %s: %v (the claim must be kept)", what, err)
	}
}

func awaitStaleLease(e *env) {
	p, kids := e.fanOut(2)
	s := e.snap(p.ID)
	stale := p.Lease
	stale.Token++
	_, err := e.awaiter().AwaitJobs(e.ctx, core.AwaitRequest{Lease: stale, JobIDs: jobIDs(kids), Mode: core.AwaitAll})
	requireErr(e.t, err, core.ErrLeaseLost, "AwaitJobs with a token the job does not run under")
	e.requireUntouched(s, p.Lease, "AwaitJobs with a stale lease")

	// A lease lost to Rescue.
	q := e.enqueueOne(req("q", "t"))
	ql := e.claimAs("q", "w1", 1, time.Second)[0].Lease
	e.advance(time.Second)
	e.rescue(10)
	_, err = e.awaiter().AwaitJobs(e.ctx, core.AwaitRequest{Lease: ql, JobIDs: jobIDs(kids), Mode: core.AwaitAny})
	requireErr(e.t, err, core.ErrLeaseLost, "AwaitJobs with a rescued lease")
	e.requireState(q.ID, core.StateQueued)
	e.requireNoWait(q.ID, "after AwaitJobs with a rescued lease")
	// A lease of a waiting job.
	e.awaitOn(e.get(p.ID), core.AwaitAll, kids[:1], 1, false)
	_, err = e.awaiter().AwaitJobs(e.ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: core.AwaitAny})
	requireErr(e.t, err, core.ErrLeaseLost, "AwaitJobs with the lease of a waiting job")
	if w := e.jobWait(p.ID); len(w.JobIDs) != 1 || w.Mode != core.AwaitAll {
		e.t.Fatalf("a refused AwaitJobs replaced the wait: %+v", w)
	}
}

func awaitUnknownChild(e *env) {
	p, kids := e.fanOut(2)
	s := e.snap(p.ID)
	ghost := core.NewID(e.now())
	ids := []string{kids[0].ID, ghost, kids[1].ID}
	_, err := e.awaiter().AwaitJobs(e.ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: ids, Mode: core.AwaitAll})
	requireErr(e.t, err, core.ErrNotFound, "AwaitJobs naming a job that does not exist")
	e.requireUntouched(s, p.Lease, "AwaitJobs naming an unknown job")
	// Nothing was left behind on the children either: their end wakes
	// nothing, and a later wait counts them once.
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.requireState(p.ID, core.StateRunning)
	e.awaitOn(e.get(p.ID), core.AwaitAll, kids, 1, false)
	e.complete(e.claimChild(kids[1]).Lease, nil)
	e.requireWoken(p, "a wait begun after a refused one")
}

func awaitValidation(e *env) {
	p, kids := e.fanOut(2)
	s := e.snap(p.ID)
	ids := jobIDs(kids)
	tooMany := make([]string, core.MaxAwaitJobs+1)
	for i := range tooMany {
		tooMany[i] = core.NewID(e.now())
	}
	bad := map[string]core.AwaitRequest{
		"no job ids":        {Lease: p.Lease, Mode: core.AwaitAll},
		"too many job ids":  {Lease: p.Lease, JobIDs: tooMany, Mode: core.AwaitAll},
		"the waiting job":   {Lease: p.Lease, JobIDs: []string{ids[0], p.ID}, Mode: core.AwaitAll},
		"a job twice":       {Lease: p.Lease, JobIDs: []string{ids[0], ids[1], ids[0]}, Mode: core.AwaitAny},
		"an empty job id":   {Lease: p.Lease, JobIDs: []string{ids[0], ""}, Mode: core.AwaitAll},
		"no mode":           {Lease: p.Lease, JobIDs: ids},
		"an unknown mode":   {Lease: p.Lease, JobIDs: ids, Mode: "most"},
		"until forever":     {Lease: p.Lease, JobIDs: ids, Mode: core.AwaitAll, Until: core.WaitForever},
		"no lease token":    {Lease: core.Lease{JobID: p.ID}, JobIDs: ids, Mode: core.AwaitAll},
		"no lease job":      {Lease: core.Lease{Token: p.Lease.Token}, JobIDs: ids, Mode: core.AwaitAll},
		"a long job id":     {Lease: p.Lease, JobIDs: []string{string(make([]byte, core.MaxNameLength+1))}, Mode: core.AwaitAll},
		"until after bound": {Lease: p.Lease, JobIDs: ids, Mode: core.AwaitAny, Until: core.WaitForever.Add(time.Hour)},
	}
	for _, name := range sortedKeys(bad) {
		_, err := e.awaiter().AwaitJobs(e.ctx, bad[name])
		requireErr(e.t, err, core.ErrInvalidArgument, "AwaitJobs with "+name)
		e.requireUntouched(s, p.Lease, "AwaitJobs with "+name)
	}
}

// awaitOwnQueue: the children share the waiting job's queue, which
// claims them around the parked job.
func awaitOwnQueue(e *env) {
	r := req("p", "parent")
	r.Priority = -1 // claimed first, and first again once woken
	p := e.enqueueClaim(r)
	kids := e.enqueueN("p", "child", 3)
	e.awaitOn(p, core.AwaitAll, kids, 3, false)
	got := e.claim("p", 10)
	if !slices.Equal(jobIDs(got), jobIDs(kids)) {
		e.t.Fatalf("claim of the own queue returned %v, want the children %v and not the waiting job", jobIDs(got), jobIDs(kids))
	}
	for _, c := range got[:2] {
		e.complete(c.Lease, nil)
	}
	e.enqueueOne(req("p", "other"))
	if c := e.claimOne("p"); c.ID == p.ID {
		e.t.Fatal("the waiting job was claimed with a child still running")
	}
	e.complete(got[2].Lease, nil)
	e.requireWoken(p, "after the children in its own queue completed")
}

// awaitSharedChild: two waits on one job both count it.
func awaitSharedChild(e *env) {
	p1 := e.parent()
	p2 := e.parent()
	kids := e.enqueueN("c", "child", 2)
	e.awaitOn(p1, core.AwaitAll, kids, 2, false)
	e.awaitOn(p2, core.AwaitAny, kids[1:], 1, false)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.requirePending(p1.ID, 1, false)
	e.requirePending(p2.ID, 1, false)
	e.claimNone("p", "neither wait is satisfied")
	e.complete(e.claimChild(kids[1]).Lease, nil)
	e.requirePending(p1.ID, 0, true)
	e.requirePending(p2.ID, 0, true)
	got := e.claim("p", 10)
	if len(got) != 2 {
		e.t.Fatalf("claimed %d waiting jobs after their shared child ended, want 2", len(got))
	}
}

// cancelFan parks a parent with CancelChildren on a queued, a running and
// a completed child.
func (e *env) cancelFan(cancelChildren bool) (p core.Job, queued, running, done core.Job) {
	e.t.Helper()
	p, kids := e.fanOut(3)
	done = e.claimChild(kids[0])
	e.complete(done.Lease, nil)
	running = e.claimChild(kids[1])
	queued = kids[2]
	res := e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: core.AwaitAll, CancelChildren: cancelChildren})
	requireEq(e.t, res, core.AwaitResult{Pending: 2}, "AwaitJobs result")
	requireEq(e.t, e.jobWait(p.ID).CancelChildren, cancelChildren, "CancelChildren of the wait")
	return p, queued, running, done
}

func awaitCancelChildren(e *env) {
	p, queued, running, done := e.cancelFan(true)
	e.advance(time.Second)
	e.cancel(p.ID, "stop")
	e.requireState(p.ID, core.StateCancelled)
	for _, c := range []core.Job{queued, running} {
		j := e.requireState(c.ID, core.StateCancelled)
		requireTime(e.t, j.FinishedAt, e.now(), "finished at of a child cancelled with its parent")
	}
	e.requireState(done.ID, core.StateSucceeded)
	_, err := e.b.Heartbeat(e.ctx, running.Lease, time.Minute)
	requireErr(e.t, err, core.ErrLeaseLost, "Heartbeat of a running child cancelled with its parent")
	if runs := e.runs(running.ID); runs[len(runs)-1].Status != core.RunCancelled {
		e.t.Fatalf("the running child's run ended %s, want cancelled", runs[len(runs)-1].Status)
	}
	// The cancelled children count (whether the wait reports woken
	// depends on the order of the step's changes: the job is cancelled
	// either way).
	requireEq(e.t, e.jobWait(p.ID).Pending, 0, "pending after the children were cancelled")
	e.claimNone("c", "every child was cancelled")
	e.claimNone("p", "the waiting job was cancelled")
}

func awaitCancelChildrenOff(e *env) {
	p, queued, running, _ := e.cancelFan(false)
	e.cancel(p.ID, "stop")
	e.requireState(p.ID, core.StateCancelled)
	e.requireState(queued.ID, core.StateQueued)
	e.requireState(running.ID, core.StateRunning)
	if _, err := e.b.Heartbeat(e.ctx, running.Lease, time.Minute); err != nil {
		e.t.Fatalf("Heartbeat of a child whose parent was cancelled without CancelChildren: %v", err)
	}
	e.requirePending(p.ID, 2, false)
}

// awaitCancelChildrenStale: a parent claimed at its bound has left its
// wait behind, and cancelling it cancels no child.
func awaitCancelChildrenStale(e *env) {
	p, kids := e.fanOut(2)
	e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: core.AwaitAll, Until: e.now().Add(time.Second), CancelChildren: true})
	e.advance(time.Second)
	c := e.claimOne("p")
	requireEq(e.t, c.ID, p.ID, "job due at its bound")
	e.sleep(c.Lease, e.now().Add(time.Hour))
	e.cancel(p.ID, "stop")
	for _, k := range kids {
		e.requireState(k.ID, core.StateQueued)
	}
}

func awaitCancelChildrenDeadline(e *env) {
	r := req("p", "parent")
	r.Cancel.MaxDuration = time.Minute
	p := e.enqueueClaim(r)
	kids := e.enqueueN("c", "child", 2)
	e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: core.AwaitAll, CancelChildren: true})
	e.advance(time.Minute)
	if res := e.rescue(10); res.Cancelled < 1 {
		e.t.Fatalf("Rescue = %+v, want the waiting job cancelled at its deadline", res)
	}
	e.requireDeadlineCancelled(p.ID)
	for _, k := range kids {
		e.requireState(k.ID, core.StateCancelled)
	}
}

// awaitStaleNotWoken: a job claimed at its bound and then sleeping is not
// woken by the end of a job its old wait named.
func awaitStaleNotWoken(e *env) {
	p, kids := e.fanOut(1)
	e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: core.AwaitAny, Until: e.now().Add(time.Second)})
	e.advance(time.Second)
	c := e.claimOne("p")
	requireEq(e.t, c.ID, p.ID, "job due at its bound")
	later := e.now().Add(time.Hour)
	e.sleep(c.Lease, later)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	j := e.requireState(p.ID, core.StateSleeping)
	requireTime(e.t, j.RunAt, later, "run at of a sleeping job whose old wait's child ended")
	e.claimNone("p", "the sleep is not over")
	w := e.jobWait(p.ID)
	if w.Woken || w.Pending != 0 {
		e.t.Fatalf("stale wait after its child ended: %+v, want counted and not woken", w)
	}
}

// awaitRetryNoUncount: a Retry of a counted child does not count it
// again when it ends again.
func awaitRetryNoUncount(e *env) {
	p, kids := e.fanOut(2)
	e.awaitOn(p, core.AwaitAll, kids, 2, false)
	e.fail(core.Failure{Lease: e.claimChild(kids[0]).Lease, Error: "x", Terminal: true})
	e.requirePending(p.ID, 1, false)
	e.retryJob(kids[0].ID)
	e.requirePending(p.ID, 1, false)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.requirePending(p.ID, 1, false)
	e.requireParked(p, core.WaitForever, "after a retried child ended twice")
	e.cancel(kids[1].ID, "")
	e.retryJob(kids[1].ID)
	e.requireWoken(p, "after the last child ended")
}

func (e *env) retryJob(id string) core.Job {
	e.t.Helper()
	j, err := e.b.Retry(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Retry(%s): %v", id, err)
	}
	return j
}

// awaitReplace: a new wait of the same job replaces the old one.
func awaitReplace(e *env) {
	p, kids := e.fanOut(3)
	e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids[:2]), Mode: core.AwaitAll, Until: e.now().Add(time.Second), CancelChildren: true})
	e.advance(time.Second)
	c := e.claimOne("p")
	e.await(core.AwaitRequest{Lease: c.Lease, JobIDs: jobIDs(kids[2:]), Mode: core.AwaitAny})
	w := e.jobWait(p.ID)
	if !slices.Equal(w.JobIDs, jobIDs(kids[2:])) || w.Mode != core.AwaitAny || w.CancelChildren || w.Token != c.Lease.Token || w.Pending != 1 || !w.Until.IsZero() {
		e.t.Fatalf("wait after a second AwaitJobs: %+v", w)
	}
	for _, k := range kids[:2] {
		e.complete(e.claimChild(k).Lease, nil)
	}
	e.requirePending(p.ID, 1, false)
	e.requireParked(p, core.WaitForever, "after the jobs of the replaced wait ended")
	e.complete(e.claimChild(kids[2]).Lease, nil)
	p = c
	e.requireWoken(p, "after the job of the second wait ended")
}

// awaitFields: JobWait reports the request and the count.
func awaitFields(e *env) {
	p, kids := e.fanOut(4)
	ids := jobIDs(kids)
	slices.Reverse(ids)
	until := e.now().Add(time.Hour)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: ids, Mode: core.AwaitAll, Until: until, CancelChildren: true})
	want := core.Wait{JobID: p.ID, JobIDs: ids, Mode: core.AwaitAll, Until: until, CancelChildren: true, Pending: 3, Token: p.Lease.Token}
	e.requireWait(want)
	e.complete(e.claimChild(kids[1]).Lease, nil)
	want.Pending = 2
	e.requireWait(want)
	got := e.jobWait(p.ID)
	got.JobIDs[0] = "changed"
	e.requireWait(want) // JobWait hands out its own copy
}

func (e *env) requireWait(want core.Wait) {
	e.t.Helper()
	got := e.jobWait(want.JobID)
	if got.JobID != want.JobID || !slices.Equal(got.JobIDs, want.JobIDs) || got.Mode != want.Mode ||
		!got.Until.Equal(want.Until) || got.CancelChildren != want.CancelChildren ||
		got.Pending != want.Pending || got.Woken != want.Woken || got.Token != want.Token {
		e.t.Fatalf("JobWait(%s) = %+v, want %+v", want.JobID, got, want)
	}
}

func awaitNoWait(e *env) {
	p, kids := e.fanOut(1)
	e.requireNoWait(p.ID, "of a running job that never waited")
	e.requireNoWait(kids[0].ID, "of a queued job")
	e.requireNoWait(core.NewID(e.now()), "of a job that does not exist")
	e.sleep(p.Lease, e.now().Add(time.Second))
	e.requireNoWait(p.ID, "of a sleeping job that never waited")
}

func awaitDeleteWaiter(e *env) {
	p, kids := e.fanOut(2)
	e.awaitOn(p, core.AwaitAll, kids, 2, false)
	e.deleteJob(p.ID, false)
	e.requireNoWait(p.ID, "of a deleted waiting job")
	e.complete(e.claimChild(kids[0]).Lease, nil)
	e.cancel(kids[1].ID, "")
	_, err := e.b.GetJob(e.ctx, p.ID)
	requireErr(e.t, err, core.ErrNotFound, "GetJob of the deleted waiting job after its children ended")
	e.claimNone("p", "the waiting job was deleted")
}

func awaitCleanupWaiter(e *env) {
	p, kids := e.fanOut(1)
	e.awaitOn(p, core.AwaitAll, kids, 1, false)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	c := e.requireWoken(p, "after the child completed")
	e.complete(c.Lease, nil)
	requireEq(e.t, e.jobWait(p.ID).Pending, 0, "pending of a finished job's wait")
	e.advance(time.Second)
	if n := e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 10, Queue: "p"}); n != 1 {
		e.t.Fatalf("Cleanup deleted %d jobs, want the finished waiting job", n)
	}
	e.requireNoWait(p.ID, "of a waiting job deleted by Cleanup")
}

// raceErrs collects the errors of the goroutines of a race.
type raceErrs struct {
	mu   sync.Mutex
	errs []error
}

func (r *raceErrs) add(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *raceErrs) check(t testing.TB) {
	t.Helper()
	if err := errors.Join(r.errs...); err != nil {
		t.Fatal(err)
	}
}

// drainChildren has workers claim and complete the jobs of queue until
// it is empty.
func (e *env) drainChildren(queue string, workers, batch int, errs *raceErrs) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: queue, WorkerID: "w" + itoa(w), Limit: batch, LeaseTTL: time.Hour})
				if err != nil {
					errs.add(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				items := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = core.Completion{Lease: j.Lease}
				}
				ierrs, err := e.b.Complete(e.ctx, items)
				if err = errors.Join(append(ierrs, err)...); err != nil {
					errs.add(err)
					return
				}
			}
		}()
	}
	return &wg
}

// awaitRaceChildren: 200 children completed by 8 workers at once wake
// their parent once, with every child counted.
func awaitRaceChildren(e *env) {
	p, kids := e.fanOut(200)
	e.awaitOn(p, core.AwaitAll, kids, 200, false)
	var errs raceErrs
	e.drainChildren("c", 8, 3, &errs).Wait()
	errs.check(e.t)
	e.requirePending(p.ID, 0, true)
	c := e.requireWoken(p, "after 200 children completed at once")
	e.claimNone("p", "the job was woken once")
	e.complete(c.Lease, nil)
}

// awaitRaceAnyOnce: an any-wait woken by the first of 200 children that
// 8 workers complete at once is not woken again: the job claimed at the
// wake and sleeping for an hour stays asleep.
func awaitRaceAnyOnce(e *env) {
	p, kids := e.fanOut(200)
	e.awaitOn(p, core.AwaitAny, kids, 200, false)
	var errs raceErrs
	wg := e.drainChildren("c", 8, 1, &errs)
	later := e.now().Add(time.Hour)
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	for over := false; ; {
		select {
		case <-drained:
			over = true
		default:
		}
		jobs, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: "p", WorkerID: "parent", Limit: 1, LeaseTTL: time.Hour})
		if err != nil {
			e.t.Fatalf("Claim(p): %v", err)
		}
		if len(jobs) == 1 {
			e.sleep(jobs[0].Lease, later)
			break
		}
		if over {
			e.t.Fatal("the waiting job was not woken by 200 children")
		}
		runtime.Gosched()
	}
	<-drained
	errs.check(e.t)
	e.requirePending(p.ID, 0, true)
	j := e.requireState(p.ID, core.StateSleeping)
	requireTime(e.t, j.RunAt, later, "run at of the job that went to sleep after its wake")
}

// awaitRaceBegin: children that end while the wait begins never lose the
// wake: whichever comes first, the parent ends up due.
func awaitRaceBegin(e *env) {
	for round := range 10 {
		mode := core.AwaitAll
		if round%2 == 1 {
			mode = core.AwaitAny
		}
		p := e.parent()
		e.enqueueN("c", "child", 10)
		kids := e.claimAll("c", 10)
		start := make(chan struct{})
		var errs raceErrs
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for _, k := range kids {
				ierrs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: k.Lease}})
				if err = errors.Join(append(ierrs, err)...); err != nil {
					errs.add(err)
				}
			}
		}()
		close(start)
		res := e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: mode})
		wg.Wait()
		errs.check(e.t)
		if res.Pending < 0 || res.Pending > 10 || res.Woken != mode.Satisfied(10, res.Pending) {
			e.t.Fatalf("round %d: AwaitJobs result %+v for mode %s", round, res, mode)
		}
		e.requirePending(p.ID, 0, true)
		c := e.requireWoken(p, "round "+itoa(round)+": children completed while the wait began")
		e.complete(c.Lease, nil)
	}
}

// awaitWakeNotifies: the wake signals the waiting job's queue, so that a
// worker that waits on notifications claims it without polling.
func awaitWakeNotifies(e *env) {
	p, kids := e.fanOut(2)
	e.awaitOn(p, core.AwaitAll, kids, 2, false)
	e.complete(e.claimChild(kids[0]).Lease, nil)
	running := e.claimChild(kids[1])
	sig, _ := e.subscribe("p")
	drain(sig)
	e.complete(running.Lease, nil)
	e.awaitSignal(sig, "the last child woke the waiting job")
	e.requireWoken(p, "after the signal")
}

// awaitUntilPast: a bound already past parks the job due now, as a sleep
// into the past does, without waking the wait.
func awaitUntilPast(e *env) {
	p, kids := e.fanOut(1)
	e.advance(time.Second)
	res := e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: jobIDs(kids), Mode: core.AwaitAll, Until: e.now().Add(-time.Hour)})
	requireEq(e.t, res, core.AwaitResult{Pending: 1}, "AwaitJobs result")
	j := e.requireState(p.ID, core.StateSleeping)
	requireTime(e.t, j.RunAt, e.now(), "run at of a wait bounded in the past")
	c := e.claimOne("p")
	requireEq(e.t, c.ID, p.ID, "job due at once")
	requireEq(e.t, c.Attempt, 1, "attempt")
	e.requirePending(p.ID, 1, false)
}

// awaitMaxJobs: a wait may name core.MaxAwaitJobs jobs, and keeps their
// order.
func awaitMaxJobs(e *env) {
	p, kids := e.fanOut(core.MaxAwaitJobs)
	ids := jobIDs(kids)
	slices.Reverse(ids)
	res := e.await(core.AwaitRequest{Lease: p.Lease, JobIDs: ids, Mode: core.AwaitAny})
	requireEq(e.t, res, core.AwaitResult{Pending: core.MaxAwaitJobs}, "AwaitJobs result")
	w := e.jobWait(p.ID)
	if !slices.Equal(w.JobIDs, ids) || w.Pending != core.MaxAwaitJobs {
		e.t.Fatalf("wait on %d jobs reports %d ids (in order: %v), pending %d", len(ids), len(w.JobIDs), slices.Equal(w.JobIDs, ids), w.Pending)
	}
	e.cancel(kids[len(kids)/2].ID, "")
	e.requireWoken(p, "after one of the jobs ended")
}

// awaitCancelChildrenNested: a cancelled child that waits with
// CancelChildren itself cancels its own children, in the same step.
func awaitCancelChildrenNested(e *env) {
	top := e.parent()
	mid := e.enqueueClaim(req("m", "mid"))
	leaves := e.enqueueN("c", "child", 2)
	e.await(core.AwaitRequest{Lease: mid.Lease, JobIDs: jobIDs(leaves), Mode: core.AwaitAll, CancelChildren: true})
	other := e.enqueueOne(req("c", "child"))
	e.await(core.AwaitRequest{Lease: top.Lease, JobIDs: []string{mid.ID, other.ID}, Mode: core.AwaitAll, CancelChildren: true})
	e.cancel(top.ID, "stop")
	for _, j := range append([]core.Job{mid, other}, leaves...) {
		e.requireState(j.ID, core.StateCancelled)
	}
}
