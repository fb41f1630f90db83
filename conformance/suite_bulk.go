package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testBulk: core.Bulk on the backend's search and per-job transitions —
// cancel, retry and delete by filter in bounded steps, dry runs, and
// exact counts while workers run.
func testBulk(t *testing.T, h Harness) {
	if !h.Capabilities.Search {
		cases(t, h, map[string]func(e *env){"Unsupported": bulkUnsupported})
		return
	}
	cs := map[string]func(e *env){
		"CancelByHeader":      bulkCancelByHeader,
		"RetryFailed":         bulkRetryFailed,
		"DryRun":              bulkDryRun,
		"StatesOutsideAction": bulkStatesOutside,
		"Resume":              bulkResume,
		"ResumeAfterCancel":   bulkResumeAfterCancel,
		"CancelWhileWorkers":  bulkCancelWhileWorkers,
		"RetryWhileWorkers":   bulkRetryWhileWorkers,
		"InvalidRequest":      bulkInvalid,
	}
	if h.Capabilities.Delete {
		cs["Delete"] = func(e *env) { bulkDelete(e, false) }
		cs["DeleteForce"] = func(e *env) { bulkDelete(e, true) }
		cs["DeleteWhileWorkers"] = func(e *env) { bulkDeleteWhileWorkers(e, false) }
		cs["DeleteForceWhileWorkers"] = func(e *env) { bulkDeleteWhileWorkers(e, true) }
	} else {
		cs["DeleteUnsupported"] = bulkDeleteUnsupported
	}
	if h.Capabilities.AtomicBulk {
		cs["AtomicStep"] = bulkAtomicStep
	}
	cases(t, h, cs)
}

// bulkTotals sums the steps of one bulk action.
type bulkTotals struct {
	Matched                  int64
	Changed, Skipped, Failed int
	Steps                    int
}

// bulkAll runs req in steps until Done, checking each step's bound.
func (e *env) bulkAll(req core.BulkRequest) bulkTotals {
	e.t.Helper()
	var tot bulkTotals
	for {
		tot.Steps++
		if tot.Steps > 10_000 {
			e.t.Fatalf("Bulk(%+v) is not done after %d steps", req, tot.Steps)
		}
		r, err := core.Bulk(e.ctx, e.b, req)
		if err != nil {
			e.t.Fatalf("Bulk(%+v) step %d: %v", req, tot.Steps, err)
		}
		if r.Matched > int64(req.Limit) || int64(r.Changed+r.Skipped+r.Failed) != r.Matched {
			e.t.Fatalf("Bulk step %d = %+v: more than the limit %d, or outcomes that do not add up", tot.Steps, r, req.Limit)
		}
		if len(r.Errors) != min(r.Failed, core.MaxBulkErrors) {
			e.t.Fatalf("Bulk step %d = %+v: %d errors reported for %d failures", tot.Steps, r, len(r.Errors), r.Failed)
		}
		tot.Matched += r.Matched
		tot.Changed += r.Changed
		tot.Skipped += r.Skipped
		tot.Failed += r.Failed
		if r.Done {
			return tot
		}
		if r.Next == "" {
			e.t.Fatalf("Bulk step %d = %+v: not done and no cursor", tot.Steps, r)
		}
		req.Cursor = r.Next
	}
}

func bulkCancelByHeader(e *env) {
	var reqs []core.EnqueueRequest
	for i := range 30 {
		r := req("q", "t")
		r.Headers = map[string]string{"tenant": []string{"b", "a", "a"}[i%3]}
		reqs = append(reqs, r)
	}
	jobs := e.enqueue(reqs...)
	c := e.claim("q", 5) // tenants b, a, a, b, a
	e.complete(c[0].Lease, nil)
	e.complete(c[1].Lease, nil)
	var others []snapshot
	for _, j := range jobs {
		if j.Headers["tenant"] == "b" || j.ID == c[1].ID {
			others = append(others, e.snap(j.ID))
		}
	}
	tot := e.bulkAll(core.BulkRequest{Action: core.BulkCancel, Reason: "tenant a off-boarded", Limit: 4,
		Search: core.JobSearch{HeaderKey: "tenant", HeaderValue: "a"}})
	if tot != (bulkTotals{Matched: 19, Changed: 19, Steps: tot.Steps}) || tot.Steps > 6 {
		e.t.Fatalf("bulk cancel = %+v, want 19 changed of 19 in at most 6 steps of 4", tot)
	}
	for _, s := range others {
		e.requireUnchanged(s, "a bulk cancel of other jobs")
	}
	for _, j := range jobs {
		if j.Headers["tenant"] == "a" && j.ID != c[1].ID {
			got := e.requireState(j.ID, core.StateCancelled)
			requireEq(e.t, got.LastError, "tenant a off-boarded", "reason of a bulk-cancelled job")
		}
	}
	requireErr(e.t, fencedCalls["Complete"](e, c[2].Lease), core.ErrLeaseLost, "Complete of a bulk-cancelled running job")
}

