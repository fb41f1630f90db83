package sqltest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// OpsBackend is a backend with every operations capability of core.
type OpsBackend interface {
	core.QueueBackend
	core.RunReader
	core.JobSearcher
	core.TaskLister
	core.JobDeleter
}

// OpsEnv opens backends for the operations tests.
type OpsEnv struct {
	// New returns a fresh backend deciding by clock (nil: the store's).
	New func(t *testing.T, clock core.Clock) OpsBackend
	// Rows counts the rows of table ("runs" or "checkpoints") that belong
	// to job jobID in the store behind b.
	Rows func(t *testing.T, b OpsBackend, table, jobID string) int
}

// Ops runs every operations test against env.
func Ops(t *testing.T, env OpsEnv) {
	t.Run("SearchManualClock", func(t *testing.T) { opsSearch(t, env, true) })
	t.Run("SearchStoreClock", func(t *testing.T) { opsSearch(t, env, false) })
	t.Run("SearchValidation", func(t *testing.T) { opsSearchValidation(t, env) })
	t.Run("FindByIdempotencyKey", func(t *testing.T) { opsFindByKey(t, env) })
	t.Run("Runs", func(t *testing.T) { opsRuns(t, env) })
	t.Run("Tasks", func(t *testing.T) { opsTasks(t, env) })
	t.Run("DeleteJob", func(t *testing.T) { opsDeleteJob(t, env) })
	t.Run("DeleteQueue", func(t *testing.T) { opsDeleteQueue(t, env) })
	t.Run("DeleteQueueWhileCompleting", func(t *testing.T) { opsDeleteRace(t, env) })
	t.Run("Closed", func(t *testing.T) { opsClosed(t, env) })
}

// opsClosed checks that every operation fails with ErrClosed after Close.
func opsClosed(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	b := env.New(t, nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	errs := map[string]error{}
	_, errs["GetRun"] = b.GetRun(ctx, "a.1")
	_, errs["ListAllRuns"] = b.ListAllRuns(ctx, core.RunFilter{})
	_, errs["CountRuns"] = b.CountRuns(ctx, core.RunFilter{})
	_, errs["SearchJobs"] = b.SearchJobs(ctx, core.JobSearch{})
	_, errs["CountSearch"] = b.CountSearch(ctx, core.JobSearch{})
	_, errs["FindByIdempotencyKey"] = b.FindByIdempotencyKey(ctx, "q", "k")
	_, errs["ListTasks"] = b.ListTasks(ctx)
	errs["DeleteJob"] = b.DeleteJob(ctx, "a", true)
	_, errs["DeleteQueue"] = b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q", Limit: 1})
	for name, err := range errs {
		wantErr(t, name, err, core.ErrClosed)
	}
}

var opsEpoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// checked holds a result until the test checks its error.
type checked[T any] struct {
	v   T
	err error
}

func try[T any](v T, err error) checked[T] { return checked[T]{v, err} }

// must fails t on the error, else returns the value.
func (c checked[T]) must(t *testing.T) T {
	t.Helper()
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.v
}

func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got %v, want %v", what, err, sentinel)
	}
}

// claimOne claims the one due job of queue.
func claimOne(t *testing.T, b core.QueueBackend, queue string) core.Job {
	t.Helper()
	jobs := try(b.Claim(context.Background(), core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})).must(t)
	if len(jobs) != 1 {
		t.Fatalf("claim of %s: %d jobs, want 1", queue, len(jobs))
	}
	return jobs[0]
}

func complete(t *testing.T, b core.QueueBackend, j core.Job) {
	t.Helper()
	errs := try(b.Complete(context.Background(), []core.Completion{{Lease: j.Lease}})).must(t)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
}

