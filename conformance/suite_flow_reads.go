package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testFlowReads: the flow fields of a job read back as stored everywhere,
// JobSearch.LimitKey and SequenceKey select exactly, RunningByKey counts
// running jobs by key, and invalid flow input is refused with
// ErrInvalidArgument, storing nothing.
func testFlowReads(t *testing.T, h Harness) {
	cs := map[string]func(e *env){
		"FieldsRoundTrip":        flowFieldsRoundTrip,
		"ConfigRoundTrip":        flowConfigRoundTrip,
		"RunningByKey":           flowRunningByKey,
		"RunningByKeyLimit":      flowRunningByKeyLimit,
		"RunningByKeyValidation": flowRunningByKeyValidation,
		"InvalidRequests":        flowInvalidRequests,
		"InvalidConfigs":         flowInvalidConfigs,
	}
	if h.Capabilities.Search {
		cs["SearchByKeys"] = flowSearchByKeys
		cs["SearchInvalidKeys"] = flowSearchInvalid
	}
	cases(t, h, flowCases(h, cs))
}

// flowFields is the part of a job the flow fields make up.
type flowFields struct {
	Unique       core.UniqueMode
	UniquePeriod time.Duration
	LimitKey     string
	SequenceKey  string
}

func fieldsOf(j core.Job) flowFields {
	return flowFields{j.Unique, j.UniquePeriod, j.LimitKey, j.SequenceKey}
}

func fieldsOfReq(r core.EnqueueRequest) flowFields {
	return flowFields{r.Unique, r.UniquePeriod, r.LimitKey, r.SequenceKey}
}

func flowFieldsRoundTrip(e *env) {
	full := keyed("q", "k-full", "full")
	full.Unique, full.UniquePeriod = core.UniqueByPeriod, 90*time.Minute
	full.LimitKey, full.SequenceKey = "tenant-1", "order_42"
	act := keyed("q", "k-active", "active")
	act.Unique, act.LimitKey = core.UniqueWhileActive, strings.Repeat("L", core.MaxNameLength)
	seq := req("q", "t")
	seq.SequenceKey = strings.Repeat("s", core.MaxNameLength)
	plain := req("q", "t")
	reqs := []core.EnqueueRequest{full, act, seq, plain}
	jobs := e.enqueue(reqs...)
	want := map[string]flowFields{}
	for i, j := range jobs {
		w := fieldsOfReq(reqs[i])
		want[j.ID] = w
		if got := fieldsOf(j); got != w {
			e.t.Fatalf("Enqueue's job %d: flow fields %+v, want %+v", i, got, w)
		}
		if got := fieldsOf(e.get(j.ID)); got != w {
			e.t.Fatalf("GetJob of job %d: flow fields %+v, want %+v", i, got, w)
		}
	}
	check := func(what string, js []core.Job) {
		e.t.Helper()
		if len(js) != len(want) {
			e.t.Fatalf("%s listed %d jobs, want %d", what, len(js), len(want))
		}
		for _, j := range js {
			if got := fieldsOf(j); got != want[j.ID] {
				e.t.Fatalf("%s: job %s has flow fields %+v, want %+v", what, j.ID, got, want[j.ID])
			}
		}
	}
	check("ListJobs", e.list(core.JobFilter{Queue: "q"}).Jobs)
	if e.h.Capabilities.Search {
		check("SearchJobs", e.searchAll(core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}, nil))
	}
	res := e.enqueueResult(full)
	if !res.Reused || fieldsOf(res.Job) != fieldsOfReq(full) {
		e.t.Fatalf("a reused enqueue returned %+v (reused %v), want the stored fields %+v", fieldsOf(res.Job), res.Reused, fieldsOfReq(full))
	}
	claimed := e.claim("q", 10)
	check("Claim", claimed)
	for _, c := range claimed {
		e.complete(c.Lease, nil)
	}
	check("ListJobs after completion", e.list(core.JobFilter{Queue: "q"}).Jobs)
}

func flowConfigRoundTrip(e *env) {
	tc := core.TaskConfig{Task: "t", MaxRunning: 7, MaxRunningPerKey: 3, MaxStartsPerSecond: core.MaxFlowLimit,
		MaxStartsPerSecondPerKey: 2, HoldSequenceOnFailure: true, MaxInFlight: 100}
	e.putTaskConfig(tc)
	got, err := e.b.GetTaskConfig(e.ctx, "t")
	if err != nil {
		e.t.Fatalf("GetTaskConfig: %v", err)
	}
	if d := diff(tc, got); d != "" {
		e.t.Fatalf("task config round trip: %s", d)
	}
	qc := core.QueueConfig{Queue: "q", MaxRunning: 5}
	e.putQueueConfig(qc)
	gq, err := e.b.GetQueueConfig(e.ctx, "q")
	if err != nil {
		e.t.Fatalf("GetQueueConfig: %v", err)
	}
	if d := diff(qc, gq); d != "" {
		e.t.Fatalf("queue config round trip: %s", d)
	}
	e.putTaskConfig(core.TaskConfig{Task: "t"})
	got, _ = e.b.GetTaskConfig(e.ctx, "t")
	if got.UsesFlowControl() {
		e.t.Fatalf("a config stored without limits reads back with %+v", got)
	}
}

