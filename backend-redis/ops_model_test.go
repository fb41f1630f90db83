package redisq

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// opsWorld is a set of jobs in every state over three queues and three
// tasks, some with several runs, headers and keys, made with a clock that
// moves a second between phases; ref holds every job and run as GetJob and
// ListRuns report them, for the reference Matches functions.
type opsWorld struct {
	jobs  map[string]core.Job
	runs  []core.Run
	times []time.Time // the clock at each phase
}

func buildOpsWorld(t *testing.T, b *Backend, clock *core.ManualClock) *opsWorld {
	t.Helper()
	ctx := context.Background()
	w := &opsWorld{jobs: map[string]core.Job{}}
	tick := func() {
		clock.Advance(time.Second)
		w.times = append(w.times, clock.Now())
	}
	queues := []string{"q1", "q2", "q3"}
	tasks := []string{"a", "b", "c"}
	for round := range 3 {
		tick()
		var reqs []core.EnqueueRequest
		for i := range 20 {
			r := core.EnqueueRequest{Queue: queues[(i+round)%3], Task: tasks[i%3], MaxAttempts: 3, Payload: []byte("p" + itoa(int64(i)))}
			switch i % 4 {
			case 0:
				r.Headers = map[string]string{"h": "x"}
			case 1:
				r.Headers = map[string]string{"h": "y", "o": ""}
			case 2:
				r.IdempotencyKey = "key-" + itoa(int64(round*20+i))
			}
			reqs = append(reqs, r)
		}
		if _, err := b.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	tick()
	var running []core.Job
	for _, q := range queues {
		running = append(running, b.mustClaim(t, q, 12)...)
	}
	tick()
	// complete 10, fail 10 (queued again), sleep 4, cancel 3, leave the rest
	for i, j := range running {
		switch {
		case i < 10:
			if _, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease, Result: []byte("r")}}); err != nil {
				t.Fatal(err)
			}
		case i < 20:
			if _, err := b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "boom"}); err != nil {
				t.Fatal(err)
			}
		case i < 24:
			if err := b.Sleep(ctx, j.Lease, clock.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		case i < 27:
			if _, err := b.Cancel(ctx, j.ID, "stop"); err != nil {
				t.Fatal(err)
			}
		}
	}
	tick()
	// second runs of the failed jobs, first runs of the rest
	for _, q := range queues {
		for n, j := range b.mustClaim(t, q, 12) {
			switch n % 3 {
			case 0:
				if _, err := b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "again", Terminal: true}); err != nil {
					t.Fatal(err)
				}
			case 1:
				if _, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	tick()
	for _, q := range queues {
		f := core.JobFilter{Queue: q, Limit: core.MaxPageSize}
		for {
			page, err := b.ListJobs(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range page.Jobs {
				w.jobs[j.ID] = j
				runs, err := b.ListRuns(ctx, j.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range runs {
					r.Queue, r.Task = j.Queue, j.Task
					w.runs = append(w.runs, r)
				}
			}
			if page.Next == "" {
				break
			}
			f.Cursor = page.Next
		}
	}
	slices.SortFunc(w.runs, func(a, b core.Run) int {
		return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.Token, b.Token))
	})
	if len(w.jobs) != 60 || len(w.runs) < 40 {
		t.Fatalf("world has %d jobs and %d runs", len(w.jobs), len(w.runs))
	}
	return w
}

