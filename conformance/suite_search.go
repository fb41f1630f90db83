package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testSearch: core.JobSearcher — jobs by header, id prefix, ids and time
// ranges, with pages and counts, and the job that holds a key.
func testSearch(t *testing.T, h Harness) {
	if !h.Capabilities.Search {
		cases(t, h, map[string]func(e *env){"Undeclared": searchUndeclared})
		return
	}
	cases(t, h, map[string]func(e *env){
		"Filters":           func(e *env) { searchFilters(e, false) },
		"FiltersDescending": func(e *env) { searchFilters(e, true) },
		"Count":             searchCount,
		"PaginationWhileStatesChange": func(e *env) {
			searchPaginationChanging(e, core.JobSearch{HeaderKey: "tenant", HeaderValue: "a", JobFilter: core.JobFilter{Limit: 6}})
		},
		"PaginationByStateDescending": func(e *env) {
			searchPaginationChanging(e, core.JobSearch{HeaderKey: "tenant", JobFilter: core.JobFilter{
				Limit: 5, Desc: true, States: []core.JobState{core.StateQueued, core.StateFailed}}})
		},
		"PaginationByState": func(e *env) {
			searchPaginationChanging(e, core.JobSearch{IDPrefix: "0", JobFilter: core.JobFilter{
				Limit: 4, States: []core.JobState{core.StateQueued, core.StateFailed}}})
		},
		"InvalidSearch":         searchInvalid,
		"FindByKey":             searchFindByKey,
		"FindByKeyAfterCleanup": searchFindByKeyCleanup,
		"FindByKeyInvalid":      searchFindByKeyInvalid,
	})
}

// searchPage returns one page of SearchJobs and checks its size.
func (e *env) searchPage(s core.JobSearch) core.JobPage {
	e.t.Helper()
	p, err := e.searcher().SearchJobs(e.ctx, s)
	if err != nil {
		e.t.Fatalf("SearchJobs(%+v): %v", s, err)
	}
	if len(p.Jobs) > s.PageSize() {
		e.t.Fatalf("SearchJobs(%+v) returned %d jobs, more than the page size %d", s, len(p.Jobs), s.PageSize())
	}
	return p
}

// searchAll follows SearchJobs from s to the last page; between, when not
// nil, runs after each page but the last.
func (e *env) searchAll(s core.JobSearch, between func(page int, cursor string)) []core.Job {
	e.t.Helper()
	return pageAll(e, "SearchJobs", func(cursor string) ([]core.Job, string) {
		s.Cursor = cursor
		p := e.searchPage(s)
		return p.Jobs, p.Next
	}, between)
}

func (e *env) countSearch(s core.JobSearch) map[core.JobState]int64 {
	e.t.Helper()
	m, err := e.searcher().CountSearch(e.ctx, s)
	if err != nil {
		e.t.Fatalf("CountSearch(%+v): %v", s, err)
	}
	return nonZero(m)
}

// searchHeaders are the fixture's headers: plain values, values and keys
// that SQL LIKE or glob patterns would read as wildcards, quotes, case.
var searchHeaders = []map[string]string{
	{"tenant": "a"},
	{"tenant": "b", "region": "eu"},
	{"tenant": "a", "region": "us"},
	nil,
	{"tenant": "50%"},
	{"tenant": "5_0"},
	{"tenant": `it's "quoted"`},
	{"tenant%": "x"},
	{"Tenant": "a"},
	{"tenant": ""},
	{"tenant": "a*", "region": "eu"},
}

// searchFixture enqueues jobs in three batches at three times over two
// queues and two tasks, with searchHeaders, and finishes some of them at
// three later times. It returns every job and the creation and finish
// times.
func searchFixture(e *env) (jobs []core.Job, created, finished []time.Time) {
	n := 0
	for range 3 {
		created = append(created, e.now())
		var reqs []core.EnqueueRequest
		for range 11 {
			r := req([]string{"qa", "qb"}[n%2], []string{"alpha", "beta", "beta"}[n%3])
			r.Headers = searchHeaders[n%len(searchHeaders)]
			reqs = append(reqs, r)
			n++
		}
		e.enqueue(reqs...)
		e.advance(time.Minute)
	}
	for i, q := range []string{"qa", "qb", "qa"} {
		e.advance(time.Minute)
		finished = append(finished, e.now())
		c := e.claim(q, 5)
		e.complete(c[0].Lease, nil)
		e.fail(core.Failure{Lease: c[1].Lease, Error: "x", Terminal: true})
		e.cancel(c[2].ID, "stop")
		if i == 0 {
			e.sleep(c[3].Lease, e.now().Add(time.Hour))
		}
	}
	return e.allJobs(), created, finished
}

