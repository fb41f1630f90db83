package conformance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// Shared helpers of the flow-control areas (FlowLimits, FlowRates,
// FlowSequence, FlowUnique, FlowReads, FlowExact). Each area runs only
// when the harness declares Capabilities.Flow; the Capabilities area
// checks the declaration itself.

// flowCases runs cs when h declares Flow, and nothing otherwise.
func flowCases(h Harness, cs map[string]func(e *env)) map[string]func(e *env) {
	if !h.Capabilities.Flow {
		return nil
	}
	return cs
}

// flow returns the backend's core.FlowController.
func (e *env) flow() core.FlowController {
	e.t.Helper()
	fc, ok := e.b.(core.FlowController)
	if !ok {
		e.t.Fatalf("the harness declares Flow but %T does not implement core.FlowController", e.b)
	}
	return fc
}

// runningByKey calls RunningByKey and requires success.
func (e *env) runningByKey(task string, limit int) []core.KeyCount {
	e.t.Helper()
	kc, err := e.flow().RunningByKey(e.ctx, task, limit)
	if err != nil {
		e.t.Fatalf("RunningByKey(%s, %d): %v", task, limit, err)
	}
	return kc
}

// running is the number of running jobs matching f, by CountJobs.
func (e *env) running(f core.JobFilter) int64 {
	e.t.Helper()
	return e.count(f)[core.StateRunning]
}

// lreq is a request of task in queue with limit key key.
func lreq(queue, task, key string) core.EnqueueRequest {
	r := req(queue, task)
	r.LimitKey = key
	return r
}

// sreq is a request of task in queue in sequence seq.
func sreq(queue, task, seq string) core.EnqueueRequest {
	r := req(queue, task)
	r.SequenceKey = seq
	return r
}

// named sets a request's payload to a name, for readable failures.
func named(r core.EnqueueRequest, name string) core.EnqueueRequest {
	r.Payload = []byte(fmt.Sprintf("%q", name))
	return r
}

// describe names jobs by their payloads, for failure messages.
func describe(jobs []core.Job) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = j.ID + "=" + string(j.Payload)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// claimExactly claims up to limit jobs of queue and requires exactly the
// jobs want, in any order.
func (e *env) claimExactly(queue string, limit int, what string, want ...core.Job) []core.Job {
	e.t.Helper()
	got := e.claim(queue, limit)
	g, w := ids(got), ids(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		e.t.Fatalf("%s: Claim(%s, %d) returned %s, want %s", what, queue, limit, describe(got), describe(want))
	}
	return got
}

// sleepJob parks a running job until now+d.
func (e *env) sleepJob(l core.Lease, d time.Duration) {
	e.t.Helper()
	if err := e.b.Sleep(e.ctx, l, e.now().Add(d)); err != nil {
		e.t.Fatalf("Sleep(%s): %v", l.JobID, err)
	}
}

// byID finds a job by id in jobs.
func byID(jobs []core.Job, id string) (core.Job, bool) {
	for _, j := range jobs {
		if j.ID == id {
			return j, true
		}
	}
	return core.Job{}, false
}
