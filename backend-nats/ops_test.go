package natsq_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
)

var t0 = time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)

// opsPair opens a writer and a second replica of one namespace, each on
// its own connection, both deciding by clock.
func opsPair(t *testing.T, url string, clock core.Clock) (ns string, w, r *natsq.Backend) {
	t.Helper()
	ns = namespace("ops")
	w = newBackend(t, connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	r, err := natsq.New(context.Background(), connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return ns, w, r
}

// everyReplica brings r up to date, compacts w's log and starts a replica
// from the snapshot; it returns the three by name.
func everyReplica(t *testing.T, url, ns string, clock core.Clock, w, r *natsq.Backend) map[string]*natsq.Backend {
	t.Helper()
	ctx := context.Background()
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, err := natsq.New(ctx, connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fresh.Close() })
	return map[string]*natsq.Backend{"writer": w, "replica": r, "from snapshot": fresh}
}

func claimOne(t *testing.T, b *natsq.Backend, queue string) core.Job {
	t.Helper()
	jobs, err := b.Claim(context.Background(), core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim %s: %v, %d jobs", queue, err, len(jobs))
	}
	return jobs[0]
}

// DeleteJob removes a job with its runs, checkpoints and key; a running job
// needs force, which supersedes its lease. Every replica, and a replica
// started from a snapshot taken after it, agrees.
func TestDeleteJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := embeddedURL(t)
	clock := core.NewManualClock(t0)
	ns, w, r := opsPair(t, url, clock)
	res, err := w.Enqueue(ctx, []core.EnqueueRequest{{Task: "t", IdempotencyKey: "k"}, {Task: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	run := claimOne(t, w, "default")
	if run.ID != res[0].Job.ID {
		t.Fatalf("claimed %s, want %s", run.ID, res[0].Job.ID)
	}
	if _, err := w.SaveCheckpoint(ctx, run.Lease, "s", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteJob(ctx, run.ID, false); !errors.Is(err, core.ErrInvalidState) {
		t.Fatalf("delete of a running job without force = %v, want ErrInvalidState", err)
	}
	if j, err := w.GetJob(ctx, run.ID); err != nil || j.State != core.StateRunning {
		t.Fatalf("refused deletion changed the job: %v %v", j.State, err)
	}
	if err := w.DeleteJob(ctx, run.ID, true); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	if _, err := w.Heartbeat(ctx, run.Lease, time.Minute); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("heartbeat of the deleted job's lease = %v, want ErrLeaseLost", err)
	}
	if _, err := w.SaveCheckpoint(ctx, run.Lease, "s2", nil); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("checkpoint of the deleted job's lease = %v, want ErrLeaseLost", err)
	}
	errs, err := w.Complete(ctx, []core.Completion{{Lease: run.Lease}})
	if err != nil || !errors.Is(errs[0], core.ErrLeaseLost) {
		t.Fatalf("complete of the deleted job's lease = %v %v, want ErrLeaseLost", err, errs)
	}
	if _, err := w.Fail(ctx, core.Failure{Lease: run.Lease, Error: "x"}); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("fail of the deleted job's lease = %v, want ErrLeaseLost", err)
	}
	if err := w.DeleteJob(ctx, run.ID, true); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
	if err := w.DeleteJob(ctx, "", false); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("delete of an empty id = %v, want ErrInvalidArgument", err)
	}
	// A queued job needs no force.
	if err := w.DeleteJob(ctx, res[1].Job.ID, false); err != nil {
		t.Fatalf("delete of a queued job: %v", err)
	}
	// The key is free again: the same request makes a new job.
	again, err := w.Enqueue(ctx, []core.EnqueueRequest{{Task: "t", IdempotencyKey: "k"}})
	if err != nil || again[0].Reused || again[0].Job.ID == run.ID {
		t.Fatalf("enqueue after delete: %v %+v", err, again)
	}
	for name, b := range everyReplica(t, url, ns, clock, w, r) {
		for _, id := range []string{run.ID, res[1].Job.ID} {
			if _, err := b.GetJob(ctx, id); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("%s: job %s after delete: %v", name, id, err)
			}
			if _, err := b.ListRuns(ctx, id); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("%s: runs of %s after delete: %v", name, id, err)
			}
			if _, err := b.Checkpoints(ctx, id); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("%s: checkpoints of %s after delete: %v", name, id, err)
			}
		}
		if _, err := b.GetRun(ctx, core.RunID(run.ID, run.Lease.Token)); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("%s: run of the deleted job: %v", name, err)
		}
		if j, err := b.FindByIdempotencyKey(ctx, "default", "k"); err != nil || j.ID != again[0].Job.ID {
			t.Errorf("%s: key k is held by %s (%v), want %s", name, j.ID, err, again[0].Job.ID)
		}
		n, err := b.CountJobs(ctx, core.JobFilter{})
		if err != nil || !reflect.DeepEqual(n, map[core.JobState]int64{core.StateQueued: 1}) {
			t.Errorf("%s: counts after delete %v %v", name, n, err)
		}
		if st, err := b.TaskStats(ctx, "t"); err != nil || len(st.Runs) != 0 {
			t.Errorf("%s: run statistics after delete %+v %v", name, st, err)
		}
	}
}