// searches returns searches that exercise every field.
func (w *opsWorld) searches() []core.JobSearch {
	ids := slices.Sorted(maps.Keys(w.jobs))
	t := w.times
	return []core.JobSearch{
		{},
		{JobFilter: core.JobFilter{Queue: "q1"}},
		{JobFilter: core.JobFilter{Task: "a"}},
		{JobFilter: core.JobFilter{States: []core.JobState{core.StateSucceeded, core.StateFailed}}},
		{JobFilter: core.JobFilter{Task: "b", States: []core.JobState{core.StateQueued, core.StateRunning}}},
		{HeaderKey: "h"},
		{HeaderKey: "h", HeaderValue: "x", JobFilter: core.JobFilter{Queue: "q2"}},
		{HeaderKey: "o"},
		{IDPrefix: ids[17][:25]},
		{IDPrefix: ids[40][:24], JobFilter: core.JobFilter{States: []core.JobState{core.StateRunning, core.StateQueued}}},
		{IDs: []string{ids[3], ids[9], ids[30], ids[59], "01ARZ3NDEKTSV4RRFFQ69G5FAV"}},
		{IDs: []string{ids[3], ids[9], ids[30]}, JobFilter: core.JobFilter{Queue: "q3"}},
		{Created: core.TimeRange{From: t[1], To: t[2]}},
		{Created: core.TimeRange{From: t[2]}, JobFilter: core.JobFilter{Task: "c"}},
		{Finished: core.TimeRange{From: t[4]}},
		{Finished: core.TimeRange{To: t[6]}, JobFilter: core.JobFilter{States: []core.JobState{core.StateFailed, core.StateQueued}}},
		{Finished: core.TimeRange{From: t[0]}, JobFilter: core.JobFilter{States: []core.JobState{core.StateQueued}}},
		{Finished: core.TimeRange{From: t[4], To: t[5]}, HeaderKey: "h", JobFilter: core.JobFilter{Task: "a"}},
	}
}

