package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testRateLimits: a stored task config's MaxInFlight and
// MaxEnqueuePerSecond refuse whole batches with ErrRateLimited.
func testRateLimits(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"MaxInFlight":                rateMaxInFlight,
		"MaxInFlightCountsSleeping":  rateInFlightSleeping,
		"MaxInFlightReuseFree":       rateInFlightReuse,
		"MaxEnqueuePerSecond":        rateEnqueuePerSecond,
		"MaxEnqueuePerSecondPerTask": rateEPSPerTask,
	})
}

func (e *env) putTaskConfig(c core.TaskConfig) {
	e.t.Helper()
	if err := e.b.PutTaskConfig(e.ctx, c); err != nil {
		e.t.Fatalf("PutTaskConfig(%+v): %v", c, err)
	}
}

func (e *env) requireRateLimited(what string, reqs ...core.EnqueueRequest) {
	e.t.Helper()
	before := e.total()
	_, err := e.b.Enqueue(e.ctx, reqs)
	requireErr(e.t, err, core.ErrRateLimited, what)
	requireEq(e.t, e.total(), before, "jobs after a refused batch")
}

func rateMaxInFlight(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxInFlight: 3})
	e.enqueue(req("q", "t"), req("q", "t"))
	e.requireRateLimited("batch of 2 with 1 slot left", req("q", "t"), req("q2", "t"))
	e.enqueueOne(req("q2", "t")) // the limit spans queues
	e.requireRateLimited("4th active job", req("q", "t"))
	e.enqueueOne(req("q", "other")) // other tasks are not limited

	// Running jobs stay active; finishing one frees a slot.
	j := e.claimOne("q")
	e.requireRateLimited("4th active job while one runs", req("q", "t"))
	e.complete(j.Lease, nil)
	e.enqueueOne(req("q", "t"))
	e.requireRateLimited("4th active job after a refill", req("q", "t"))
}

func rateInFlightSleeping(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxInFlight: 1})
	j := e.enqueueClaim(req("q", "t"))
	if err := e.b.Sleep(e.ctx, j.Lease, e.now().Add(time.Hour)); err != nil {
		e.t.Fatalf("Sleep: %v", err)
	}
	e.requireRateLimited("second job while the first sleeps", req("q", "t"))
	e.cancel(j.ID, "")
	e.enqueueOne(req("q", "t"))
}

func rateInFlightReuse(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxInFlight: 1})
	first := e.enqueueOne(keyed("q", "k", "p"))
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{keyed("q", "k", "p")})
	if err != nil {
		e.t.Fatalf("reused enqueue at the in-flight limit: %v", err)
	}
	if !res[0].Reused || res[0].Job.ID != first.ID {
		e.t.Fatal("reused enqueue at the limit did not return the first job")
	}
}

func rateEnqueuePerSecond(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxEnqueuePerSecond: 3})
	e.enqueue(req("q", "t"), req("q", "t"))
	e.requireRateLimited("batch of 2 with 1 left in the second", req("q", "t"), req("q", "t"))
	e.advance(500 * time.Millisecond)
	e.enqueueOne(req("q", "t"))
	e.requireRateLimited("4th job within one second", req("q", "t"))

	// One second after the first two, they leave the window (now-1s, now].
	e.advance(500 * time.Millisecond)
	e.enqueue(req("q", "t"), req("q", "t"))
	e.requireRateLimited("4th job in the new window", req("q", "t"))
	e.advance(time.Second)
	e.enqueue(req("q", "t"), req("q", "t"), req("q", "t"))
	requireEq(e.t, e.total(), 8, "jobs stored")
}

func rateEPSPerTask(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxEnqueuePerSecond: 1})
	e.enqueueOne(req("q", "t"))
	e.requireRateLimited("2nd job within one second", req("q", "t"))
	e.enqueue(req("q", "u"), req("q", "u"), req("q", "u"))
	e.advance(time.Second)
	e.enqueueOne(req("q", "t"))
}
