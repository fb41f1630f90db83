package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// suiteStart is where every suite clock starts: millisecond aligned, far
// enough from the Unix epoch that no backend mistakes it for a zero time.
var suiteStart = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)

// suiteLimits are the limits every suite backend gets. They are small so
// that the validation cases can exceed them cheaply.
var suiteLimits = core.Limits{MaxPayloadBytes: 4096, MaxHeaderBytes: 1024, MaxBatch: 1000}

// leaseTTL is the lease the suite asks for unless a case needs another.
const leaseTTL = 30 * time.Second

// env is one case's backend, clock and helpers. Every helper fails the test
// on an unexpected error, so cases read as the contract they check.
type env struct {
	t     *testing.T
	h     Harness
	b     core.QueueBackend
	clock *core.ManualClock
	ctx   context.Context
}

// newEnv marks t parallel and gives it a fresh backend on a fresh clock.
func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	t.Parallel()
	return newEnvSerial(t, h)
}

// newEnvSerial is newEnv without t.Parallel, for callers that already
// called it or that must not run in parallel.
func newEnvSerial(t *testing.T, h Harness) *env {
	t.Helper()
	clock := core.NewManualClock(suiteStart)
	b := h.New(t, Options{Clock: clock, Limits: suiteLimits})
	if b == nil {
		t.Fatalf("harness %q returned a nil backend", h.Name)
	}
	return &env{t: t, h: h, b: b, clock: clock, ctx: context.Background()}
}

// now is the suite clock's time.
func (e *env) now() time.Time { return e.clock.Now() }

// advance moves the suite clock by d.
func (e *env) advance(d time.Duration) time.Time { return e.clock.Advance(d) }

// req is an enqueue request for task in queue.
func req(queue, task string) core.EnqueueRequest {
	return core.EnqueueRequest{Queue: queue, Task: task, Payload: []byte(`{"n":1}`)}
}

// enqueue stores reqs and returns the jobs in request order.
func (e *env) enqueue(reqs ...core.EnqueueRequest) []core.Job {
	e.t.Helper()
	res, err := e.b.Enqueue(e.ctx, reqs)
	if err != nil {
		e.t.Fatalf("Enqueue(%d items): %v", len(reqs), err)
	}
	if len(res) != len(reqs) {
		e.t.Fatalf("Enqueue(%d items) returned %d results", len(reqs), len(res))
	}
	jobs := make([]core.Job, len(res))
	for i, r := range res {
		jobs[i] = r.Job
	}
	return jobs
}

// enqueueOne stores one request and returns its job.
func (e *env) enqueueOne(r core.EnqueueRequest) core.Job {
	e.t.Helper()
	return e.enqueue(r)[0]
}

// enqueueN stores n plain jobs of task in queue, in batches.
func (e *env) enqueueN(queue, task string, n int) []core.Job {
	e.t.Helper()
	var out []core.Job
	for n > 0 {
		size := min(n, 500)
		reqs := make([]core.EnqueueRequest, size)
		for i := range reqs {
			reqs[i] = req(queue, task)
		}
		out = append(out, e.enqueue(reqs...)...)
		n -= size
	}
	return out
}

// claim claims up to limit jobs of queue for worker "w1".
func (e *env) claim(queue string, limit int) []core.Job {
	e.t.Helper()
	return e.claimAs(queue, "w1", limit, leaseTTL)
}

// claimAs claims with full control of the request.
func (e *env) claimAs(queue, worker string, limit int, ttl time.Duration) []core.Job {
	e.t.Helper()
	jobs, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: queue, WorkerID: worker, Limit: limit, LeaseTTL: ttl})
	if err != nil {
		e.t.Fatalf("Claim(%s, limit %d): %v", queue, limit, err)
	}
	if len(jobs) > limit {
		e.t.Fatalf("Claim(%s, limit %d) returned %d jobs", queue, limit, len(jobs))
	}
	return jobs
}

// claimOne claims exactly one job of queue and fails the test otherwise.
func (e *env) claimOne(queue string) core.Job {
	e.t.Helper()
	jobs := e.claim(queue, 1)
	if len(jobs) != 1 {
		e.t.Fatalf("Claim(%s) returned %d jobs, want 1", queue, len(jobs))
	}
	return jobs[0]
}

// claimNone asserts that queue has no claimable job.
func (e *env) claimNone(queue string, why string) {
	e.t.Helper()
	jobs := e.claim(queue, 10)
	if len(jobs) != 0 {
		e.t.Fatalf("Claim(%s) returned %d jobs (first %s), want none: %s", queue, len(jobs), jobs[0].ID, why)
	}
}