func (w *opsWorld) wantJobs(s core.JobSearch) []string {
	var out []string
	for id, j := range w.jobs {
		if s.Matches(j) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	if s.Desc {
		slices.Reverse(out)
	}
	return out
}

func (w *opsWorld) runFilters() []core.RunFilter {
	ids := slices.Sorted(maps.Keys(w.jobs))
	var twice string
	for _, r := range w.runs {
		if r.Token == 2 {
			twice = r.JobID
		}
	}
	t := w.times
	return []core.RunFilter{
		{},
		{Queue: "q2"},
		{Task: "b"},
		{JobID: twice},
		{JobID: ids[59]},
		{JobID: twice, Queue: "q1"},
		{Statuses: []core.RunStatus{core.RunFailed}},
		{Statuses: []core.RunStatus{core.RunRunning}},
		{Statuses: []core.RunStatus{core.RunRunning}, Task: "a"},
		{Statuses: []core.RunStatus{core.RunSucceeded, core.RunSleeping, core.RunCancelled}, Queue: "q3"},
		{Since: t[4]},
		{Before: t[4]},
		{Since: t[3], Before: t[4], Task: "c"},
	}
}

func (w *opsWorld) wantRuns(f core.RunFilter) []core.Run {
	var out []core.Run
	for _, r := range w.runs {
		if f.Matches(r) {
			out = append(out, r)
		}
	}
	if f.Desc {
		slices.Reverse(out)
	}
	return out
}

// shrinkScans makes every scan read a few jobs per round trip and call
// (and a few bytes, when bytes is set).
func shrinkScans(t *testing.T, chunk, page int, bytes bool) {
	c, p, pc, sb := scanChunk, pageScanBudget, probeChunk, scanBytesBudget
	t.Cleanup(func() { scanChunk, pageScanBudget, probeChunk, scanBytesBudget = c, p, pc, sb })
	scanChunk, pageScanBudget = chunk, page
	if bytes {
		probeChunk, scanBytesBudget = 2, 3
	}
}

// TestSearchAndRunsMatchReference: SearchJobs, CountSearch, ListAllRuns,
// CountRuns, GetRun, FindByIdempotencyKey and ListTasks agree with the
// reference Matches functions over a world of jobs in every state, pages
// of every size in both orders visit each match once, and so do they when
// each call may read only a few jobs.
func TestSearchAndRunsMatchReference(t *testing.T) {
	onBoth(t, func(t *testing.T, b *Backend, clock *core.ManualClock) {
		ctx := context.Background()
		w := buildOpsWorld(t, b, clock)
		for _, scans := range [][2]int{{500, 10000}, {3, 7}} {
			shrinkScans(t, scans[0], scans[1], scans[0] < 10)
			for si, s := range w.searches() {
				for _, limit := range []int{1, 7, 1000} {
					for _, desc := range []bool{false, true} {
						s.Limit, s.Desc, s.Cursor = limit, desc, ""
						want := w.wantJobs(s)
						var got []string
						for calls := 0; ; calls++ {
							if calls > 200 {
								t.Fatalf("search %d: no end", si)
							}
							page, err := b.SearchJobs(ctx, s)
							if err != nil {
								t.Fatalf("search %d %+v: %v", si, s, err)
							}
							if len(page.Jobs) > limit {
								t.Fatalf("search %d: page of %d, limit %d", si, len(page.Jobs), limit)
							}
							for _, j := range page.Jobs {
								if !reflect.DeepEqual(j, w.jobs[j.ID]) {
									t.Fatalf("search %d: job %+v, GetJob gave %+v", si, j, w.jobs[j.ID])
								}
								got = append(got, j.ID)
							}
							if page.Next == "" {
								break
							}
							s.Cursor = page.Next
						}
						if !slices.Equal(got, want) {
							t.Fatalf("scans %v search %d %+v limit %d: got %v, want %v", scans, si, s, limit, got, want)
						}
					}
				}
				s.Cursor, s.Desc = "", false
				counts, err := b.CountSearch(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				want := map[core.JobState]int64{}
				for _, j := range w.jobs {
					if s.Matches(j) {
						want[j.State]++
					}
				}
				if !maps.Equal(counts, want) {
					t.Fatalf("count search %d %+v: %v, want %v", si, s, counts, want)
				}
			}
			for fi, f := range w.runFilters() {
				for _, limit := range []int{1, 5, 1000} {
					for _, desc := range []bool{false, true} {
						f.Limit, f.Desc, f.Cursor = limit, desc, ""
						want := w.wantRuns(f)
						var got []core.Run
						for calls := 0; ; calls++ {
							if calls > 500 {
								t.Fatalf("runs %d: no end", fi)
							}
							page, err := b.ListAllRuns(ctx, f)
							if err != nil {
								t.Fatalf("runs %d %+v: %v", fi, f, err)
							}
							if len(page.Runs) > limit {
								t.Fatalf("runs %d: page of %d, limit %d", fi, len(page.Runs), limit)
							}
							got = append(got, page.Runs...)
							if page.Next == "" {
								break
							}
							f.Cursor = page.Next
						}
						if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
							t.Fatalf("scans %v runs %d %+v limit %d: got %d runs %v, want %d %v", scans, fi, f, limit, len(got), got, len(want), want)
						}
					}
				}
				f.Cursor, f.Desc = "", false
				counts, err := b.CountRuns(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				want := map[core.RunStatus]int64{}
				for _, r := range w.wantRuns(f) {
					want[r.Status]++
				}
				if !maps.Equal(counts, want) {
					t.Fatalf("count runs %d %+v: %v, want %v", fi, f, counts, want)
				}
			}
		}
		// a count that would read more candidates than allowed refuses
		c := countScanBudget
		t.Cleanup(func() { countScanBudget = c })
		countScanBudget = 5
		if _, err := b.CountSearch(ctx, core.JobSearch{HeaderKey: "h"}); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("count search past its bound: %v", err)
		}
		if _, err := b.CountRuns(ctx, core.RunFilter{Since: w.times[0]}); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("count runs past its bound: %v", err)
		}
		if n, err := b.CountRuns(ctx, core.RunFilter{}); err != nil || n[core.RunFailed] == 0 {
			t.Fatalf("count runs by the counters: %v %v", n, err)
		}
		countScanBudget = c
		for _, r := range w.runs {
			got, err := b.GetRun(ctx, r.ID)
			if err != nil || !reflect.DeepEqual(got, r) {
				t.Fatalf("GetRun(%s) = %+v, %v; want %+v", r.ID, got, err, r)
			}
		}
		some := w.runs[0]
		if _, err := b.GetRun(ctx, core.RunID(some.JobID, 99)); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("GetRun of a token never claimed: %v", err)
		}
		if _, err := b.GetRun(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV.1"); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("GetRun of an unknown job: %v", err)
		}
		for _, bad := range []string{"", "x", "x.", ".1", "x.0", "x.-1", "x.+1"} {
			if _, err := b.GetRun(ctx, bad); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("GetRun(%q): %v", bad, err)
			}
		}
		keyed := 0
		for _, j := range w.jobs {
			if j.IdempotencyKey == "" {
				continue
			}
			keyed++
			got, err := b.FindByIdempotencyKey(ctx, j.Queue, j.IdempotencyKey)
			if err != nil || !reflect.DeepEqual(got, j) {
				t.Fatalf("FindByIdempotencyKey(%s, %s) = %+v, %v; want %+v", j.Queue, j.IdempotencyKey, got, err, j)
			}
			other := map[string]string{"q1": "q2", "q2": "q3", "q3": "q1"}[j.Queue]
			if _, err := b.FindByIdempotencyKey(ctx, other, j.IdempotencyKey); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("key of another queue: %v", err)
			}
		}
		if keyed != 15 {
			t.Fatalf("%d keyed jobs", keyed)
		}
		if _, err := b.FindByIdempotencyKey(ctx, "q1", ""); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("empty key: %v", err)
		}
		if _, err := b.FindByIdempotencyKey(ctx, "q 1", "k"); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("bad queue: %v", err)
		}
		if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "z"}); err != nil {
			t.Fatal(err)
		}
		tasks, err := b.ListTasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[core.JobState]int64{"z": {}}
		for _, j := range w.jobs {
			if want[j.Task] == nil {
				want[j.Task] = map[core.JobState]int64{}
			}
			want[j.Task][j.State]++
		}
		var names []string
		for _, ti := range tasks {
			names = append(names, ti.Name)
			if !maps.Equal(ti.Counts, want[ti.Name]) || ti.HasConfig != (ti.Name == "z") {
				t.Fatalf("task %+v, want counts %v", ti, want[ti.Name])
			}
		}
		if !slices.Equal(names, []string{"a", "b", "c", "z"}) {
			t.Fatalf("tasks %v", names)
		}
	})
}