// opsHeaders are header sets whose JSON forms contain each other's keys
// and values as text, so that only whole-key matches are right.
var opsHeaders = []map[string]string{
	{"env": "prod"},
	{"env": "dev", "region": "eu"},
	{"x": `","env":"prod"`},
	{`we"ird,key:{}`: "v\x00al<&>"},
	{"envx": "prod"},
	{"env": "prod,dev"},
	{"a": "env", "env2": ""},
	nil,
	{"x": `{"env":"prod"}`},
	{`"env"`: "prod"},
	{"env": "prodx", "zz": "prod"},
	{"ключ": "значение", "env": "prod"},
	{"e\\": "v\\", "env\\": `prod\`},
	{`x"env`: "prod"},
	{"a,": ":x", "b{": ":x"},
	{":": "v", "b{": ":"},
}

// opsSearch checks SearchJobs and CountSearch against JobSearch.Matches
// over jobs of two queues and tasks in every state, created and finished
// at distinct times (with a manual clock, one of them created after the
// clock went back).
func opsSearch(t *testing.T, env OpsEnv, manual bool) {
	ctx := context.Background()
	var clock *core.ManualClock
	var b OpsBackend
	if manual {
		clock = core.NewManualClock(opsEpoch)
		b = env.New(t, clock)
	} else {
		b = env.New(t, nil)
	}
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	tick := func(d time.Duration) {
		if clock != nil {
			clock.Advance(d)
		} else {
			time.Sleep(2 * time.Millisecond)
		}
	}
	for i, h := range opsHeaders {
		q, task := "qa", "ta"
		if i%2 == 1 {
			q = "qb"
		}
		if i%3 == 2 {
			task = "tb"
		}
		if i == 6 && clock != nil {
			clock.Advance(-10 * time.Second) // created before the jobs before it
		}
		try(b.Enqueue(ctx, []core.EnqueueRequest{{Queue: q, Task: task, Headers: h, MaxAttempts: 1}})).must(t)
		tick(1500 * time.Microsecond)
	}
	if clock != nil {
		clock.Advance(time.Minute) // every job is due
	}
	// Finish some jobs, each at its own time: succeeded, failed, cancelled;
	// leave one running and one sleeping.
	for _, q := range []string{"qa", "qb"} {
		complete(t, b, claimOne(t, b, q))
		tick(time.Second)
		j := claimOne(t, b, q)
		try(b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "boom", Terminal: true})).must(t)
		tick(time.Second)
		j = claimOne(t, b, q)
		try(b.Cancel(ctx, j.ID, "stop")).must(t)
		tick(time.Second)
		j = claimOne(t, b, q)
		if err := b.Sleep(ctx, j.Lease, now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		claimOne(t, b, q)
	}
	all := try(b.ListJobs(ctx, core.JobFilter{Limit: core.MaxPageSize})).must(t).Jobs
	if len(all) != len(opsHeaders) {
		t.Fatalf("%d jobs, want %d", len(all), len(opsHeaders))
	}
	byCreated := slices.Clone(all)
	sort.Slice(byCreated, func(a, c int) bool { return byCreated[a].CreatedAt.Before(byCreated[c].CreatedAt) })
	var finished []core.Job
	for _, j := range all {
		if !j.FinishedAt.IsZero() {
			finished = append(finished, j)
		}
	}
	sort.Slice(finished, func(a, c int) bool { return finished[a].FinishedAt.Before(finished[c].FinishedAt) })
	if len(finished) != 6 {
		t.Fatalf("%d finished jobs, want 6", len(finished))
	}
	c := func(i int) time.Time { return byCreated[i].CreatedAt }
	f := func(i int) time.Time { return finished[i].FinishedAt }
	searches := []core.JobSearch{
		{},
		{HeaderKey: "env"},
		{HeaderKey: "env", HeaderValue: "prod"},
		{HeaderKey: "env", HeaderValue: "dev"},
		{HeaderKey: "env", HeaderValue: "prod,dev"},
		{HeaderKey: "env2"},
		{HeaderKey: "a", HeaderValue: "env"},
		{HeaderKey: `we"ird,key:{}`, HeaderValue: "v\x00al<&>"},
		{HeaderKey: `we"ird,key:{}`, HeaderValue: "v"},
		{HeaderKey: `"env"`},
		{HeaderKey: "ключ", HeaderValue: "значение"},
		{HeaderKey: "e\\", HeaderValue: "v\\"},
		{HeaderKey: "env\\", HeaderValue: `prod\`},
		{HeaderKey: "x", HeaderValue: `{"env":"prod"}`},
		{HeaderKey: "zz"},
		{HeaderKey: ":"},
		{HeaderKey: ":", HeaderValue: "v"},
		{HeaderKey: ":", HeaderValue: "x"},
		{HeaderKey: ":x"},
		{HeaderKey: "b{", HeaderValue: ":x"},
		{HeaderKey: "nope"},
		{HeaderKey: "env", HeaderValue: "prod", JobFilter: core.JobFilter{Queue: "qa"}},
		{HeaderKey: "env", JobFilter: core.JobFilter{Task: "tb", States: []core.JobState{core.StateQueued, core.StateRunning}}},
		{IDPrefix: all[3].ID},
		{IDPrefix: all[3].ID[:20]},
		{IDPrefix: all[0].ID[:10]},
		{IDPrefix: all[0].ID[:10], JobFilter: core.JobFilter{Queue: "qb"}},
		{IDPrefix: "ZZZ"},
		{IDPrefix: "\xff"},
		{IDs: []string{all[1].ID, all[4].ID, "missing", "\xff", all[4].ID}},
		{IDs: []string{"missing"}},
		{IDs: []string{all[1].ID, all[2].ID}, JobFilter: core.JobFilter{States: []core.JobState{core.StateQueued}}},
		{Created: core.TimeRange{From: c(2), To: c(7)}},
		{Created: core.TimeRange{From: c(3).Add(time.Nanosecond)}},
		{Created: core.TimeRange{To: c(4)}},
		{Created: core.TimeRange{To: c(4).Add(time.Nanosecond)}},
		{Created: core.TimeRange{From: c(0), To: c(len(all) - 1).Add(time.Microsecond)}, JobFilter: core.JobFilter{Task: "ta"}},
		{Created: core.TimeRange{From: c(len(all) - 1).Add(time.Hour)}},
		{Finished: core.TimeRange{From: f(1), To: f(4)}},
		{Finished: core.TimeRange{From: f(2).Add(time.Nanosecond)}},
		{Finished: core.TimeRange{To: f(3)}},
		{Finished: core.TimeRange{From: opsEpoch.Add(-time.Hour)}, JobFilter: core.JobFilter{Queue: "qb", States: []core.JobState{core.StateFailed, core.StateQueued}}},
		{Finished: core.TimeRange{From: f(0)}, Created: core.TimeRange{To: c(8)}, HeaderKey: "env"},
	}
	for i, s := range searches {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var want []string
			counts := map[core.JobState]int64{}
			for _, j := range all {
				if s.Matches(j) {
					want = append(want, j.ID)
					counts[j.State]++
				}
			}
			got := try(b.CountSearch(ctx, s)).must(t)
			if !maps.Equal(got, counts) {
				t.Fatalf("search %+v: counts %v, want %v", s, got, counts)
			}
			for _, desc := range []bool{false, true} {
				exp := slices.Clone(want)
				if desc {
					slices.Reverse(exp)
				}
				for _, limit := range []int{0, 1, 3} {
					p := s
					p.Desc, p.Limit = desc, limit
					var ids []string
					for pages := 0; ; pages++ {
						page := try(b.SearchJobs(ctx, p)).must(t)
						for _, j := range page.Jobs {
							ids = append(ids, j.ID)
							if !s.Matches(j) {
								t.Fatalf("search %+v returned %+v, which does not match", s, j)
							}
						}
						if page.Next == "" {
							break
						}
						if pages > len(all) {
							t.Fatal("paging does not end")
						}
						p.Cursor = page.Next
					}
					if !slices.Equal(ids, exp) {
						t.Fatalf("search %+v (desc %v, limit %d): %v, want %v", s, desc, limit, ids, exp)
					}
				}
			}
		})
	}
}

// opsSearchValidation checks that invalid searches are refused.
func opsSearchValidation(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	b := env.New(t, nil)
	now := time.Now()
	bad := map[string]core.JobSearch{
		"value without key": {HeaderValue: "v"},
		"created reversed":  {Created: core.TimeRange{From: now, To: now}},
		"finished reversed": {Finished: core.TimeRange{From: now, To: now.Add(-time.Second)}},
		"limit":             {JobFilter: core.JobFilter{Limit: core.MaxPageSize + 1}},
		"state":             {JobFilter: core.JobFilter{States: []core.JobState{"nope"}}},
		"queue":             {JobFilter: core.JobFilter{Queue: strings.Repeat("q", core.MaxNameLength+1)}},
		"header utf-8":      {HeaderKey: "\xff"},
		"cursor utf-8":      {JobFilter: core.JobFilter{Cursor: "\xff"}},
		"empty id":          {IDs: []string{""}},
		"too many ids":      {IDs: make([]string, core.MaxPageSize+1)},
	}
	for name, s := range bad {
		_, err := b.SearchJobs(ctx, s)
		wantErr(t, "search "+name, err, core.ErrInvalidArgument)
		if name != "limit" && name != "cursor utf-8" {
			_, err = b.CountSearch(ctx, s)
			wantErr(t, "count "+name, err, core.ErrInvalidArgument)
		}
	}
}

// opsFindByKey checks that the holder of a key is found in every state
// and that a deleted holder releases it.
func opsFindByKey(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	b := env.New(t, nil)
	res := try(b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "q", Task: "t", IdempotencyKey: "k1"},
		{Queue: "q", Task: "t", IdempotencyKey: "k2"},
		{Queue: "other", Task: "t", IdempotencyKey: "k1"},
	})).must(t)
	got := try(b.FindByIdempotencyKey(ctx, "q", "k1")).must(t)
	if got.ID != res[0].Job.ID || got.IdempotencyKey != "k1" || got.Queue != "q" {
		t.Fatalf("found %+v, want job %s", got, res[0].Job.ID)
	}
	complete(t, b, claimOne(t, b, "q"))
	complete(t, b, claimOne(t, b, "q"))
	got = try(b.FindByIdempotencyKey(ctx, "q", "k2")).must(t)
	if got.ID != res[1].Job.ID || got.State != core.StateSucceeded {
		t.Fatalf("found %+v, want succeeded job %s", got, res[1].Job.ID)
	}
	if got := try(b.FindByIdempotencyKey(ctx, "other", "k1")).must(t); got.ID != res[2].Job.ID {
		t.Fatalf("found %s in queue other, want %s", got.ID, res[2].Job.ID)
	}
	_, err := b.FindByIdempotencyKey(ctx, "q", "k3")
	wantErr(t, "missing key", err, core.ErrNotFound)
	_, err = b.FindByIdempotencyKey(ctx, "nobody", "k1")
	wantErr(t, "missing queue", err, core.ErrNotFound)
	_, err = b.FindByIdempotencyKey(ctx, "q", "k\x00")
	wantErr(t, "key with NUL", err, core.ErrNotFound)
	if err := b.DeleteJob(ctx, res[0].Job.ID, false); err != nil {
		t.Fatal(err)
	}
	_, err = b.FindByIdempotencyKey(ctx, "q", "k1")
	wantErr(t, "deleted holder", err, core.ErrNotFound)
	_, err = b.FindByIdempotencyKey(ctx, "q", "")
	wantErr(t, "empty key", err, core.ErrInvalidArgument)
	_, err = b.FindByIdempotencyKey(ctx, "", "k1")
	wantErr(t, "empty queue", err, core.ErrInvalidArgument)
	_, err = b.FindByIdempotencyKey(ctx, "q", strings.Repeat("k", core.MaxIdempotencyKeyLength+1))
	wantErr(t, "long key", err, core.ErrInvalidArgument)
}

// opsRuns checks GetRun, ListAllRuns and CountRuns against every job's
// ListRuns: finished runs of each status and open ones, started at
// distinct times.
func opsRuns(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	clock := core.NewManualClock(opsEpoch)
	b := env.New(t, clock)
	// Priorities and run times make each claim below take the job it names.
	type spec struct {
		queue, task string
		priority    int
	}
	specs := []spec{{"qa", "ta", 0}, {"qb", "tb", 0}, {"qa", "tb", 1}, {"qb", "ta", 1}, {"qa", "ta", 2}, {"qc", "tc", 0}}
	jobs := make([]core.Job, len(specs))
	for i, s := range specs {
		req := core.EnqueueRequest{Queue: s.queue, Task: s.task, Priority: s.priority, MaxAttempts: 3}
		if i == 4 {
			req.RunAt = opsEpoch.Add(365 * 24 * time.Hour)
		}
		jobs[i] = try(b.Enqueue(ctx, []core.EnqueueRequest{req})).must(t)[0].Job
	}
	claimTTL := func(i int, ttl time.Duration) core.Job {
		t.Helper()
		clock.Advance(time.Second + 3*time.Microsecond)
		got := try(b.Claim(ctx, core.ClaimRequest{Queue: specs[i].queue, WorkerID: fmt.Sprint("w", i), Limit: 1, LeaseTTL: ttl})).must(t)
		if len(got) != 1 || got[0].ID != jobs[i].ID {
			t.Fatalf("claim for job %d took %+v", i, got)
		}
		return got[0]
	}
	claim := func(i int) core.Job { t.Helper(); return claimTTL(i, time.Minute) }
	// 0: failed, then succeeded. 1: slept, then open. 2: cancelled.
	// 3: lease lost, then open. 4: never claimed. 5: open.
	j := claim(0)
	try(b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "boom"})).must(t)
	complete(t, b, claim(0))
	j = claim(1)
	if err := b.Sleep(ctx, j.Lease, time.Time{}); err != nil {
		t.Fatal(err)
	}
	claim(1)
	claim(2)
	try(b.Cancel(ctx, jobs[2].ID, "stop")).must(t)
	claimTTL(3, time.Second)
	clock.Advance(2 * time.Second)
	try(b.Rescue(ctx, core.RescueRequest{Limit: 10})).must(t)
	claim(3)
	claim(5)

	var all []core.Run
	for i, job := range jobs {
		runs := try(b.ListRuns(ctx, job.ID)).must(t)
		for _, r := range runs {
			r.Queue, r.Task = specs[i].queue, specs[i].task
			all = append(all, r)
		}
	}
	sort.Slice(all, func(a, c int) bool {
		if all[a].JobID != all[c].JobID {
			return all[a].JobID < all[c].JobID
		}
		return all[a].Token < all[c].Token
	})
	statuses := map[core.RunStatus]bool{}
	for _, r := range all {
		statuses[r.Status] = true
		got := try(b.GetRun(ctx, r.ID)).must(t)
		if !runEqual(got, r) {
			t.Fatalf("GetRun(%s) = %+v, want %+v", r.ID, got, r)
		}
	}
	for _, s := range []core.RunStatus{core.RunRunning, core.RunSucceeded, core.RunFailed, core.RunSleeping, core.RunCancelled, core.RunLost} {
		if !statuses[s] {
			t.Fatalf("no run is %s: %+v", s, all)
		}
	}
	_, err := b.GetRun(ctx, core.RunID(jobs[0].ID, 99))
	wantErr(t, "missing token", err, core.ErrNotFound)
	_, err = b.GetRun(ctx, core.RunID(jobs[4].ID, 1))
	wantErr(t, "job without runs", err, core.ErrNotFound)
	_, err = b.GetRun(ctx, core.RunID("missing", 1))
	wantErr(t, "missing job", err, core.ErrNotFound)
	_, err = b.GetRun(ctx, "\xff.1")
	wantErr(t, "job id not UTF-8", err, core.ErrNotFound)
	_, err = b.GetRun(ctx, "no token")
	wantErr(t, "malformed id", err, core.ErrInvalidArgument)

	started := func(i int) time.Time { return all[i].StartedAt }
	filters := []core.RunFilter{
		{},
		{JobID: jobs[0].ID},
		{JobID: jobs[1].ID},
		{JobID: jobs[4].ID},
		{JobID: "missing"},
		{JobID: "\xff"},
		{Queue: "qa"},
		{Task: "tb"},
		{Queue: "qb", Task: "ta"},
		{Statuses: []core.RunStatus{core.RunRunning}},
		{Statuses: []core.RunStatus{core.RunSucceeded, core.RunFailed}},
		{Statuses: []core.RunStatus{core.RunRunning, core.RunCancelled, core.RunLost}},
		{Since: started(3)},
		{Since: started(3).Add(time.Nanosecond)},
		{Before: started(5)},
		{Before: started(5).Add(time.Nanosecond)},
		{Since: started(1), Before: started(6), Queue: "qb"},
		{Since: started(2), Statuses: []core.RunStatus{core.RunRunning}, Task: "tc"},
	}
	for i, f := range filters {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var want []core.Run
			counts := map[core.RunStatus]int64{}
			for _, r := range all {
				if f.Matches(r) {
					want = append(want, r)
					counts[r.Status]++
				}
			}
			got := try(b.CountRuns(ctx, f)).must(t)
			if !maps.Equal(got, counts) {
				t.Fatalf("filter %+v: counts %v, want %v", f, got, counts)
			}
			for _, desc := range []bool{false, true} {
				exp := slices.Clone(want)
				if desc {
					slices.Reverse(exp)
				}
				for _, limit := range []int{0, 1, 2, 5} {
					p := f
					p.Desc, p.Limit = desc, limit
					var runs []core.Run
					for pages := 0; ; pages++ {
						page := try(b.ListAllRuns(ctx, p)).must(t)
						runs = append(runs, page.Runs...)
						if page.Next == "" {
							break
						}
						if pages > len(all) {
							t.Fatal("paging does not end")
						}
						p.Cursor = page.Next
					}
					if !slices.EqualFunc(runs, exp, runEqual) {
						t.Fatalf("filter %+v (desc %v, limit %d):\n got %+v\nwant %+v", f, desc, limit, runs, exp)
					}
				}
			}
		})
	}
	bad := map[string]core.RunFilter{
		"cursor":   {Cursor: "nope"},
		"cursor 2": {Cursor: "\xff.1"},
		"status":   {Statuses: []core.RunStatus{"nope"}},
		"limit":    {Limit: core.MaxPageSize + 1},
		"range":    {Since: opsEpoch, Before: opsEpoch},
		"queue":    {Queue: "\xff"},
	}
	for name, f := range bad {
		_, err := b.ListAllRuns(ctx, f)
		wantErr(t, "list "+name, err, core.ErrInvalidArgument)
	}
	_, err = b.CountRuns(ctx, bad["status"])
	wantErr(t, "count status", err, core.ErrInvalidArgument)
}

func runEqual(a, b core.Run) bool {
	return a.ID == b.ID && a.JobID == b.JobID && a.Queue == b.Queue && a.Task == b.Task && a.Attempt == b.Attempt &&
		a.WorkerID == b.WorkerID && a.Token == b.Token && a.Status == b.Status && a.StartedAt.Equal(b.StartedAt) &&
		a.FinishedAt.Equal(b.FinishedAt) && a.Error == b.Error
}

// opsTasks checks ListTasks: tasks of jobs and of configs, by name.
func opsTasks(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	b := env.New(t, nil)
	if got := try(b.ListTasks(ctx)).must(t); len(got) != 0 {
		t.Fatalf("tasks of an empty store: %+v", got)
	}
	try(b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "tb"}, {Queue: "q", Task: "ta"}, {Queue: "q2", Task: "ta"}})).must(t)
	complete(t, b, claimOne(t, b, "q2"))
	for _, task := range []string{"tc", "ta"} {
		if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: task, MaxAttempts: 3}); err != nil {
			t.Fatal(err)
		}
	}
	got := try(b.ListTasks(ctx)).must(t)
	want := []core.TaskInfo{
		{Name: "ta", Counts: map[core.JobState]int64{core.StateQueued: 1, core.StateSucceeded: 1}, HasConfig: true},
		{Name: "tb", Counts: map[core.JobState]int64{core.StateQueued: 1}},
		{Name: "tc", HasConfig: true},
	}
	if !slices.EqualFunc(got, want, func(a, b core.TaskInfo) bool {
		return a.Name == b.Name && a.HasConfig == b.HasConfig && maps.Equal(nonZero(a.Counts), nonZero(b.Counts))
	}) {
		t.Fatalf("tasks %+v, want %+v", got, want)
	}
}

// nonZero drops the zero counts of m, which a backend may report or omit.
func nonZero[K comparable](m map[K]int64) map[K]int64 {
	m = maps.Clone(m)
	maps.DeleteFunc(m, func(_ K, v int64) bool { return v == 0 })
	return m
}

// leftRows fails t when job id still has rows anywhere.
func leftRows(t *testing.T, env OpsEnv, b OpsBackend, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.GetJob(ctx, id); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("job %s after deletion: %v", id, err)
	}
	for _, table := range []string{"runs", "checkpoints"} {
		if n := env.Rows(t, b, table, id); n != 0 {
			t.Fatalf("job %s left %d rows in %s", id, n, table)
		}
	}
	if n := try(b.CountRuns(ctx, core.RunFilter{JobID: id})).must(t); len(n) != 0 {
		t.Fatalf("job %s left runs %v", id, n)
	}
}

// fencedCallsLost checks that every fenced call on lease fails with
// ErrLeaseLost.
func fencedCallsLost(t *testing.T, b core.QueueBackend, lease core.Lease) {
	t.Helper()
	ctx := context.Background()
	_, err := b.Heartbeat(ctx, lease, time.Minute)
	wantErr(t, "heartbeat", err, core.ErrLeaseLost)
	_, err = b.SaveCheckpoint(ctx, lease, "s2", []byte("v"))
	wantErr(t, "checkpoint", err, core.ErrLeaseLost)
	_, err = b.Fail(ctx, core.Failure{Lease: lease, Error: "x"})
	wantErr(t, "fail", err, core.ErrLeaseLost)
	wantErr(t, "sleep", b.Sleep(ctx, lease, time.Time{}), core.ErrLeaseLost)
	errs := try(b.Complete(ctx, []core.Completion{{Lease: lease}})).must(t)
	wantErr(t, "complete", errs[0], core.ErrLeaseLost)
}

// opsDeleteJob checks DeleteJob on queued, finished and running jobs.
func opsDeleteJob(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	b := env.New(t, nil)
	res := try(b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "q", Task: "t", IdempotencyKey: "k", Payload: []byte("one")},
		{Queue: "q", Task: "t"},
		{Queue: "q", Task: "t"},
	})).must(t)
	// Job 0 gets a failed run and a checkpoint, and is queued again.
	j := claimOne(t, b, "q")
	try(b.SaveCheckpoint(ctx, j.Lease, "s", []byte("v"))).must(t)
	try(b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "again"})).must(t)
	if n := env.Rows(t, b, "runs", j.ID); n != 1 {
		t.Fatalf("%d runs before deletion, want 1", n)
	}
	if err := b.DeleteJob(ctx, j.ID, false); err != nil {
		t.Fatal(err)
	}
	leftRows(t, env, b, j.ID)
	wantErr(t, "second deletion", b.DeleteJob(ctx, j.ID, false), core.ErrNotFound)
	again := try(b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", IdempotencyKey: "k", Payload: []byte("one")}})).must(t)
	if again[0].Reused || again[0].Job.ID == res[0].Job.ID {
		t.Fatalf("the key of a deleted job still holds: %+v", again[0])
	}

	// Job 1 runs, with a checkpoint: refused without force, then forced.
	j = claimOne(t, b, "q")
	if j.ID != res[1].Job.ID {
		t.Fatalf("claimed %s, want %s", j.ID, res[1].Job.ID)
	}
	try(b.SaveCheckpoint(ctx, j.Lease, "s", []byte("v"))).must(t)
	wantErr(t, "running without force", b.DeleteJob(ctx, j.ID, false), core.ErrInvalidState)
	if got := try(b.GetJob(ctx, j.ID)).must(t); got.State != core.StateRunning || got.Lease.Token != j.Lease.Token {
		t.Fatalf("refused deletion changed the job: %+v", got)
	}
	if err := b.DeleteJob(ctx, j.ID, true); err != nil {
		t.Fatal(err)
	}
	fencedCallsLost(t, b, j.Lease)
	leftRows(t, env, b, j.ID)

	// Job 2 finished: deleted without force, as force would.
	j = claimOne(t, b, "q")
	complete(t, b, j)
	if err := b.DeleteJob(ctx, j.ID, true); err != nil {
		t.Fatal(err)
	}
	leftRows(t, env, b, j.ID)
	if n := try(b.CountJobs(ctx, core.JobFilter{})).must(t); n[core.StateQueued] != 1 || len(nonZero(n)) != 1 {
		t.Fatalf("jobs left %v, want the re-enqueued one", n)
	}

	wantErr(t, "missing", b.DeleteJob(ctx, "missing", false), core.ErrNotFound)
	wantErr(t, "invalid utf-8", b.DeleteJob(ctx, "\xff", true), core.ErrNotFound)
	wantErr(t, "empty id", b.DeleteJob(ctx, "", false), core.ErrInvalidArgument)
	wantErr(t, "long id", b.DeleteJob(ctx, strings.Repeat("x", core.MaxNameLength+1), false), core.ErrInvalidArgument)
}

// opsDeleteQueue checks DeleteQueue step by step: jobs in every state,
// the queue's config last, other queues and task configs untouched.
func opsDeleteQueue(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	b := env.New(t, nil)
	try(b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "dq", Task: "t", IdempotencyKey: "k"}, {Queue: "dq", Task: "t"}, {Queue: "dq", Task: "t"},
		{Queue: "dq", Task: "t"}, {Queue: "dq", Task: "t", RunAt: time.Now().Add(time.Hour)},
		{Queue: "keep", Task: "t", IdempotencyKey: "k"}, {Queue: "keep", Task: "t"},
	})).must(t)
	complete(t, b, claimOne(t, b, "dq"))
	sleeper := claimOne(t, b, "dq")
	try(b.SaveCheckpoint(ctx, sleeper.Lease, "s", nil)).must(t)
	if err := b.Sleep(ctx, sleeper.Lease, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	running := claimOne(t, b, "dq")
	try(b.SaveCheckpoint(ctx, running.Lease, "s", []byte("v"))).must(t)
	keeper := claimOne(t, b, "keep")
	if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "dq", Paused: true, RetentionTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxAttempts: 4}); err != nil {
		t.Fatal(err)
	}
	all := try(b.ListJobs(ctx, core.JobFilter{Queue: "dq"})).must(t).Jobs
	if len(all) != 5 {
		t.Fatalf("%d jobs in dq, want 5", len(all))
	}

	for i, want := range []core.DeleteQueueResult{{Deleted: 2}, {Deleted: 2}, {Deleted: 1, Done: true}} {
		got := try(b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "dq", Limit: 2})).must(t)
		if got != want {
			t.Fatalf("step %d: %+v, want %+v", i, got, want)
		}
	}
	for _, j := range all {
		leftRows(t, env, b, j.ID)
	}
	fencedCallsLost(t, b, running.Lease)
	cfg := try(b.GetQueueConfig(ctx, "dq")).must(t)
	if cfg.Paused || cfg.RetentionTTL != 0 {
		t.Fatalf("config of the deleted queue: %+v", cfg)
	}
	if tc := try(b.GetTaskConfig(ctx, "t")).must(t); tc.MaxAttempts != 4 {
		t.Fatalf("task config %+v, want it kept", tc)
	}
	if n := try(b.CountJobs(ctx, core.JobFilter{Queue: "keep"})).must(t); n[core.StateQueued] != 1 || n[core.StateRunning] != 1 {
		t.Fatalf("queue keep: %v", n)
	}
	if _, err := b.Heartbeat(ctx, keeper.Lease, time.Minute); err != nil {
		t.Fatalf("lease of another queue: %v", err)
	}
	if got := try(b.FindByIdempotencyKey(ctx, "keep", "k")).must(t); got.Queue != "keep" {
		t.Fatalf("key of queue keep: %+v", got)
	}
	_, err := b.FindByIdempotencyKey(ctx, "dq", "k")
	wantErr(t, "key of the deleted queue", err, core.ErrNotFound)

	// A queue of exactly Limit jobs is done one step later; a queue with
	// no job is done at once.
	try(b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "dq", Task: "t"}, {Queue: "dq", Task: "t"}})).must(t)
	for i, want := range []core.DeleteQueueResult{{Deleted: 2}, {Done: true}, {Done: true}} {
		got := try(b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "dq", Limit: 2})).must(t)
		if got != want {
			t.Fatalf("second round, step %d: %+v, want %+v", i, got, want)
		}
	}
	for name, req := range map[string]core.DeleteQueueRequest{
		"zero limit": {Queue: "dq"},
		"big limit":  {Queue: "dq", Limit: core.DefaultLimits.MaxBatch + 1},
		"no queue":   {Limit: 1},
		"bad queue":  {Queue: "\xff", Limit: 1},
	} {
		_, err := b.DeleteQueue(ctx, req)
		wantErr(t, name, err, core.ErrInvalidArgument)
	}
}

// opsDeleteRace deletes a queue while workers complete its jobs: every
// completion either landed before its job was deleted or fails with
// ErrLeaseLost, and nothing of the queue is left.
func opsDeleteRace(t *testing.T, env OpsEnv) {
	ctx := context.Background()
	b := env.New(t, nil)
	const n = 200
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "race", Task: "t"}
	}
	try(b.Enqueue(ctx, reqs)).must(t)
	jobs := try(b.Claim(ctx, core.ClaimRequest{Queue: "race", WorkerID: "w", Limit: n, LeaseTTL: time.Minute})).must(t)
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(jobs); i += 4 {
				res, err := b.Complete(ctx, []core.Completion{{Lease: jobs[i].Lease}})
				if err == nil {
					err = res[0]
				}
				errs[i] = err
			}
		}()
	}
	steps := 0
	for {
		res := try(b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "race", Limit: 7})).must(t)
		steps++
		if res.Done {
			break
		}
		if steps > 10*n {
			t.Fatal("deletion does not end")
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("completion %d: %v", i, err)
		}
		leftRows(t, env, b, jobs[i].ID)
	}
	if got := try(b.CountJobs(ctx, core.JobFilter{Queue: "race"})).must(t); len(nonZero(got)) != 0 {
		t.Fatalf("jobs left: %v", got)
	}
}
