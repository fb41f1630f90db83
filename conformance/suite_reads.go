package conformance

import (
	"slices"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testReads: get, list, count, runs, task stats and queues.
func testReads(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Get":                         readGet,
		"GetNotFound":                 readNotFound,
		"ListFilters":                 readListFilters,
		"PaginationAscending":         func(e *env) { readPagination(e, false) },
		"PaginationDescending":        func(e *env) { readPagination(e, true) },
		"PaginationExactPages":        readExactPages,
		"PaginationWhileStatesChange": readPaginationChanging,
		"DefaultPageSize":             readDefaultPage,
		"Count":                       readCount,
		"Runs":                        readRuns,
		"RunIDsUnique":                readRunIDsUnique,
		"TaskStats":                   readTaskStats,
		"TaskStatsEmpty":              readTaskStatsEmpty,
		"ListQueues":                  readListQueues,
	})
}

func readGet(e *env) {
	j := e.enqueueOne(req("q", "t"))
	if d := diff(j, e.get(j.ID)); d != "" {
		e.t.Fatalf("GetJob differs from Enqueue's job: %s", d)
	}
}

func readNotFound(e *env) {
	e.enqueueOne(req("q", "t"))
	id := core.NewID(e.now())
	_, err := e.b.GetJob(e.ctx, id)
	requireErr(e.t, err, core.ErrNotFound, "GetJob of an unknown id")
	_, err = e.b.ListRuns(e.ctx, id)
	requireErr(e.t, err, core.ErrNotFound, "ListRuns of an unknown id")
	_, err = e.b.GetJob(e.ctx, "not-an-id")
	if err == nil {
		e.t.Fatal("GetJob of a malformed id returned a job")
	}
}

// mixedFixture enqueues jobs over two queues and two tasks, and moves some
// of them into other states. It returns every job as stored.
func mixedFixture(e *env) []core.Job {
	var reqs []core.EnqueueRequest
	for i := range 24 {
		reqs = append(reqs, req([]string{"qa", "qb"}[i%2], []string{"alpha", "beta", "beta"}[i%3]))
	}
	e.enqueue(reqs...)
	// In each queue: claim 4, complete 1, fail 1 terminally, sleep 1, keep 1 running; cancel 1 queued.
	for _, q := range []string{"qa", "qb"} {
		c := e.claim(q, 4)
		e.complete(c[0].Lease, nil)
		e.fail(core.Failure{Lease: c[1].Lease, Error: "x", Terminal: true})
		e.sleep(c[2].Lease, e.now().Add(time.Hour))
		page := e.list(core.JobFilter{Queue: q, States: []core.JobState{core.StateQueued}})
		e.cancel(page.Jobs[0].ID, "")
	}
	return e.list(core.JobFilter{Limit: core.MaxPageSize}).Jobs
}

func (e *env) list(f core.JobFilter) core.JobPage {
	e.t.Helper()
	p, err := e.b.ListJobs(e.ctx, f)
	if err != nil {
		e.t.Fatalf("ListJobs(%+v): %v", f, err)
	}
	return p
}

