package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testRuns: core.RunReader — runs by id and across jobs, with filters,
// pages and counts.
func testRuns(t *testing.T, h Harness) {
	if !h.Capabilities.Runs {
		cases(t, h, map[string]func(e *env){"Undeclared": runsUndeclared})
		return
	}
	cases(t, h, map[string]func(e *env){
		"GetRun":                   runsGet,
		"GetRunNotFound":           runsGetNotFound,
		"GetRunInvalid":            runsGetInvalid,
		"ListFilters":              func(e *env) { runsListFilters(e, false) },
		"ListFiltersDescending":    func(e *env) { runsListFilters(e, true) },
		"Count":                    runsCount,
		"TokenOrder":               runsTokenOrder,
		"PaginationWhileRunsAdded": func(e *env) { runsPaginationChanging(e, core.RunFilter{Limit: 4}) },
		"PaginationDescending":     func(e *env) { runsPaginationChanging(e, core.RunFilter{Limit: 4, Desc: true}) },
		"PaginationByStatus": func(e *env) {
			runsPaginationChanging(e, core.RunFilter{Limit: 3, Statuses: []core.RunStatus{core.RunSucceeded, core.RunFailed}})
		},
		"PaginationByStatusDescending": func(e *env) {
			runsPaginationChanging(e, core.RunFilter{Limit: 3, Desc: true, Statuses: []core.RunStatus{core.RunSucceeded, core.RunFailed}})
		},
		"DefaultPageSize": runsDefaultPage,
		"InvalidFilter":   runsInvalidFilter,
		"GoneWithCleanup": runsCleanup,
	})
}

func (e *env) getRun(id string) core.Run {
	e.t.Helper()
	r, err := e.runReader().GetRun(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetRun(%s): %v", id, err)
	}
	return r
}

// listRunPage returns one page of ListAllRuns and checks its size.
func (e *env) listRunPage(f core.RunFilter) core.RunPage {
	e.t.Helper()
	p, err := e.runReader().ListAllRuns(e.ctx, f)
	if err != nil {
		e.t.Fatalf("ListAllRuns(%+v): %v", f, err)
	}
	if len(p.Runs) > f.PageSize() {
		e.t.Fatalf("ListAllRuns(%+v) returned %d runs, more than the page size %d", f, len(p.Runs), f.PageSize())
	}
	return p
}

// listAllRuns follows ListAllRuns from f to the last page. between, when
// not nil, runs after each page but the last.
func (e *env) listAllRuns(f core.RunFilter, between func(page int, cursor string)) []core.Run {
	e.t.Helper()
	return pageAll(e, "ListAllRuns", func(cursor string) ([]core.Run, string) {
		f.Cursor = cursor
		p := e.listRunPage(f)
		return p.Runs, p.Next
	}, between)
}

func (e *env) countRuns(f core.RunFilter) map[core.RunStatus]int64 {
	e.t.Helper()
	m, err := e.runReader().CountRuns(e.ctx, f)
	if err != nil {
		e.t.Fatalf("CountRuns(%+v): %v", f, err)
	}
	return nonZero(m)
}

