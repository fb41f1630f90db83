package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testCheckpoint: first write wins; checkpoints outlive retries, rescues
// and sleeps, and leave with their job.
func testCheckpoint(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"FirstWriteWins":     checkpointFirstWins,
		"SurviveRetry":       checkpointSurviveRetry,
		"SurviveRescue":      checkpointSurviveRescue,
		"SurviveSleep":       checkpointSurviveSleep,
		"SurviveManualRetry": checkpointSurviveManualRetry,
		"UnknownJob":         checkpointUnknown,
		"DeletedByCleanup":   checkpointCleanup,
		"EmptyValue":         checkpointEmptyValue,
	})
}

func (e *env) save(l core.Lease, step, value string) string {
	e.t.Helper()
	got, err := e.b.SaveCheckpoint(e.ctx, l, step, []byte(value))
	if err != nil {
		e.t.Fatalf("SaveCheckpoint(%s, %s): %v", l.JobID, step, err)
	}
	return string(got)
}

// requireCheckpoints checks a job's checkpoints, in step order.
func (e *env) requireCheckpoints(id string, want ...[2]string) {
	e.t.Helper()
	cs := e.checkpoints(id)
	if len(cs) != len(want) {
		e.t.Fatalf("job %s has %d checkpoints, want %d", id, len(cs), len(want))
	}
	for i, c := range cs {
		if c.JobID != id || c.Step != want[i][0] || string(c.Value) != want[i][1] {
			e.t.Fatalf("checkpoint %d = (%s, %s, %q), want (%s, %s, %q)", i, c.JobID, c.Step, c.Value, id, want[i][0], want[i][1])
		}
	}
}

func checkpointFirstWins(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	requireEq(e.t, e.save(j.Lease, "charge", "tx-1"), "tx-1", "first write")
	e.advance(time.Second)
	requireEq(e.t, e.save(j.Lease, "charge", "tx-2"), "tx-1", "second write returns the first value")
	requireEq(e.t, e.save(j.Lease, "beta", "b"), "b", "another step")
	requireEq(e.t, e.save(j.Lease, "alpha", "a"), "a", "a third step")
	e.requireCheckpoints(j.ID, [2]string{"alpha", "a"}, [2]string{"beta", "b"}, [2]string{"charge", "tx-1"})
	cs := e.checkpoints(j.ID)
	requireTime(e.t, cs[2].CreatedAt, e.now().Add(-time.Second), "created at of the first write")
}

func checkpointSurviveRetry(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.save(j.Lease, "s", "v1")
	e.fail(core.Failure{Lease: j.Lease, Error: "retry me"})
	c := e.claimOne("q")
	requireEq(e.t, e.save(c.Lease, "s", "v2"), "v1", "write after a retry")
	e.requireCheckpoints(j.ID, [2]string{"s", "v1"})
}

func checkpointSurviveRescue(e *env) {
	j := e.claimWithTTL(time.Second)
	e.save(j.Lease, "s", "v1")
	e.advance(time.Second)
	e.rescue(10)
	e.requireCheckpoints(j.ID, [2]string{"s", "v1"})
	c := e.claimOne("q")
	requireEq(e.t, e.save(c.Lease, "s", "v2"), "v1", "write after a rescue")
}

func checkpointSurviveSleep(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.save(j.Lease, "s", "v1")
	e.sleep(j.Lease, e.now().Add(time.Second))
	e.requireCheckpoints(j.ID, [2]string{"s", "v1"})
	e.advance(time.Second)
	c := e.claimOne("q")
	requireEq(e.t, e.save(c.Lease, "s", "v2"), "v1", "write after a sleep")
}

func checkpointSurviveManualRetry(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.save(j.Lease, "s", "v1")
	e.fail(core.Failure{Lease: j.Lease, Error: "x", Terminal: true})
	if _, err := e.b.Retry(e.ctx, j.ID); err != nil {
		e.t.Fatalf("Retry: %v", err)
	}
	c := e.claimOne("q")
	requireEq(e.t, e.save(c.Lease, "s", "v2"), "v1", "write after a manual retry")
}

func checkpointUnknown(e *env) {
	_, err := e.b.Checkpoints(e.ctx, core.NewID(e.now()))
	requireErr(e.t, err, core.ErrNotFound, "Checkpoints of an unknown job")
	j := e.enqueueOne(req("q", "t"))
	if cs := e.checkpoints(j.ID); len(cs) != 0 {
		e.t.Fatalf("a new job has %d checkpoints", len(cs))
	}
}

func checkpointCleanup(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.save(j.Lease, "s", "v")
	e.complete(j.Lease, nil)
	e.advance(time.Minute)
	if n, err := e.b.Cleanup(e.ctx, core.CleanupRequest{FinishedBefore: e.now(), Limit: 10}); err != nil || n != 1 {
		e.t.Fatalf("Cleanup = %d, %v; want 1", n, err)
	}
	_, err := e.b.Checkpoints(e.ctx, j.ID)
	requireErr(e.t, err, core.ErrNotFound, "Checkpoints of a cleaned-up job")
}

func checkpointEmptyValue(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	requireEq(e.t, e.save(j.Lease, "s", ""), "", "empty first value")
	requireEq(e.t, e.save(j.Lease, "s", "later"), "", "a write after an empty first value")
	e.requireCheckpoints(j.ID, [2]string{"s", ""})
}