func bulkRetryFailed(e *env) {
	var reqs []core.EnqueueRequest
	for i := range 16 {
		reqs = append(reqs, req("q", []string{"t", "t", "u", "t"}[i%4]))
	}
	e.enqueue(reqs...)
	var failedT []string
	for i, j := range e.claim("q", 16) {
		if i%2 == 0 {
			e.fail(core.Failure{Lease: j.Lease, Error: "x", Terminal: true})
			if j.Task == "t" {
				failedT = append(failedT, j.ID)
			}
		} else {
			e.complete(j.Lease, nil)
		}
	}
	e.advance(time.Second)
	tot := e.bulkAll(core.BulkRequest{Action: core.BulkRetry, Limit: 3, Search: core.JobSearch{JobFilter: core.JobFilter{Task: "t"}}})
	if tot.Changed != len(failedT) || tot.Matched != int64(len(failedT)) || tot.Skipped+tot.Failed != 0 {
		e.t.Fatalf("bulk retry = %+v, want %d changed", tot, len(failedT))
	}
	for _, id := range failedT {
		j := e.requireState(id, core.StateQueued)
		requireTime(e.t, j.RunAt, e.now(), "run at of a bulk-retried job")
	}
	m := e.count(core.JobFilter{})
	want := map[core.JobState]int64{core.StateQueued: int64(len(failedT)), core.StateSucceeded: 8, core.StateFailed: int64(8 - len(failedT))}
	if d := diff(want, m); d != "" {
		e.t.Fatalf("counts after the bulk retry: %s", d)
	}
}

func bulkDelete(e *env, force bool) {
	jobs := deleteFixture(e)
	e.advance(time.Millisecond)
	kept := e.enqueueOne(req("other", "t"))
	before := e.snap(kept.ID)
	tot := e.bulkAll(core.BulkRequest{Action: core.BulkDelete, Force: force, Limit: 2,
		Search: core.JobSearch{Created: core.TimeRange{To: kept.CreatedAt}, IDs: idsOf(jobs)}})
	want := len(jobs)
	if !force {
		want-- // the running job
	}
	if tot.Changed != want || tot.Matched != int64(want) {
		e.t.Fatalf("bulk delete (force %v) = %+v, want %d changed", force, tot, want)
	}
	for state, j := range jobs {
		if state == "running" && !force {
			e.requireState(j.ID, core.StateRunning)
			continue
		}
		e.requireGone(j.ID, "a bulk-deleted "+state+" job")
	}
	e.requireUnchanged(before, "a bulk delete of other jobs")
}