func runsGet(e *env) {
	j := e.enqueueOne(core.EnqueueRequest{Queue: "q", Task: "t", MaxAttempts: 3})
	c := e.claimOne("q")
	e.advance(time.Second)
	e.fail(core.Failure{Lease: c.Lease, Error: "first"})
	e.advance(time.Second)
	c = e.claimOne("q")
	e.advance(time.Second)
	e.complete(c.Lease, nil)
	runs := e.runs(j.ID)
	requireEq(e.t, len(runs), 2, "runs")
	for _, want := range runs {
		want.Queue, want.Task = "q", "t"
		got := e.getRun(core.RunID(j.ID, want.Token))
		if d := diff(want, got); d != "" {
			e.t.Fatalf("GetRun(%s) differs from ListRuns with the job's queue and task: %s", want.ID, d)
		}
	}
	requireEq(e.t, e.getRun(core.RunID(j.ID, 1)).Status, core.RunFailed, "status of the first run")
	requireEq(e.t, e.getRun(core.RunID(j.ID, 1)).Error, "first", "error of the first run")
	requireEq(e.t, e.getRun(core.RunID(j.ID, 2)).Status, core.RunSucceeded, "status of the second run")
	// A run that is still open.
	r := e.enqueueClaim(req("q2", "t2"))
	got := e.getRun(core.RunID(r.ID, r.Lease.Token))
	requireEq(e.t, got.Status, core.RunRunning, "status of an open run")
	requireEq(e.t, got.Queue+"/"+got.Task, "q2/t2", "queue/task of an open run")
	requireEq(e.t, got.WorkerID, "w1", "worker of an open run")
	requireTime(e.t, got.StartedAt, e.now(), "start of an open run")
}

func runsGetNotFound(e *env) {
	queued := e.enqueueOne(req("q", "t"))
	ran := e.enqueueClaim(req("q2", "t"))
	for _, id := range []string{
		core.RunID(core.NewID(e.now()), 1),
		core.RunID(queued.ID, 1),
		core.RunID(ran.ID, ran.Lease.Token+1),
		core.RunID(ran.ID, 1<<40),
	} {
		_, err := e.runReader().GetRun(e.ctx, id)
		requireErr(e.t, err, core.ErrNotFound, "GetRun("+id+")")
	}
	// A job id that no store makes: not found, or refused as malformed.
	_, err := e.runReader().GetRun(e.ctx, core.RunID("not-an-id", 1))
	if !errors.Is(err, core.ErrNotFound) && !errors.Is(err, core.ErrInvalidArgument) {
		e.t.Fatalf("GetRun of a run of a malformed job id: %v, want ErrNotFound or ErrInvalidArgument", err)
	}
}

func runsGetInvalid(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	for _, id := range []string{
		"", j.ID, j.ID + ".", "." + "1", j.ID + ".0", j.ID + ".-1", j.ID + ".+1", j.ID + ".01",
		j.ID + ".1a", j.ID + ". 1", j.ID + ".99999999999999999999", strings.Repeat("x", core.MaxNameLength+1) + ".1",
	} {
		_, err := e.runReader().GetRun(e.ctx, id)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("GetRun(%q)", id))
	}
}

// runsFixture makes runs of every status over two queues and two tasks,
// started at several times. It returns every job and the times at which
// each round of claims started.
func runsFixture(e *env) (jobs []core.Job, marks []time.Time) {
	var reqs []core.EnqueueRequest
	for i := range 16 {
		r := req([]string{"qa", "qb"}[i%2], []string{"alpha", "beta", "beta"}[i%3])
		r.MaxAttempts = 4
		reqs = append(reqs, r)
	}
	e.enqueue(reqs...)
	for round := range 3 {
		e.advance(time.Minute)
		marks = append(marks, e.now())
		for _, q := range []string{"qa", "qb"} {
			for i, j := range e.claim(q, 6) {
				switch (i + round) % 4 {
				case 0:
					e.fail(core.Failure{Lease: j.Lease, Error: "boom"})
				case 1:
					e.sleep(j.Lease, e.now().Add(time.Second))
				case 2:
					e.complete(j.Lease, nil)
				}
			}
		}
	}
	// Open runs left from the rounds are lost; one new run is cancelled,
	// and two stay open.
	e.advance(time.Minute)
	e.rescue(1000)
	e.advance(time.Minute)
	marks = append(marks, e.now())
	c := e.claim("qa", 3)
	if len(c) != 3 {
		e.t.Fatalf("fixture: claimed %d jobs of qa, want 3", len(c))
	}
	e.cancel(c[0].ID, "stop")
	return e.allJobs(), marks
}