// DeleteQueue deletes a queue's jobs in bounded steps, running ones too,
// and then its config; other queues are left alone.
func TestDeleteQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := embeddedURL(t)
	clock := core.NewManualClock(t0)
	ns, w, r := opsPair(t, url, clock)
	reqs := []core.EnqueueRequest{{Queue: "keep", Task: "t", IdempotencyKey: "k"}}
	for i := 0; i < 7; i++ {
		reqs = append(reqs, core.EnqueueRequest{Queue: "gone", Task: "t", IdempotencyKey: fmt.Sprint("k", i)})
	}
	if _, err := w.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	running := claimOne(t, w, "gone")
	done := claimOne(t, w, "gone")
	if _, err := w.Complete(ctx, []core.Completion{{Lease: done.Lease}}); err != nil {
		t.Fatal(err)
	}
	if err := w.PutQueueConfig(ctx, core.QueueConfig{Queue: "gone", Paused: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxInFlight: 100}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []core.DeleteQueueRequest{{Queue: "gone"}, {Queue: "gone", Limit: -1}, {Limit: 1}, {Queue: "gone", Limit: core.DefaultLimits.MaxBatch + 1}} {
		if _, err := w.DeleteQueue(ctx, bad); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("DeleteQueue(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	var steps []core.DeleteQueueResult
	for len(steps) < 10 {
		res, err := w.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "gone", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted > 3 {
			t.Fatalf("a step of limit 3 deleted %d", res.Deleted)
		}
		steps = append(steps, res)
		if res.Done {
			break
		}
	}
	total := 0
	for _, s := range steps {
		total += s.Deleted
	}
	if total != 7 || !steps[len(steps)-1].Done {
		t.Fatalf("steps %+v: deleted %d of 7", steps, total)
	}
	if _, err := w.Heartbeat(ctx, running.Lease, time.Minute); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("heartbeat of a job of the deleted queue = %v, want ErrLeaseLost", err)
	}
	// Nothing left to delete: the step is done at once.
	if res, err := w.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "gone", Limit: 3}); err != nil || res != (core.DeleteQueueResult{Done: true}) {
		t.Fatalf("step on an empty queue: %+v %v", res, err)
	}
	for name, b := range everyReplica(t, url, ns, clock, w, r) {
		qs, err := b.ListQueues(ctx)
		if err != nil || len(qs) != 1 || qs[0].Queue != "keep" {
			t.Errorf("%s: queues after delete: %+v %v", name, qs, err)
		}
		if cfg, err := b.GetQueueConfig(ctx, "gone"); err != nil || cfg.Paused {
			t.Errorf("%s: config of the deleted queue: %+v %v", name, cfg, err)
		}
		if _, err := b.GetTaskConfig(ctx, "t"); err != nil {
			t.Errorf("%s: the task config went with the queue: %v", name, err)
		}
		if _, err := b.FindByIdempotencyKey(ctx, "gone", "k0"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("%s: key of a deleted job: %v", name, err)
		}
		if _, err := b.FindByIdempotencyKey(ctx, "keep", "k"); err != nil {
			t.Errorf("%s: key of the other queue: %v", name, err)
		}
	}
	// A queue enqueued to again starts unpaused.
	if _, err := w.Enqueue(ctx, []core.EnqueueRequest{{Queue: "gone", Task: "t"}}); err != nil {
		t.Fatal(err)
	}
	claimOne(t, w, "gone")
}