// searches are the searches the cases check against the fixture.
func searches(jobs []core.Job, created, finished []time.Time) []core.JobSearch {
	states := func(s ...core.JobState) core.JobFilter { return core.JobFilter{States: s} }
	return []core.JobSearch{
		{},
		{JobFilter: core.JobFilter{Queue: "qa"}},
		{HeaderKey: "tenant"},
		{HeaderKey: "tenant", HeaderValue: "a"},
		{HeaderKey: "tenant", HeaderValue: "50%"},
		{HeaderKey: "tenant", HeaderValue: "5%"},
		{HeaderKey: "tenant", HeaderValue: "5_"},
		{HeaderKey: "tenant", HeaderValue: "5_0"},
		{HeaderKey: "tenant", HeaderValue: "a*"},
		{HeaderKey: "tenant", HeaderValue: "_"},
		{HeaderKey: "tenant", HeaderValue: `it's "quoted"`},
		{HeaderKey: "tenant%"},
		{HeaderKey: "tenant_"},
		{HeaderKey: "tenan%"},
		{HeaderKey: "Tenant"},
		{HeaderKey: "region", HeaderValue: "eu", JobFilter: core.JobFilter{Queue: "qb"}},
		{HeaderKey: "nothing"},
		{IDPrefix: jobs[0].ID[:10]},
		{IDPrefix: jobs[5].ID[:14]},
		{IDPrefix: jobs[7].ID},
		{IDPrefix: strings.ToLower(jobs[7].ID)},
		{IDPrefix: "%"},
		{IDPrefix: "_"},
		{IDPrefix: "*"},
		{IDs: []string{jobs[1].ID, jobs[7].ID, jobs[20].ID, core.NewID(created[0]), jobs[7].ID}},
		{IDs: []string{jobs[1].ID, jobs[2].ID, jobs[3].ID, jobs[4].ID}, JobFilter: core.JobFilter{Queue: "qa"}},
		{IDs: []string{jobs[30].ID, "not-an-id", jobs[0].ID}, JobFilter: states(core.StateQueued)},
		{Created: core.TimeRange{From: created[1]}},
		{Created: core.TimeRange{To: created[1]}},
		{Created: core.TimeRange{From: created[1], To: created[2]}},
		{Created: core.TimeRange{From: created[0].Add(time.Microsecond), To: created[2].Add(time.Microsecond)}},
		{Finished: core.TimeRange{From: finished[1]}},
		{Finished: core.TimeRange{To: finished[1]}},
		{Finished: core.TimeRange{From: finished[0], To: finished[2]}},
		{Finished: core.TimeRange{To: finished[2].Add(time.Hour)}},
		{Finished: core.TimeRange{From: finished[0]}, JobFilter: core.JobFilter{Queue: "qa", Task: "beta", States: []core.JobState{core.StateSucceeded, core.StateFailed}}},
		{HeaderKey: "tenant", HeaderValue: "a", Created: core.TimeRange{From: created[1]}, JobFilter: states(core.StateQueued)},
		{HeaderKey: "region", IDPrefix: jobs[0].ID[:10], JobFilter: core.JobFilter{Task: "beta"}},
		{HeaderKey: "tenant", Finished: core.TimeRange{From: created[0]}, JobFilter: states(core.StateQueued, core.StateSleeping)},
		{JobFilter: core.JobFilter{Queue: "nothing"}, HeaderKey: "tenant"},
		{JobFilter: core.JobFilter{Task: "nothing"}, Created: core.TimeRange{From: created[0]}},
	}
}

func searchMatches(all []core.Job, s core.JobSearch) []core.Job {
	var out []core.Job
	for _, j := range all {
		if s.Matches(j) {
			out = append(out, j)
		}
	}
	return out
}

func searchFilters(e *env, desc bool) {
	all, created, finished := searchFixture(e)
	for _, s := range searches(all, created, finished) {
		want := searchMatches(all, s)
		if desc {
			slices.Reverse(want)
		}
		for _, limit := range []int{3, core.MaxPageSize} {
			s.Limit, s.Desc = limit, desc
			got := e.searchAll(s, nil)
			if !slices.Equal(ids(got), ids(want)) {
				e.t.Fatalf("SearchJobs(%+v) = %v, want %v", s, ids(got), ids(want))
			}
			for i := range got {
				if d := diff(want[i], got[i]); d != "" {
					e.t.Fatalf("SearchJobs(%+v): job %s differs from ListJobs: %s", s, got[i].ID, d)
				}
			}
		}
	}
}