func flowSearchByKeys(e *env) {
	type spec struct{ limit, seq string }
	specs := []spec{{"a", ""}, {"ab", ""}, {"A", ""}, {"a", "s"}, {"", "s"}, {"", "s2"}, {"b", "s"}, {"", ""}, {"a", ""}}
	var jobs []core.Job
	for i, s := range specs {
		r := named(req([]string{"q", "q2"}[i%2], "t"), fmt.Sprint(i))
		r.LimitKey, r.SequenceKey = s.limit, s.seq
		jobs = append(jobs, e.enqueueOne(r))
	}
	// A running and a failed job must match by state too.
	c := e.claim("q", 1)
	e.fail(core.Failure{Lease: c[0].Lease, Error: "x", Terminal: true})
	e.claim("q2", 1)
	for _, s := range []core.JobSearch{
		{LimitKey: "a"}, {LimitKey: "A"}, {LimitKey: "ab"}, {LimitKey: "b"}, {LimitKey: "none"},
		{SequenceKey: "s"}, {SequenceKey: "s2"}, {SequenceKey: "S"},
		{LimitKey: "a", SequenceKey: "s"}, {LimitKey: "b", SequenceKey: "s2"},
		{LimitKey: "a", JobFilter: core.JobFilter{Queue: "q"}},
		{SequenceKey: "s", JobFilter: core.JobFilter{States: []core.JobState{core.StateQueued}}},
	} {
		var want []string
		counts := map[core.JobState]int64{}
		for _, j := range jobs {
			j = e.get(j.ID)
			if (s.LimitKey == "" || j.LimitKey == s.LimitKey) && (s.SequenceKey == "" || j.SequenceKey == s.SequenceKey) &&
				(s.Queue == "" || j.Queue == s.Queue) && (len(s.States) == 0 || slices.Contains(s.States, j.State)) {
				want = append(want, j.ID)
				counts[j.State]++
			}
		}
		slices.Sort(want)
		s.Limit = 2
		got := ids(e.searchAll(s, nil))
		if !slices.Equal(got, want) {
			e.t.Fatalf("SearchJobs(limit key %q, sequence key %q, queue %q) = %v, want %v", s.LimitKey, s.SequenceKey, s.Queue, got, want)
		}
		if d := diff(counts, e.countSearch(s)); d != "" {
			e.t.Fatalf("CountSearch(limit key %q, sequence key %q): %s", s.LimitKey, s.SequenceKey, d)
		}
	}
}

func flowSearchInvalid(e *env) {
	e.enqueueOne(lreq("q", "t", "a"))
	for _, s := range []core.JobSearch{{LimitKey: "a b"}, {SequenceKey: "-s"}, {LimitKey: strings.Repeat("x", core.MaxNameLength+1)}} {
		_, err := e.searcher().SearchJobs(e.ctx, s)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("SearchJobs(limit key %q, sequence key %q)", s.LimitKey, s.SequenceKey))
		_, err = e.searcher().CountSearch(e.ctx, s)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("CountSearch(limit key %q, sequence key %q)", s.LimitKey, s.SequenceKey))
	}
}

// runningFixture runs jobs of task t by key: a×3, b×1, c×3, d×2, e×2
// of which one sleeps, two unkeyed, and a×5 of task u; queued jobs of
// key z stay queued.
func runningFixture(e *env) {
	e.t.Helper()
	for _, k := range []struct {
		key string
		n   int
	}{{"a", 3}, {"b", 1}, {"c", 3}, {"d", 2}, {"e", 2}, {"", 2}} {
		for i := range k.n {
			e.enqueueOne(lreq([]string{"q", "q2"}[i%2], "t", k.key))
		}
	}
	for range 5 {
		e.enqueueOne(lreq("q", "u", "a"))
	}
	var sleeper core.Lease
	for _, q := range []string{"q", "q2"} {
		for _, j := range e.claim(q, 100) {
			if j.LimitKey == "e" && sleeper.JobID == "" {
				sleeper = j.Lease
			}
		}
	}
	e.sleepJob(sleeper, time.Hour)
	e.enqueue(lreq("q", "t", "z"), lreq("q2", "t", "z"))
}