// allRuns is the reference: every run of b with its queue and task, in
// (job id, token) order.
func allRuns(t *testing.T, b *natsq.Backend) []core.Run {
	t.Helper()
	ctx := context.Background()
	page, err := b.ListJobs(ctx, core.JobFilter{Limit: core.MaxPageSize})
	if err != nil || page.Next != "" {
		t.Fatalf("list: %v, next %q", err, page.Next)
	}
	var out []core.Run
	for _, j := range page.Jobs {
		runs, err := b.ListRuns(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			r.Queue, r.Task = j.Queue, j.Task
			out = append(out, r)
		}
	}
	return out
}

// selectRef returns the items of ref that match, and their count by key.
func selectRef[T any, K comparable](ref []T, match func(T) bool, key func(T) K) ([]T, map[K]int64) {
	var out []T
	n := map[K]int64{}
	for _, it := range ref {
		if match(it) {
			out = append(out, it)
			n[key(it)]++
		}
	}
	return out, n
}

// checkPaging follows a listing in pages of 2, ascending and descending,
// and fails unless it yields exactly want (reversed when descending),
// within max pages.
func checkPaging[T any](t *testing.T, name string, want []T, max int, page func(cursor string, desc bool) ([]T, string, error)) {
	t.Helper()
	for _, desc := range []bool{false, true} {
		var got []T
		cursor := ""
		for pages := 0; ; pages++ {
			items, next, err := page(cursor, desc)
			if err != nil || pages > max || len(items) > 2 {
				t.Fatalf("%s, desc %v: %v after %d pages, %d items", name, desc, err, pages, len(items))
			}
			got = append(got, items...)
			if next == "" {
				break
			}
			cursor = next
		}
		exp := slices.Clone(want)
		if desc {
			slices.Reverse(exp)
		}
		if len(got) != len(exp) || len(got) > 0 && !reflect.DeepEqual(got, exp) {
			t.Fatalf("%s, desc %v: listed %d, want %d:\n%+v\n%+v", name, desc, len(got), len(exp), got, exp)
		}
	}
}