// runFilters are the filters the run cases check against the fixture.
func runFilters(jobs []core.Job, marks []time.Time) []core.RunFilter {
	return []core.RunFilter{
		{},
		{JobID: jobs[3].ID},
		{JobID: jobs[4].ID, Statuses: []core.RunStatus{core.RunFailed, core.RunLost}},
		{Queue: "qa"},
		{Task: "beta"},
		{Queue: "qb", Task: "alpha"},
		{Statuses: []core.RunStatus{core.RunFailed}},
		{Statuses: []core.RunStatus{core.RunRunning, core.RunLost, core.RunCancelled}},
		{Statuses: []core.RunStatus{core.RunSleeping, core.RunSucceeded}},
		{Since: marks[1]},
		{Before: marks[1]},
		{Since: marks[1], Before: marks[2]},
		{Since: marks[0].Add(time.Microsecond), Before: marks[3]},
		{Queue: "qa", Statuses: []core.RunStatus{core.RunSucceeded, core.RunFailed}, Since: marks[1]},
		{Task: "alpha", Before: marks[2], Statuses: []core.RunStatus{core.RunSleeping}},
		{Queue: "nothing"},
		{Task: "nothing"},
		{JobID: core.NewID(marks[0])},
		{JobID: jobs[0].ID, Queue: "qb"}, // jobs[0] is of qa
	}
}

func filterRuns(all []core.Run, f core.RunFilter) []core.Run {
	var out []core.Run
	for _, r := range all {
		if f.Matches(r) {
			out = append(out, r)
		}
	}
	return out
}

func runsListFilters(e *env, desc bool) {
	jobs, marks := runsFixture(e)
	all := e.everyRun(jobs)
	statuses := map[core.RunStatus]bool{}
	for _, r := range all {
		statuses[r.Status] = true
	}
	if len(statuses) != len(core.AllRunStatuses) {
		e.t.Fatalf("fixture: runs have statuses %v, want every status", statuses)
	}
	for _, f := range runFilters(jobs, marks) {
		want := filterRuns(all, f)
		if desc {
			slices.Reverse(want)
		}
		for _, limit := range []int{3, core.MaxPageSize} {
			f.Limit, f.Desc = limit, desc
			got := e.listAllRuns(f, nil)
			if !slices.Equal(runIDs(got), runIDs(want)) {
				e.t.Fatalf("ListAllRuns(%+v) = %v, want %v", f, runIDs(got), runIDs(want))
			}
			for i := range got {
				if d := diff(want[i], got[i]); d != "" {
					e.t.Fatalf("ListAllRuns(%+v): run %s differs from ListRuns with its job's queue and task: %s", f, got[i].ID, d)
				}
			}
		}
	}
}

func runsCount(e *env) {
	jobs, marks := runsFixture(e)
	all := e.everyRun(jobs)
	for _, f := range runFilters(jobs, marks) {
		want := map[core.RunStatus]int64{}
		for _, r := range filterRuns(all, f) {
			want[r.Status]++
		}
		f.Limit = 1 // CountRuns ignores the page size
		if d := diff(want, e.countRuns(f)); d != "" {
			e.t.Fatalf("CountRuns(%+v): %s", f, d)
		}
	}
}