// roundHook runs before once before the n-th pipeline that reads an index
// range.
type roundHook struct {
	mu     sync.Mutex
	n      int
	before func()
}

func (h *roundHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *roundHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *roundHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "zrangebylex" {
				h.mu.Lock()
				h.n--
				fire := h.n == 0
				h.mu.Unlock()
				if fire {
					h.before()
				}
				break
			}
		}
		return next(ctx, cmds)
	}
}

// TestWalkSeesJobsThatStartRunning: jobs claimed between two rounds of one
// listing call leave the queued range for the lease set, and the listing
// still returns each of them once.
func TestWalkSeesJobsThatStartRunning(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	opt, err := redis.ParseURL(standaloneURL(t))
	if err != nil {
		t.Fatal(err)
	}
	hooked := redis.NewClient(opt)
	t.Cleanup(func() { hooked.Close() })
	hook := &roundHook{}
	hooked.AddHook(hook)
	b := newBackend(t, hooked, Options{Clock: clock})
	worker := newBackend(t, standaloneClient(t), Options{Clock: clock, Prefix: b.opts.Prefix})
	var reqs []core.EnqueueRequest
	for range 12 {
		reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t", MaxAttempts: 10})
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	shrinkScans(t, 3, 10000, false)
	for _, desc := range []bool{false, true} {
		for _, s := range []core.JobSearch{{}, {JobFilter: core.JobFilter{States: []core.JobState{core.StateQueued, core.StateRunning}}}} {
			s.Desc, s.Limit = desc, 100
			hook.mu.Lock()
			hook.n, hook.before = 2, func() {
				if _, err := worker.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 100, LeaseTTL: time.Minute}); err != nil {
					t.Error(err)
				}
			}
			hook.mu.Unlock()
			page, err := b.SearchJobs(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Jobs) != 12 || page.Next != "" {
				t.Fatalf("desc %v %+v: listed %d jobs (next %q), want all 12", desc, s, len(page.Jobs), page.Next)
			}
			// queue them again for the next listing
			for _, j := range page.Jobs {
				if j.State == core.StateRunning {
					if _, err := worker.Fail(ctx, core.Failure{Lease: j.Lease, Error: "again"}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}