// The run reads agree with the reference meaning of a filter, page by page
// in both directions, on the writer and on a second replica.
func TestRunReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := core.NewManualClock(t0)
	_, w, r := opsPair(t, embeddedURL(t), clock)
	for i := 0; i < 6; i++ {
		q := []string{"a", "b"}[i%2]
		if _, err := w.Enqueue(ctx, []core.EnqueueRequest{{Queue: q, Task: fmt.Sprint("t", i%3), MaxAttempts: 5}}); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 3; round++ {
		for _, q := range []string{"a", "b"} {
			jobs, err := w.Claim(ctx, core.ClaimRequest{Queue: q, WorkerID: "w", Limit: 3, LeaseTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			for n, j := range jobs {
				clock.Advance(time.Second)
				switch (n + round) % 3 {
				case 0:
					_, err = w.Fail(ctx, core.Failure{Lease: j.Lease, Error: "again"})
				case 1:
					err = w.Sleep(ctx, j.Lease, clock.Now())
				case 2:
					if round < 2 {
						_, err = w.Fail(ctx, core.Failure{Lease: j.Lease, Error: "again"})
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ref := allRuns(t, w)
	if len(ref) < 12 {
		t.Fatalf("only %d runs", len(ref))
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range ref {
		for _, b := range []*natsq.Backend{w, r} {
			got, err := b.GetRun(ctx, want.ID)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("GetRun(%s) = %+v %v, want %+v", want.ID, got, err, want)
			}
		}
	}
	for _, id := range []string{"x", "x.0", "x.-1", ".1", "x.1a"} {
		if _, err := w.GetRun(ctx, id); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("GetRun(%q) = %v, want ErrInvalidArgument", id, err)
		}
	}
	if _, err := w.GetRun(ctx, core.RunID(ref[0].JobID, 99)); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("GetRun of a token never claimed = %v, want ErrNotFound", err)
	}
	mid := ref[len(ref)/2].StartedAt
	filters := []core.RunFilter{
		{},
		{Queue: "a"},
		{Task: "t1"},
		{JobID: ref[0].JobID},
		{Statuses: []core.RunStatus{core.RunFailed}},
		{Statuses: []core.RunStatus{core.RunSleeping, core.RunRunning}, Queue: "b"},
		{Since: mid},
		{Before: mid},
		{Since: mid.Add(-2 * time.Second), Before: mid.Add(time.Second)},
	}
	for _, f := range filters {
		want, wantCount := selectRef(ref, f.Matches, func(r core.Run) core.RunStatus { return r.Status })
		for _, b := range []*natsq.Backend{w, r} {
			n, err := b.CountRuns(ctx, f)
			if err != nil || !reflect.DeepEqual(n, wantCount) {
				t.Fatalf("CountRuns(%+v) = %v %v, want %v", f, n, err, wantCount)
			}
			checkPaging(t, fmt.Sprintf("ListAllRuns(%+v)", f), want, len(ref), func(cursor string, desc bool) ([]core.Run, string, error) {
				pf := f
				pf.Limit, pf.Desc, pf.Cursor = 2, desc, cursor
				page, err := b.ListAllRuns(ctx, pf)
				return page.Runs, page.Next, err
			})
		}
	}
	for _, bad := range []core.RunFilter{{Limit: -1}, {Limit: core.MaxPageSize + 1}, {Cursor: "nope"}, {Statuses: []core.RunStatus{"odd"}}, {Queue: strings.Repeat("q", 300)}, {Since: mid, Before: mid}} {
		if _, err := w.ListAllRuns(ctx, bad); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("ListAllRuns(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
		if _, err := w.CountRuns(ctx, bad); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("CountRuns(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// The job search agrees with the reference meaning of a search, page by
// page in both directions, and its counts with the listing.
func TestJobSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := core.NewManualClock(t0)
	_, w, r := opsPair(t, embeddedURL(t), clock)
	var ids []string
	for i := 0; i < 12; i++ {
		req := core.EnqueueRequest{Queue: []string{"a", "b"}[i%2], Task: fmt.Sprint("t", i%3), Headers: map[string]string{"n": fmt.Sprint(i % 4)}}
		if i%5 == 0 {
			req.Headers["tenant"] = "acme"
		}
		res, err := w.Enqueue(ctx, []core.EnqueueRequest{req})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res[0].Job.ID)
		clock.Advance(time.Second)
	}
	for i := 0; i < 5; i++ {
		j := claimOne(t, w, []string{"a", "b"}[i%2])
		clock.Advance(time.Second)
		if i%2 == 0 {
			_, err := w.Complete(ctx, []core.Completion{{Lease: j.Lease}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	page, err := w.ListJobs(ctx, core.JobFilter{Limit: core.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	ref := page.Jobs
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	searches := []core.JobSearch{
		{},
		{JobFilter: core.JobFilter{Queue: "a"}},
		{JobFilter: core.JobFilter{Task: "t2", States: []core.JobState{core.StateQueued}}},
		{HeaderKey: "tenant"},
		{HeaderKey: "n", HeaderValue: "1"},
		{HeaderKey: "n", HeaderValue: "9"},
		{IDPrefix: ids[3][:20]},
		{IDs: []string{ids[7], ids[2], ids[2], "missing", ids[11]}},
		{IDs: []string{ids[7], ids[2]}, JobFilter: core.JobFilter{Queue: "b"}},
		{Created: core.TimeRange{From: t0.Add(3 * time.Second), To: t0.Add(9 * time.Second)}},
		{Created: core.TimeRange{To: t0.Add(4 * time.Second)}},
		{Finished: core.TimeRange{From: t0}},
		{Finished: core.TimeRange{From: t0.Add(14 * time.Second)}, JobFilter: core.JobFilter{Queue: "a"}},
	}
	for _, s := range searches {
		want, wantCount := selectRef(ref, s.Matches, func(j core.Job) core.JobState { return j.State })
		for _, b := range []*natsq.Backend{w, r} {
			n, err := b.CountSearch(ctx, s)
			if err != nil || !reflect.DeepEqual(n, wantCount) {
				t.Fatalf("CountSearch(%+v) = %v %v, want %v", s, n, err, wantCount)
			}
			checkPaging(t, fmt.Sprintf("SearchJobs(%+v)", s), want, len(ref), func(cursor string, desc bool) ([]core.Job, string, error) {
				ps := s
				ps.Limit, ps.Desc, ps.Cursor = 2, desc, cursor
				page, err := b.SearchJobs(ctx, ps)
				return page.Jobs, page.Next, err
			})
		}
	}
	for _, bad := range []core.JobSearch{{HeaderValue: "v"}, {IDs: []string{""}}, {IDPrefix: strings.Repeat("x", 100)},
		{Created: core.TimeRange{From: t0, To: t0}}, {JobFilter: core.JobFilter{Limit: -1}}, {HeaderKey: "\xff"}} {
		if _, err := w.SearchJobs(ctx, bad); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("SearchJobs(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
		if _, err := w.CountSearch(ctx, bad); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("CountSearch(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	for _, bad := range [][2]string{{"", "k"}, {"q", ""}, {"q", strings.Repeat("k", core.MaxIdempotencyKeyLength+1)}} {
		if _, err := w.FindByIdempotencyKey(ctx, bad[0], bad[1]); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("FindByIdempotencyKey(%q, %q) = %v, want ErrInvalidArgument", bad[0], bad[1], err)
		}
	}
}

// ListTasks names every task with jobs or a config, with counts by state.
func TestListTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := core.NewManualClock(t0)
	_, w, r := opsPair(t, embeddedURL(t), clock)
	if _, err := w.Enqueue(ctx, []core.EnqueueRequest{{Task: "b"}, {Task: "b"}, {Queue: "other", Task: "b"}, {Task: "a"}}); err != nil {
		t.Fatal(err)
	}
	claimOne(t, w, "other")
	if err := w.PutTaskConfig(ctx, core.TaskConfig{Task: "c", MaxInFlight: 3}); err != nil {
		t.Fatal(err)
	}
	if err := w.PutTaskConfig(ctx, core.TaskConfig{Task: "a", MaxInFlight: 3}); err != nil {
		t.Fatal(err)
	}
	want := []core.TaskInfo{
		{Name: "a", Counts: map[core.JobState]int64{core.StateQueued: 1}, HasConfig: true},
		{Name: "b", Counts: map[core.JobState]int64{core.StateQueued: 2, core.StateRunning: 1}},
		{Name: "c", Counts: map[core.JobState]int64{}, HasConfig: true},
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*natsq.Backend{w, r} {
		got, err := b.ListTasks(ctx)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("ListTasks = %+v %v, want %+v", got, err, want)
		}
	}
}