func idsOf(jobs map[string]core.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func bulkDryRun(e *env) {
	all, created, finished := searchFixture(e)
	for _, s := range searches(all, created, finished)[:12] {
		for _, action := range []core.BulkAction{core.BulkCancel, core.BulkRetry} {
			r, err := core.Bulk(e.ctx, e.b, core.BulkRequest{Action: action, Search: s, DryRun: true, Limit: 1})
			if err != nil {
				e.t.Fatalf("dry run: %v", err)
			}
			want := map[core.JobState]int64{}
			var n int64
			for _, j := range searchMatches(all, s) {
				if (action == core.BulkCancel) == j.State.Active() && (action == core.BulkCancel || j.State != core.StateSucceeded) {
					want[j.State]++
					n++
				}
			}
			if !r.Done || r.Matched != n || r.Changed != 0 || diff(want, nonZero(r.Counts)) != "" {
				e.t.Fatalf("dry run of %s %+v = %+v, want %d matched by state %v, nothing changed", action, s, r, n, want)
			}
		}
	}
	if d := diff(all, e.allJobs()); d != "" {
		e.t.Fatalf("a dry run changed jobs: %s", d)
	}
}

func bulkStatesOutside(e *env) {
	j := e.enqueueOne(req("q", "t"))
	before := e.snap(j.ID)
	r, err := core.Bulk(e.ctx, e.b, core.BulkRequest{Action: core.BulkRetry, Limit: 10,
		Search: core.JobSearch{JobFilter: core.JobFilter{States: []core.JobState{core.StateQueued}}}})
	if err != nil || !r.Done || r.Matched != 0 {
		e.t.Fatalf("bulk retry of queued jobs = %+v, %v; want done with nothing matched", r, err)
	}
	e.requireUnchanged(before, "a bulk retry of queued jobs")
}

func bulkResume(e *env) {
	jobs := e.enqueueN("q", "t", 23)
	req := core.BulkRequest{Action: core.BulkCancel, Limit: 5, Search: core.JobSearch{IDPrefix: jobs[0].ID[:6]}}
	r, err := core.Bulk(e.ctx, e.b, req)
	if err != nil || r.Done || r.Changed != 5 || r.Next == "" {
		e.t.Fatalf("first step = %+v, %v; want 5 changed and a cursor", r, err)
	}
	requireEq(e.t, e.count(core.JobFilter{})[core.StateCancelled], 5, "cancelled after one step")
	// Jobs enqueued after the cursor are visited by later steps.
	jobs = append(jobs, e.enqueueN("q", "t", 2)...)
	req.Cursor = r.Next
	tot := e.bulkAll(req)
	requireEq(e.t, tot.Changed, 20, "changed by the later steps")
	requireEq(e.t, tot.Skipped+tot.Failed, 0, "skipped or failed by the later steps")
	for _, j := range jobs {
		e.requireState(j.ID, core.StateCancelled)
	}
}

// stopAfter cancels a context after its n-th Cancel, for a bulk step that
// ends mid-page.
type stopAfter struct {
	core.QueueBackend
	core.JobSearcher
	n    int
	stop func()
}

func (s *stopAfter) Cancel(ctx context.Context, id, reason string) (core.Job, error) {
	j, err := s.QueueBackend.Cancel(ctx, id, reason)
	if s.n--; s.n == 0 {
		s.stop()
	}
	return j, err
}

func bulkResumeAfterCancel(e *env) {
	jobs := e.enqueueN("q", "t", 12)
	ctx, stop := context.WithCancel(e.ctx)
	defer stop()
	b := &stopAfter{QueueBackend: e.b, JobSearcher: e.searcher(), n: 7, stop: stop}
	req := core.BulkRequest{Action: core.BulkCancel, Limit: 10, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}}
	r, err := core.Bulk(ctx, b, req)
	if !errors.Is(err, context.Canceled) || r.Done || r.Changed != 7 || r.Matched != 7 {
		e.t.Fatalf("a step whose context ends after 7 cancels = %+v, %v; want 7 changed and context.Canceled", r, err)
	}
	req.Cursor = r.Next
	tot := e.bulkAll(req)
	requireEq(e.t, tot.Changed, 5, "changed after resuming")
	requireEq(e.t, tot.Skipped+tot.Failed, 0, "skipped or failed after resuming")
	for _, j := range jobs {
		e.requireState(j.ID, core.StateCancelled)
	}
}

func bulkInvalid(e *env) {
	j := e.enqueueOne(req("q", "t"))
	before := e.snap(j.ID)
	for _, r := range []core.BulkRequest{
		{Action: "purge", Limit: 10},
		{Action: core.BulkCancel},
		{Action: core.BulkCancel, Limit: core.MaxPageSize + 1},
		{Action: core.BulkCancel, Limit: 10, Force: true},
		{Action: core.BulkRetry, Limit: 10, Search: core.JobSearch{HeaderValue: "v"}},
		{Action: core.BulkCancel, Limit: 10, Search: core.JobSearch{JobFilter: core.JobFilter{States: []core.JobState{"x"}}}},
		{Action: core.BulkCancel, Limit: 10, Search: core.JobSearch{Created: core.TimeRange{From: e.now(), To: e.now()}}},
	} {
		_, err := core.Bulk(e.ctx, e.b, r)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("Bulk(%+v)", r))
	}
	e.requireUnchanged(before, "invalid bulk requests")
}

func bulkUnsupported(e *env) {
	j := e.enqueueOne(req("q", "t"))
	_, err := core.Bulk(e.ctx, e.b, core.BulkRequest{Action: core.BulkCancel, Limit: 10})
	requireErr(e.t, err, core.ErrUnsupported, "Bulk on a backend without search")
	e.requireState(j.ID, core.StateQueued)
}

func bulkDeleteUnsupported(e *env) {
	j := e.enqueueOne(req("q", "t"))
	_, err := core.Bulk(e.ctx, e.b, core.BulkRequest{Action: core.BulkDelete, Limit: 10})
	requireErr(e.t, err, core.ErrUnsupported, "bulk delete on a backend without deletion")
	e.requireState(j.ID, core.StateQueued)
}