func runsTokenOrder(e *env) {
	first := e.enqueueOne(core.EnqueueRequest{Queue: "q", Task: "t", MaxAttempts: 12})
	for range 11 {
		c := e.claimOne("q")
		e.fail(core.Failure{Lease: c.Lease, Error: "again"})
	}
	e.cancel(first.ID, "enough")
	e.advance(time.Millisecond)
	second := e.enqueueClaim(req("q", "t"))
	var want []string
	for tok := int64(1); tok <= 11; tok++ {
		want = append(want, core.RunID(first.ID, tok))
	}
	want = append(want, core.RunID(second.ID, 1))
	got := runIDs(e.listAllRuns(core.RunFilter{Limit: 4}, nil))
	if !slices.Equal(got, want) {
		e.t.Fatalf("ListAllRuns ascending = %v, want tokens in numeric order %v", got, want)
	}
	slices.Reverse(want)
	got = runIDs(e.listAllRuns(core.RunFilter{Limit: 5, Desc: true}, nil))
	if !slices.Equal(got, want) {
		e.t.Fatalf("ListAllRuns descending = %v, want %v", got, want)
	}
	// A cursor is a run id: paging resumes right after it.
	p := e.listRunPage(core.RunFilter{Limit: 2, Cursor: core.RunID(first.ID, 9)})
	requireEq(e.t, strings.Join(runIDs(p.Runs), " "), core.RunID(first.ID, 10)+" "+core.RunID(first.ID, 11), "the page after token 9")
	p = e.listRunPage(core.RunFilter{Limit: 2, Cursor: core.RunID(first.ID, 10), Desc: true})
	requireEq(e.t, strings.Join(runIDs(p.Runs), " "), core.RunID(first.ID, 9)+" "+core.RunID(first.ID, 8), "the page before token 10")
	p = e.listRunPage(core.RunFilter{Limit: 5, Cursor: core.RunID(first.ID, 11)})
	requireEq(e.t, strings.Join(runIDs(p.Runs), " "), core.RunID(second.ID, 1), "the page after the first job's last run")
	requireEq(e.t, p.Next, "", "Next of the last page")
	p = e.listRunPage(core.RunFilter{JobID: first.ID, Limit: 3, Cursor: core.RunID(first.ID, 2)})
	requireEq(e.t, strings.Join(runIDs(p.Runs), " "), strings.Join([]string{core.RunID(first.ID, 3), core.RunID(first.ID, 4), core.RunID(first.ID, 5)}, " "), "a job's runs after token 2")
}

// runsPaginationChanging pages through the runs that f selects over two
// queues while open runs end, jobs are claimed again, new jobs run and
// (where the harness declares Delete) the job under the cursor is deleted:
// every run that matched when the listing began, and whose job still
// exists, appears exactly once, in order, and no run appears twice.
func runsPaginationChanging(e *env, f core.RunFilter) {
	var c []core.Job
	for _, q := range []string{"qa", "qb"} {
		e.enqueueN(q, "t", 15)
		e.advance(time.Millisecond)
	}
	for _, q := range []string{"qa", "qb"} {
		got := e.claim(q, 10)
		for _, j := range got[:4] {
			e.complete(j.Lease, nil)
		}
		for _, j := range got[4:6] {
			e.fail(core.Failure{Lease: j.Lease, Error: "retry"})
		}
		c = append(c, got[6:]...)
	}
	running := c
	initial := runIDs(filterRuns(e.everyRun(e.allJobs()), f))
	if len(initial) < 8 {
		e.t.Fatalf("fixture: %d runs match %+v, want at least 8", len(initial), f)
	}
	deleted := map[string]bool{}
	got := e.listAllRuns(f, func(page int, cursor string) {
		e.advance(time.Second)
		if page < len(running) && !deleted[running[page].ID] { // an open run ends, and its job runs again
			e.fail(core.Failure{Lease: running[page].Lease, Error: "again"})
		}
		for _, q := range []string{"qa", "qb"} {
			e.enqueueN(q, "t", 1)
			for _, j := range e.claim(q, 2) {
				if j.Attempt%2 == 0 {
					e.complete(j.Lease, nil)
				}
			}
		}
		if id, _, err := core.ParseRunID(cursor); err == nil && e.h.Capabilities.Delete && page%2 == 1 {
			e.deleteJob(id, true)
			deleted[id] = true
		}
	})
	ids := runIDs(got)
	seen := map[string]int{}
	for i, r := range got {
		seen[r.ID]++
		if seen[r.ID] > 1 {
			e.t.Fatalf("run %s listed twice", r.ID)
		}
		if i > 0 && (runLess(got[i-1], r) >= 0) != f.Desc {
			e.t.Fatalf("runs out of order: %s then %s", got[i-1].ID, r.ID)
		}
		if !f.Matches(r) {
			e.t.Fatalf("run %+v listed for %+v", r, f)
		}
	}
	for _, id := range initial {
		job, _, _ := core.ParseRunID(id)
		if seen[id] != 1 && !deleted[job] {
			e.t.Fatalf("run %s matched when the listing began but was listed %d times; listed %v", id, seen[id], ids)
		}
	}
}