func ids(jobs []core.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// matches reports whether j matches f as ListJobs must decide it.
func matches(j core.Job, f core.JobFilter) bool {
	if f.Queue != "" && j.Queue != f.Queue || f.Task != "" && j.Task != f.Task {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, j.State)
}

func readListFilters(e *env) {
	all := mixedFixture(e)
	requireEq(e.t, len(all), 24, "jobs listed without a filter")
	if !slices.IsSorted(ids(all)) {
		e.t.Fatal("ListJobs is not ordered by id")
	}
	filters := []core.JobFilter{
		{Queue: "qa"},
		{Task: "beta"},
		{States: []core.JobState{core.StateQueued}},
		{States: []core.JobState{core.StateSucceeded, core.StateFailed, core.StateCancelled}},
		{Queue: "qb", Task: "alpha"},
		{Queue: "qb", Task: "beta", States: []core.JobState{core.StateRunning, core.StateSleeping}},
		{Queue: "nothing"},
		{Task: "nothing"},
	}
	for _, f := range filters {
		var want []string
		for _, j := range all {
			if matches(j, f) {
				want = append(want, j.ID)
			}
		}
		got := e.list(f)
		if !slices.Equal(ids(got.Jobs), want) {
			e.t.Fatalf("ListJobs(%+v) = %d jobs %v, want %d %v", f, len(got.Jobs), ids(got.Jobs), len(want), want)
		}
		if got.Next != "" {
			e.t.Fatalf("ListJobs(%+v) fits one page but returned Next %q", f, got.Next)
		}
		for _, j := range got.Jobs {
			if !matches(j, f) {
				e.t.Fatalf("ListJobs(%+v) returned a job of %s/%s/%s", f, j.Queue, j.Task, j.State)
			}
		}
	}
}

func readPagination(e *env, desc bool) {
	all := mixedFixture(e)
	f := core.JobFilter{Task: "beta", Limit: 3, Desc: desc}
	var want []string
	for _, j := range all {
		if matches(j, f) {
			want = append(want, j.ID)
		}
	}
	seen := map[string]int{}
	var order []string
	for page := 0; ; page++ {
		p := e.list(f)
		if len(p.Jobs) > f.Limit {
			e.t.Fatalf("page %d has %d jobs, limit %d", page, len(p.Jobs), f.Limit)
		}
		for _, j := range p.Jobs {
			seen[j.ID]++
			order = append(order, j.ID)
		}
		// Jobs are added while listing; they may or may not be visited.
		e.enqueue(req("qa", "beta"), req("qb", "beta"))
		if p.Next == "" {
			break
		}
		if len(p.Jobs) == 0 || p.Next != p.Jobs[len(p.Jobs)-1].ID {
			e.t.Fatalf("page %d: Next %q is not the last id of the page", page, p.Next)
		}
		f.Cursor = p.Next
		if page > 100 {
			e.t.Fatal("pagination does not end")
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			e.t.Fatalf("job %s visited %d times, want exactly once", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			e.t.Fatalf("job %s visited %d times", id, n)
		}
	}
	sorted := slices.Clone(order)
	slices.Sort(sorted)
	if desc {
		slices.Reverse(sorted)
	}
	if !slices.Equal(order, sorted) {
		e.t.Fatalf("pages are not in id order (desc %v)", desc)
	}
}

func readPaginationChanging(e *env) {
	jobs := e.enqueueN("q", "t", 30)
	f := core.JobFilter{States: []core.JobState{core.StateQueued}, Limit: 4}
	seen := map[string]int{}
	for page := 0; ; page++ {
		p := e.list(f)
		for _, j := range p.Jobs {
			seen[j.ID]++
			if j.State != core.StateQueued {
				e.t.Fatalf("a listing of queued jobs returned a %s job", j.State)
			}
		}
		// Jobs leave the filter while the listing runs: claims take the
		// oldest, and a cancel takes one near the end.
		e.claim("q", 2)
		e.cancel(jobs[len(jobs)-1-page].ID, "")
		if p.Next == "" {
			break
		}
		f.Cursor = p.Next
		if page > 100 {
			e.t.Fatal("pagination does not end")
		}
	}
	for _, j := range jobs {
		still := e.get(j.ID).State == core.StateQueued
		if n := seen[j.ID]; n > 1 || still && n != 1 {
			e.t.Fatalf("job %s (still queued: %v) visited %d times", j.ID, still, n)
		}
	}
}

func readExactPages(e *env) {
	jobs := e.enqueueN("q", "t", 10)
	p1 := e.list(core.JobFilter{Limit: 5})
	requireEq(e.t, p1.Next, jobs[4].ID, "Next of page 1")
	p2 := e.list(core.JobFilter{Limit: 5, Cursor: p1.Next})
	requireEq(e.t, len(p2.Jobs), 5, "jobs on page 2")
	requireEq(e.t, p2.Next, "", "Next of the last full page")
	d1 := e.list(core.JobFilter{Limit: 5, Desc: true})
	requireEq(e.t, d1.Jobs[0].ID, jobs[9].ID, "first job of a descending listing")
	requireEq(e.t, d1.Next, jobs[5].ID, "Next of descending page 1")
	d2 := e.list(core.JobFilter{Limit: 5, Desc: true, Cursor: d1.Next})
	requireEq(e.t, d2.Jobs[4].ID, jobs[0].ID, "last job of a descending listing")
	requireEq(e.t, d2.Next, "", "Next of the last descending page")
}

func readDefaultPage(e *env) {
	e.enqueueN("q", "t", core.DefaultPageSize+5)
	p := e.list(core.JobFilter{})
	requireEq(e.t, len(p.Jobs), core.DefaultPageSize, "jobs on a page with Limit 0")
	if p.Next == "" {
		e.t.Fatal("a full default page has no Next")
	}
	requireEq(e.t, len(e.list(core.JobFilter{Cursor: p.Next}).Jobs), 5, "jobs on the second page")
}

func readCount(e *env) {
	all := mixedFixture(e)
	for _, f := range []core.JobFilter{
		{}, {Queue: "qa"}, {Task: "alpha"}, {Queue: "qb", Task: "beta"},
		{States: []core.JobState{core.StateQueued, core.StateRunning}}, {Queue: "nothing"},
	} {
		want := map[core.JobState]int64{}
		for _, j := range all {
			if matches(j, f) {
				want[j.State]++
			}
		}
		if d := diff(want, e.count(f)); d != "" {
			e.t.Fatalf("CountJobs(%+v): %s", f, d)
		}
	}
}

func readRuns(e *env) {
	j := e.enqueueOne(req("q", "t"))
	if rs := e.runs(j.ID); len(rs) != 0 {
		e.t.Fatalf("a new job has %d runs", len(rs))
	}
	for i := range 3 {
		c := e.claimAs("q", "w"+itoa(i), 1, leaseTTL)[0]
		e.advance(time.Second)
		e.fail(core.Failure{Lease: c.Lease, Error: "e" + itoa(i)})
	}
	rs := e.runs(j.ID)
	requireEq(e.t, len(rs), 3, "runs")
	for i, r := range rs {
		requireEq(e.t, r.Attempt, i+1, "attempt of run "+itoa(i))
		requireEq(e.t, r.WorkerID, "w"+itoa(i), "worker of run "+itoa(i))
		requireEq(e.t, r.Error, "e"+itoa(i), "error of run "+itoa(i))
		requireEq(e.t, r.Duration(), time.Second, "duration of run "+itoa(i))
	}
}

// readRunIDsUnique: no two runs share an id, across jobs, across claims at
// the same instant (the clock does not move) and across attempts of a job.
func readRunIDsUnique(e *env) {
	jobs := e.enqueueN("q", "t", 6)
	var claimed []core.Job
	for range 3 {
		claimed = append(claimed, e.claim("q", 2)...)
	}
	requireEq(e.t, len(claimed), 6, "claimed")
	for _, c := range claimed[:3] {
		e.fail(core.Failure{Lease: c.Lease, Error: "again", RetryAt: e.now()})
	}
	requireEq(e.t, len(e.claim("q", 3)), 3, "claimed again")
	seen := map[string]string{}
	for _, j := range jobs {
		for _, r := range e.runs(j.ID) {
			if r.ID == "" {
				e.t.Fatalf("job %s has a run without an id", j.ID)
			}
			if other, dup := seen[r.ID]; dup {
				e.t.Fatalf("run id %s is used by job %s and job %s (attempt %d)", r.ID, other, j.ID, r.Attempt)
			}
			seen[r.ID] = j.ID
		}
	}
	requireEq(e.t, len(seen), 9, "runs")
}

func readTaskStats(e *env) {
	e.enqueueN("q", "t", 4)
	e.enqueueN("q", "other", 2)
	a := e.claimOne("q")
	e.advance(2 * time.Second)
	e.complete(a.Lease, nil)
	b := e.claimOne("q")
	e.advance(3 * time.Second)
	e.fail(core.Failure{Lease: b.Lease, Error: "x", Terminal: true})
	c := e.claimOne("q")
	e.advance(time.Second)
	e.sleep(c.Lease, e.now().Add(time.Hour))
	e.claimOne("q") // still running

	st, err := e.b.TaskStats(e.ctx, "t")
	if err != nil {
		e.t.Fatalf("TaskStats: %v", err)
	}
	requireEq(e.t, st.Task, "t", "task")
	wantJobs := map[core.JobState]int64{core.StateSucceeded: 1, core.StateFailed: 1, core.StateSleeping: 1, core.StateRunning: 1}
	if d := diff(wantJobs, nonZero(st.Jobs)); d != "" {
		e.t.Fatalf("TaskStats jobs: %s", d)
	}
	wantRuns := map[core.RunStatus]int64{core.RunSucceeded: 1, core.RunFailed: 1, core.RunSleeping: 1, core.RunRunning: 1}
	if d := diff(wantRuns, nonZero(st.Runs)); d != "" {
		e.t.Fatalf("TaskStats runs: %s", d)
	}
	requireEq(e.t, st.RunTime, 2*time.Second+3*time.Second+time.Second, "summed run time of finished runs")
}

func readTaskStatsEmpty(e *env) {
	st, err := e.b.TaskStats(e.ctx, "never")
	if err != nil {
		e.t.Fatalf("TaskStats of a task without jobs: %v", err)
	}
	if len(nonZero(st.Jobs)) != 0 || len(nonZero(st.Runs)) != 0 || st.RunTime != 0 {
		e.t.Fatalf("TaskStats of a task without jobs = %+v", st)
	}
}

func readListQueues(e *env) {
	e.enqueueN("qb", "t", 2)
	e.enqueueN("qa", "t", 1)
	e.claimOne("qb")
	if err := e.b.PutQueueConfig(e.ctx, core.QueueConfig{Queue: "qc", Paused: true}); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	if len(qs) != 3 || qs[0].Queue != "qa" || qs[1].Queue != "qb" || qs[2].Queue != "qc" {
		e.t.Fatalf("ListQueues = %+v, want qa, qb, qc", qs)
	}
	want := []map[core.JobState]int64{{core.StateQueued: 1}, {core.StateQueued: 1, core.StateRunning: 1}, {}}
	for i, q := range qs {
		if d := diff(want[i], nonZero(q.Jobs)); d != "" {
			e.t.Fatalf("ListQueues[%s].Jobs: %s", q.Queue, d)
		}
		requireEq(e.t, q.Paused, i == 2, "paused of "+q.Queue)
	}
}