// enqueueClaim enqueues one job of task in queue and claims it.
func (e *env) enqueueClaim(r core.EnqueueRequest) core.Job {
	e.t.Helper()
	j := e.enqueueOne(r)
	c := e.claimOne(j.Queue)
	if c.ID != j.ID {
		e.t.Fatalf("claimed %s, want the only job %s", c.ID, j.ID)
	}
	return c
}

// get returns a job that must exist.
func (e *env) get(id string) core.Job {
	e.t.Helper()
	j, err := e.b.GetJob(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

// runs returns the runs of a job that must exist.
func (e *env) runs(id string) []core.Run {
	e.t.Helper()
	rs, err := e.b.ListRuns(e.ctx, id)
	if err != nil {
		e.t.Fatalf("ListRuns(%s): %v", id, err)
	}
	return rs
}

// checkpoints returns the checkpoints of a job that must exist.
func (e *env) checkpoints(id string) []core.Checkpoint {
	e.t.Helper()
	cs, err := e.b.Checkpoints(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Checkpoints(%s): %v", id, err)
	}
	return cs
}

// complete completes one job and requires success.
func (e *env) complete(l core.Lease, result []byte) {
	e.t.Helper()
	errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: l, Result: result}})
	if err != nil {
		e.t.Fatalf("Complete(%s): %v", l.JobID, err)
	}
	if len(errs) != 1 {
		e.t.Fatalf("Complete of one item returned %d item errors", len(errs))
	}
	if errs[0] != nil {
		e.t.Fatalf("Complete(%s): item error %v", l.JobID, errs[0])
	}
}

// fail fails one run and returns the job's new state.
func (e *env) fail(f core.Failure) core.JobState {
	e.t.Helper()
	st, err := e.b.Fail(e.ctx, f)
	if err != nil {
		e.t.Fatalf("Fail(%s): %v", f.Lease.JobID, err)
	}
	return st
}

// rescue runs one rescue pass with limit.
func (e *env) rescue(limit int) core.RescueResult {
	e.t.Helper()
	r, err := e.b.Rescue(e.ctx, core.RescueRequest{Limit: limit})
	if err != nil {
		e.t.Fatalf("Rescue(%d): %v", limit, err)
	}
	return r
}

// cancel cancels a job and requires success.
func (e *env) cancel(id, reason string) core.Job {
	e.t.Helper()
	j, err := e.b.Cancel(e.ctx, id, reason)
	if err != nil {
		e.t.Fatalf("Cancel(%s): %v", id, err)
	}
	return j
}

// count returns CountJobs(f) with zero entries removed.
func (e *env) count(f core.JobFilter) map[core.JobState]int64 {
	e.t.Helper()
	m, err := e.b.CountJobs(e.ctx, f)
	if err != nil {
		e.t.Fatalf("CountJobs(%+v): %v", f, err)
	}
	return nonZero(m)
}

// total is the number of jobs the backend holds.
func (e *env) total() int64 {
	e.t.Helper()
	var n int64
	for _, v := range e.count(core.JobFilter{}) {
		n += v
	}
	return n
}

// requireState checks a job's state.
func (e *env) requireState(id string, want core.JobState) core.Job {
	e.t.Helper()
	j := e.get(id)
	if j.State != want {
		e.t.Fatalf("job %s is %s, want %s (last error %q)", id, j.State, want, j.LastError)
	}
	return j
}

// nonZero drops zero counts, which backends may omit or report.
func nonZero[K comparable](m map[K]int64) map[K]int64 {
	out := map[K]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// requireErr fails unless err wraps want.
func requireErr(t testing.TB, err, want error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want one wrapping %v", what, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want an error wrapping %v", what, err, want)
	}
}

// requireTime fails unless got equals want.
func requireTime(t testing.TB, got, want time.Time, what string) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// requireEq fails unless got == want.
func requireEq[T comparable](t testing.TB, got, want T, what string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// snapshot is everything a fenced call must leave unchanged.
type snapshot struct {
	Job         core.Job
	Runs        []core.Run
	Checkpoints []core.Checkpoint
}

// snap records a job, its runs and its checkpoints.
func (e *env) snap(id string) snapshot {
	e.t.Helper()
	return snapshot{Job: e.get(id), Runs: e.runs(id), Checkpoints: e.checkpoints(id)}
}

// requireUnchanged fails when the job, runs or checkpoints differ from s.
func (e *env) requireUnchanged(s snapshot, what string) {
	e.t.Helper()
	now := e.snap(s.Job.ID)
	if d := diff(s, now); d != "" {
		e.t.Fatalf("%s changed the job: %s", what, d)
	}
}

// itoa formats i for case and message names.
func itoa(i int) string { return fmt.Sprint(i) }