func runsDefaultPage(e *env) {
	e.enqueueN("q", "t", 60)
	e.claim("q", 60)
	p := e.listRunPage(core.RunFilter{})
	requireEq(e.t, len(p.Runs), 60, "runs on one default page (fewer than its size)")
	requireEq(e.t, p.Next, "", "Next of a page that holds every run")
	e.enqueueN("q", "t", core.DefaultPageSize-55)
	e.claim("q", 60)
	p = e.listRunPage(core.RunFilter{})
	if len(p.Runs) == 0 || len(p.Runs) > core.DefaultPageSize || p.Next == "" {
		e.t.Fatalf("default page: %d runs, next %q; want at most %d and a cursor", len(p.Runs), p.Next, core.DefaultPageSize)
	}
	requireEq(e.t, len(e.listAllRuns(core.RunFilter{}, nil)), core.DefaultPageSize+5, "runs over every default page")
}

func runsInvalidFilter(e *env) {
	e.enqueueClaim(req("q", "t"))
	t0 := e.now()
	shared := []core.RunFilter{
		{Statuses: []core.RunStatus{"nope"}},
		{Since: t0, Before: t0},
		{Since: t0.Add(time.Second), Before: t0},
		{Queue: "bad queue"},
		{Task: "-bad"},
		{JobID: strings.Repeat("x", core.MaxNameLength+1)},
	}
	paging := []core.RunFilter{
		{Limit: -1},
		{Limit: core.MaxPageSize + 1},
		{Cursor: "garbage"},
		{Cursor: "x.0"},
		{Cursor: "x."},
	}
	for _, f := range append(slices.Clone(shared), paging...) {
		_, err := e.runReader().ListAllRuns(e.ctx, f)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("ListAllRuns(%+v)", f))
	}
	for _, f := range shared {
		_, err := e.runReader().CountRuns(e.ctx, f)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("CountRuns(%+v)", f))
	}
}

func runsCleanup(e *env) {
	gone := e.enqueueClaim(req("q", "t"))
	e.complete(gone.Lease, nil)
	kept := e.enqueueClaim(req("q", "t"))
	e.advance(time.Minute)
	e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 10})
	_, err := e.runReader().GetRun(e.ctx, core.RunID(gone.ID, 1))
	requireErr(e.t, err, core.ErrNotFound, "GetRun of a cleaned-up job's run")
	got := runIDs(e.listAllRuns(core.RunFilter{}, nil))
	requireEq(e.t, strings.Join(got, " "), core.RunID(kept.ID, 1), "runs after cleanup")
	if d := diff(map[core.RunStatus]int64{core.RunRunning: 1}, e.countRuns(core.RunFilter{})); d != "" {
		e.t.Fatalf("CountRuns after cleanup: %s", d)
	}
	if d := diff(map[core.RunStatus]int64{core.RunRunning: 1}, e.countRuns(core.RunFilter{Task: "t"})); d != "" {
		e.t.Fatalf("CountRuns of the task after cleanup: %s", d)
	}
}

func runsUndeclared(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	rr, ok := e.b.(core.RunReader)
	if !ok {
		return
	}
	_, err := rr.GetRun(e.ctx, core.RunID(j.ID, 1))
	e.requireUnsupported(err, "GetRun")
	_, err = rr.ListAllRuns(e.ctx, core.RunFilter{})
	e.requireUnsupported(err, "ListAllRuns")
	_, err = rr.CountRuns(e.ctx, core.RunFilter{})
	e.requireUnsupported(err, "CountRuns")
}
