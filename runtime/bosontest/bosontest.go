// Package bosontest helps users test their own task handlers: run one
// handler directly, with working steps, sleeps and awaits, and inspect what
// it (or any code under test) spawned through the harness's client.
//
//	h := bosontest.New(t)
//	res := bosontest.Run(ctx, h, SendInvoice, handler, Invoice{ID: 7})
//	if res.Err != nil { ... }
//	emails := bosontest.SpawnedOf(t, h, SendEmail) // inputs, in spawn order
//
// No worker runs: spawned tasks stay queued until the test completes them
// with [Harness.Complete] (which also lets an awaiting handler continue).
package bosontest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Harness holds the in-memory state of a test: the clock, the spawned
// tasks and every job's checkpoints.
type Harness struct {
	// Clock decides sleeps and delays; move it to pass a durable sleep.
	Clock *core.ManualClock
	// Client spawns into the harness; hand it to the code under test.
	Client *boson.Client
	rec    *recorder
}

// New returns an empty harness whose clock starts at 2000-01-01 UTC.
func New(t testing.TB) *Harness {
	clock := core.NewManualClock(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := newRecorder(clock)
	c, err := boson.NewClient(rec, boson.ClientOptions{Clock: clock, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &Harness{Clock: clock, Client: c, rec: rec}
}

// Result is the outcome of one direct run.
type Result[Out any] struct {
	// JobID is the id of the job the handler ran as; pass it to Again to
	// run the same job again (replaying its steps).
	JobID string
	// Output is the handler's output when Err is nil.
	Output Out
	// Err is the handler's error (see boson.IsPermanent and boson.IsSuspend).
	Err error
	// Suspended reports that the handler returned a durable sleep; WakeAt
	// is its wake time.
	Suspended bool
	WakeAt    time.Time
}

// Run runs fn once for a new job of task t with input in, as a worker would
// on a first attempt, and returns its outcome. opts apply as to a spawn
// (headers, actor, queue...).
func Run[In, Out any](ctx context.Context, h *Harness, t boson.Task[In, Out], fn func(context.Context, In) (Out, error), in In, opts ...boson.SpawnOption) Result[Out] {
	// A throwaway spawn builds the job exactly as the client would store
	// it (queue, headers, actor, task-config defaults).
	j, err := h.scratch(ctx, t.Request(in, opts...))
	if err != nil {
		return Result[Out]{Err: err}
	}
	return runJob(ctx, h, j, fn)
}

// Again runs fn for the job of an earlier result once more, as the next
// attempt: committed steps replay and a sleep whose wake time has come (see
// Harness.Clock) passes.
func Again[In, Out any](ctx context.Context, h *Harness, t boson.Task[In, Out], fn func(context.Context, In) (Out, error), prev Result[Out]) Result[Out] {
	j, err := h.rec.GetJob(ctx, prev.JobID)
	if err != nil {
		return Result[Out]{JobID: prev.JobID, Err: err}
	}
	return runJob(ctx, h, j, fn)
}

func runJob[In, Out any](ctx context.Context, h *Harness, j core.Job, fn func(context.Context, In) (Out, error)) Result[Out] {
	j.State = core.StateRunning
	j.Attempt++
	j.Lease = core.Lease{JobID: j.ID, WorkerID: "bosontest", Token: j.Lease.Token + 1, ExpiresAt: h.Clock.Now().Add(time.Hour)}
	h.rec.put(j)
	exec := boson.ExecuteFunc(func(ctx context.Context, ex *boson.Execution) ([]byte, error) {
		var in In
		if err := json.Unmarshal(ex.Job.Payload, &in); err != nil {
			return nil, boson.Permanent(err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
	res := Result[Out]{JobID: j.ID}
	b, err := boson.ExecuteOnce(ctx, h.rec, j, exec, h.Clock)
	if err != nil {
		res.Err = err
		var s *boson.SuspendError
		if errors.As(err, &s) {
			res.Suspended, res.WakeAt = true, s.Until
		}
		return res
	}
	res.Err = json.Unmarshal(b, &res.Output)
	return res
}

// scratch builds the job a spawn of spec would store, without storing it.
func (h *Harness) scratch(ctx context.Context, spec boson.Request) (core.Job, error) {
	tmp := newRecorder(h.Clock)
	h.rec.mu.Lock()
	for k, v := range h.rec.configs {
		tmp.configs[k] = v
	}
	h.rec.mu.Unlock()
	c, err := boson.NewClient(tmp, boson.ClientOptions{Clock: h.Clock})
	if err != nil {
		return core.Job{}, err
	}
	s, err := c.SpawnRequests(ctx, spec)
	if err != nil {
		return core.Job{}, err
	}
	return s[0].Job, nil
}

// Spawned returns every task spawned through the harness's client, in
// spawn order.
func (h *Harness) Spawned() []core.Job { return h.rec.spawned() }

// SpawnedOf returns the decoded inputs of the tasks of t spawned through
// the harness's client, in spawn order.
func SpawnedOf[In, Out any](tb testing.TB, h *Harness, t boson.Task[In, Out]) []In {
	tb.Helper()
	var out []In
	for _, j := range h.rec.spawned() {
		if j.Task != t.Name() {
			continue
		}
		var in In
		if err := json.Unmarshal(j.Payload, &in); err != nil {
			tb.Fatalf("bosontest: decode input of %s %s: %v", j.Task, j.ID, err)
		}
		out = append(out, in)
	}
	return out
}

// Complete marks a spawned job as succeeded with result (encoded as JSON),
// so that a handler awaiting it continues.
func (h *Harness) Complete(jobID string, result any) error {
	b, err := json.Marshal(result)
	if err != nil {
		return err
	}
	return h.rec.setState(jobID, core.StateSucceeded, b, "")
}

// Fail marks a spawned job as failed with message.
func (h *Harness) Fail(jobID, message string) error {
	return h.rec.setState(jobID, core.StateFailed, nil, message)
}

// Checkpoints returns a job's committed checkpoints by stored name
// ("step-<name>", "sleep-<name>", "await-<job id>").
func (h *Harness) Checkpoints(jobID string) map[string][]byte {
	cps, _ := h.rec.Checkpoints(context.Background(), jobID)
	out := make(map[string][]byte, len(cps))
	for _, c := range cps {
		out[c.Step] = c.Value
	}
	return out
}