func flowRunningByKey(e *env) {
	requireKeyCounts(e.t, e.runningByKey("t", 0), nil, "RunningByKey with nothing running")
	runningFixture(e)
	want := []core.KeyCount{{Key: "a", Running: 3}, {Key: "c", Running: 3}, {Key: "d", Running: 2}, {Key: "b", Running: 1}, {Key: "e", Running: 1}}
	requireKeyCounts(e.t, e.runningByKey("t", 0), want, "RunningByKey(t)")
	requireKeyCounts(e.t, e.runningByKey("u", 0), []core.KeyCount{{Key: "a", Running: 5}}, "RunningByKey(u)")
	requireKeyCounts(e.t, e.runningByKey("nobody", 0), nil, "RunningByKey of an unknown task")

	// Finishing jobs moves the counts: d drops to 0 and leaves the list.
	for _, j := range e.list(core.JobFilter{Task: "t", States: []core.JobState{core.StateRunning}, Limit: core.MaxPageSize}).Jobs {
		switch j.LimitKey {
		case "d":
			e.complete(j.Lease, nil)
		case "c":
			if j.Queue == "q" {
				e.cancel(j.ID, "")
			}
		}
	}
	want = []core.KeyCount{{Key: "a", Running: 3}, {Key: "b", Running: 1}, {Key: "c", Running: 1}, {Key: "e", Running: 1}}
	requireKeyCounts(e.t, e.runningByKey("t", 0), want, "RunningByKey(t) after completing d and cancelling two of c")
}

func flowRunningByKeyLimit(e *env) {
	runningFixture(e)
	requireKeyCounts(e.t, e.runningByKey("t", 2), []core.KeyCount{{Key: "a", Running: 3}, {Key: "c", Running: 3}}, "RunningByKey(t, 2)")
	requireKeyCounts(e.t, e.runningByKey("t", 4), []core.KeyCount{{Key: "a", Running: 3}, {Key: "c", Running: 3}, {Key: "d", Running: 2}, {Key: "b", Running: 1}}, "RunningByKey(t, 4)")
	requireEq(e.t, len(e.runningByKey("t", core.MaxPageSize)), 5, "groups with the largest limit")

	// More keys than the default page: the default limit applies.
	n := core.DefaultPageSize + 5
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = lreq("qm", "many", fmt.Sprintf("k%03d", i))
	}
	e.enqueue(reqs...)
	requireEq(e.t, len(e.claim("qm", n)), n, "claimed")
	got := e.runningByKey("many", 0)
	requireEq(e.t, len(got), core.DefaultPageSize, "groups with limit 0 (the default page size)")
	for i, kc := range got {
		requireEq(e.t, kc, core.KeyCount{Key: fmt.Sprintf("k%03d", i), Running: 1}, "ties ordered by key")
	}
}

func flowRunningByKeyValidation(e *env) {
	for _, c := range []struct {
		task  string
		limit int
	}{{"", 0}, {"a b", 0}, {"t", -1}, {"t", core.MaxPageSize + 1}} {
		_, err := e.flow().RunningByKey(e.ctx, c.task, c.limit)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("RunningByKey(%q, %d)", c.task, c.limit))
	}
}