func searchCount(e *env) {
	all, created, finished := searchFixture(e)
	for _, s := range searches(all, created, finished) {
		want := map[core.JobState]int64{}
		for _, j := range searchMatches(all, s) {
			want[j.State]++
		}
		s.Limit = 1 // CountSearch ignores the page size
		if d := diff(want, e.countSearch(s)); d != "" {
			e.t.Fatalf("CountSearch(%+v): %s", s, d)
		}
	}
}

// searchPaginationChanging pages through search s over two queues while
// matching jobs are claimed and finish, new ones arrive and (where the
// harness declares Delete) the job under the cursor is deleted: every job
// that matched when the search began and was left alone appears exactly
// once, in order, and no job appears twice or unmatched.
func searchPaginationChanging(e *env, s core.JobSearch) {
	tenant := func(i int) map[string]string {
		return map[string]string{"tenant": []string{"a", "a", "a", "a", "b"}[i%5]}
	}
	for i := range 60 {
		r := req([]string{"qa", "qb"}[i%2], "t")
		r.Headers = tenant(i)
		e.enqueue(r)
	}
	for _, q := range []string{"qa", "qb"} { // some failed jobs to start with
		for _, j := range e.claim(q, 3) {
			e.fail(core.Failure{Lease: j.Lease, Error: "x", Terminal: true})
		}
	}
	initial := ids(searchMatches(e.allJobs(), s))
	if len(initial) < 20 {
		e.t.Fatalf("fixture: %d jobs match %+v, want at least 20", len(initial), s)
	}
	touched := map[string]bool{}
	n := 60
	got := e.searchAll(s, func(page int, cursor string) {
		for _, q := range []string{"qa", "qb"} {
			for _, j := range e.claim(q, 2) {
				touched[j.ID] = true
				if page%2 == 0 {
					e.complete(j.Lease, nil)
				} else {
					e.fail(core.Failure{Lease: j.Lease, Error: "x", Terminal: true})
				}
			}
			r := req(q, "t")
			r.Headers = tenant(n)
			n++
			e.enqueue(r)
		}
		if e.h.Capabilities.Delete && page%3 == 1 {
			e.deleteJob(cursor, true)
			touched[cursor] = true
		}
		e.advance(time.Second)
	})
	seen := map[string]int{}
	for i, j := range got {
		if seen[j.ID]++; seen[j.ID] > 1 {
			e.t.Fatalf("job %s listed twice", j.ID)
		}
		if i > 0 && (got[i-1].ID >= j.ID) != s.Desc {
			e.t.Fatalf("jobs out of order: %s then %s", got[i-1].ID, j.ID)
		}
		if !s.Matches(j) {
			e.t.Fatalf("job %s (%s, headers %v) listed for %+v", j.ID, j.State, j.Headers, s)
		}
	}
	for _, id := range initial {
		if seen[id] != 1 && !touched[id] {
			e.t.Fatalf("job %s matched throughout but was listed %d times", id, seen[id])
		}
	}
}

func searchInvalid(e *env) {
	e.enqueueOne(req("q", "t"))
	t0 := e.now()
	many := make([]string, core.MaxPageSize+1)
	for i := range many {
		many[i] = core.NewID(t0)
	}
	for _, s := range []core.JobSearch{
		{HeaderValue: "a"},
		{HeaderKey: strings.Repeat("k", core.DefaultLimits.MaxHeaderBytes+1)},
		{HeaderKey: "k", HeaderValue: "\xff"},
		{IDPrefix: strings.Repeat("0", 2*core.IDLength+1)},
		{IDs: many},
		{IDs: []string{""}},
		{IDs: []string{strings.Repeat("x", core.MaxNameLength+1)}},
		{Created: core.TimeRange{From: t0, To: t0}},
		{Finished: core.TimeRange{From: t0.Add(time.Second), To: t0}},
		{JobFilter: core.JobFilter{States: []core.JobState{"nope"}}},
		{JobFilter: core.JobFilter{Queue: "bad queue"}},
		{JobFilter: core.JobFilter{Task: "-t"}},
	} {
		_, err := e.searcher().SearchJobs(e.ctx, s)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("SearchJobs(%.200v)", s))
		_, err = e.searcher().CountSearch(e.ctx, s)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("CountSearch(%.200v)", s))
	}
	for _, s := range []core.JobSearch{
		{JobFilter: core.JobFilter{Limit: -1}},
		{JobFilter: core.JobFilter{Limit: core.MaxPageSize + 1}},
	} {
		_, err := e.searcher().SearchJobs(e.ctx, s)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("SearchJobs(%+v)", s))
	}
}

func (e *env) findByKey(queue, key string) core.Job {
	e.t.Helper()
	j, err := e.searcher().FindByIdempotencyKey(e.ctx, queue, key)
	if err != nil {
		e.t.Fatalf("FindByIdempotencyKey(%s, %s): %v", queue, key, err)
	}
	return j
}

func (e *env) requireNoKey(queue, key, why string) {
	e.t.Helper()
	_, err := e.searcher().FindByIdempotencyKey(e.ctx, queue, key)
	requireErr(e.t, err, core.ErrNotFound, "FindByIdempotencyKey("+queue+", "+key+") "+why)
}

// withKey is a request with an idempotency key and the default payload.
func withKey(queue, key string) core.EnqueueRequest {
	r := req(queue, "t")
	r.IdempotencyKey = key
	return r
}

func searchFindByKey(e *env) {
	e.requireNoKey("q", "k1", "before any enqueue")
	j := e.enqueueOne(withKey("q", "k1"))
	e.enqueueOne(withKey("q", "k2"))
	e.enqueueOne(req("q", "t"))
	if d := diff(e.get(j.ID), e.findByKey("q", "k1")); d != "" {
		e.t.Fatalf("FindByIdempotencyKey differs from GetJob: %s", d)
	}
	e.requireNoKey("q2", "k1", "of another queue")
	e.requireNoKey("q", "k3", "of a key never used")
	other := e.enqueueOne(withKey("q2", "k1"))
	requireEq(e.t, e.findByKey("q2", "k1").ID, other.ID, "the key's job in the second queue")
	requireEq(e.t, e.findByKey("q", "k1").ID, j.ID, "the key's job in the first queue")
	// Every state holds the key.
	c := e.claimOne("q")
	requireEq(e.t, c.ID, j.ID, "claimed")
	requireEq(e.t, e.findByKey("q", "k1").State, core.StateRunning, "state of the running key holder")
	e.complete(c.Lease, []byte(`"done"`))
	got := e.findByKey("q", "k1")
	requireEq(e.t, got.State, core.StateSucceeded, "state of the finished key holder")
	requireEq(e.t, string(got.Result), `"done"`, "result of the finished key holder")
}

func searchFindByKeyCleanup(e *env) {
	j := e.enqueueClaim(withKey("q", "k"))
	e.complete(j.Lease, nil)
	e.advance(time.Minute)
	requireEq(e.t, e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 10}), 1, "deleted")
	e.requireNoKey("q", "k", "after Cleanup deleted its job")
	again := e.enqueueOne(withKey("q", "k"))
	if again.ID == j.ID {
		e.t.Fatal("enqueue after cleanup returned the deleted job")
	}
	requireEq(e.t, e.findByKey("q", "k").ID, again.ID, "the key's new job")
}

func searchFindByKeyInvalid(e *env) {
	e.enqueueOne(withKey("q", "k"))
	for _, a := range [][2]string{
		{"", "k"}, {"bad queue", "k"}, {"q", ""}, {"q", strings.Repeat("k", core.MaxIdempotencyKeyLength+1)}, {"q", "\xff"},
	} {
		_, err := e.searcher().FindByIdempotencyKey(e.ctx, a[0], a[1])
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("FindByIdempotencyKey(%q, %.40q)", a[0], a[1]))
	}
}

func searchUndeclared(e *env) {
	e.enqueueOne(withKey("q", "k"))
	js, ok := e.b.(core.JobSearcher)
	if !ok {
		return
	}
	_, err := js.SearchJobs(e.ctx, core.JobSearch{HeaderKey: "k"})
	e.requireUnsupported(err, "SearchJobs")
	_, err = js.CountSearch(e.ctx, core.JobSearch{HeaderKey: "k"})
	e.requireUnsupported(err, "CountSearch")
	_, err = js.FindByIdempotencyKey(e.ctx, "q", "k")
	e.requireUnsupported(err, "FindByIdempotencyKey")
}