func flowInvalidRequests(e *env) {
	withKey := func(mut func(r *core.EnqueueRequest)) core.EnqueueRequest {
		r := keyed("q", "k", "p")
		mut(&r)
		return r
	}
	bad := map[string]core.EnqueueRequest{
		"limit key with a space":      withKey(func(r *core.EnqueueRequest) { r.LimitKey = "a b" }),
		"limit key too long":          withKey(func(r *core.EnqueueRequest) { r.LimitKey = strings.Repeat("k", core.MaxNameLength+1) }),
		"limit key starting with '-'": withKey(func(r *core.EnqueueRequest) { r.LimitKey = "-a" }),
		"sequence key with a dot":     withKey(func(r *core.EnqueueRequest) { r.SequenceKey = "a.b" }),
		"sequence key too long":       withKey(func(r *core.EnqueueRequest) { r.SequenceKey = strings.Repeat("s", core.MaxNameLength+1) }),
		"unknown unique mode":         withKey(func(r *core.EnqueueRequest) { r.Unique = "forever" }),
		"while active without a key": withKey(func(r *core.EnqueueRequest) {
			r.Unique, r.IdempotencyKey = core.UniqueWhileActive, ""
		}),
		"by period without a period": withKey(func(r *core.EnqueueRequest) { r.Unique = core.UniqueByPeriod }),
		"by period under a second": withKey(func(r *core.EnqueueRequest) {
			r.Unique, r.UniquePeriod = core.UniqueByPeriod, 999*time.Millisecond
		}),
		"by period too long": withKey(func(r *core.EnqueueRequest) {
			r.Unique, r.UniquePeriod = core.UniqueByPeriod, core.MaxUniquePeriod+time.Second
		}),
		"negative period": withKey(func(r *core.EnqueueRequest) {
			r.Unique, r.UniquePeriod = core.UniqueByPeriod, -time.Hour
		}),
		"period without by period": withKey(func(r *core.EnqueueRequest) { r.UniquePeriod = time.Hour }),
		"period in while active": withKey(func(r *core.EnqueueRequest) {
			r.Unique, r.UniquePeriod = core.UniqueWhileActive, time.Hour
		}),
	}
	for _, name := range sortedKeys(bad) {
		// Alone and beside a valid item: the whole batch is refused.
		for _, batch := range [][]core.EnqueueRequest{{bad[name]}, {lreq("q", "t", "ok"), bad[name]}} {
			_, err := e.b.Enqueue(e.ctx, batch)
			requireErr(e.t, err, core.ErrInvalidArgument, "Enqueue with "+name)
			requireNamesField(e.t, err, requestField(name), "Enqueue with "+name)
		}
	}
	requireEq(e.t, e.total(), 0, "jobs stored after invalid requests")
	e.requireHolder("q", "k", core.Job{}, "no invalid request took the key")
}

func flowInvalidConfigs(e *env) {
	bad := map[string]core.TaskConfig{
		"negative max running":             {Task: "t", MaxRunning: -1},
		"absurd max running":               {Task: "t", MaxRunning: core.MaxFlowLimit + 1},
		"negative max running per key":     {Task: "t", MaxRunningPerKey: -1},
		"absurd max running per key":       {Task: "t", MaxRunningPerKey: core.MaxFlowLimit + 1},
		"negative starts per second":       {Task: "t", MaxStartsPerSecond: -5},
		"absurd starts per second":         {Task: "t", MaxStartsPerSecond: 1 << 40},
		"negative starts per second a key": {Task: "t", MaxStartsPerSecondPerKey: -1},
		"absurd starts per second a key":   {Task: "t", MaxStartsPerSecondPerKey: core.MaxFlowLimit + 1},
	}
	for _, name := range sortedKeys(bad) {
		err := e.b.PutTaskConfig(e.ctx, bad[name])
		requireErr(e.t, err, core.ErrInvalidArgument, "PutTaskConfig with "+name)
		requireNamesField(e.t, err, "max_", "PutTaskConfig with "+name)
	}
	_, err := e.b.GetTaskConfig(e.ctx, "t")
	requireErr(e.t, err, core.ErrNotFound, "GetTaskConfig after only invalid puts")

	// An invalid put leaves the stored config as it was.
	good := core.TaskConfig{Task: "t", MaxRunning: 2}
	e.putTaskConfig(good)
	requireErr(e.t, e.b.PutTaskConfig(e.ctx, core.TaskConfig{Task: "t", MaxRunning: -2}), core.ErrInvalidArgument, "PutTaskConfig over a stored config")
	got, err := e.b.GetTaskConfig(e.ctx, "t")
	if err != nil || diff(good, got) != "" {
		e.t.Fatalf("GetTaskConfig after a refused put = %+v, %v; want %+v", got, err, good)
	}

	for _, n := range []int{-1, core.MaxFlowLimit + 1} {
		requireErr(e.t, e.b.PutQueueConfig(e.ctx, core.QueueConfig{Queue: "q", MaxRunning: n}), core.ErrInvalidArgument, fmt.Sprintf("PutQueueConfig with MaxRunning %d", n))
	}
	qc, err := e.b.GetQueueConfig(e.ctx, "q")
	if err != nil {
		e.t.Fatalf("GetQueueConfig: %v", err)
	}
	requireEq(e.t, qc.MaxRunning, 0, "queue MaxRunning after refused puts")
}

// requestField is the field an invalid request case names in its error.
func requestField(name string) string {
	switch {
	case strings.HasPrefix(name, "limit key"):
		return "limit_key"
	case strings.HasPrefix(name, "sequence key"):
		return "sequence_key"
	case strings.Contains(name, "period"):
		return "unique_period"
	default:
		return "unique"
	}
}

// requireNamesField fails unless err's message names the field, so that a
// caller can tell what to fix.
func requireNamesField(t testing.TB, err error, field, what string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), field) {
		t.Fatalf("%s: the error %q does not name the field %q", what, err, field)
	}
}
