package e2e_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(bridgeChildEnv) != "" { // the subprocess of an executor-bridge scenario
		os.Exit(bridgeChild())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		stopE2ECluster()
		os.Exit(code)
	}))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// scenario is one named end-to-end check.
type scenario struct {
	name string
	run  func(e *env)
}

// env is what a scenario gets: a fresh backend on a manual clock and a
// client over it.
type env struct {
	*testing.T
	ctx     context.Context
	clock   *core.ManualClock
	factory backendFactory
	b       core.QueueBackend
	client  *boson.Client
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, f backendFactory) *env {
	return newEnvOn(t, f, f.New)
}

// newEnvOn is newEnv with the backend that open returns (one of f's
// constructors) instead of f.New's.
func newEnvOn(t *testing.T, f backendFactory, open func(testing.TB, core.Clock) core.QueueBackend) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	clock := core.NewManualClock(epoch)
	e := &env{T: t, ctx: ctx, clock: clock, factory: f}
	e.b = open(t, clock)
	e.client = e.newClient(e.b)
	return e
}

func (e *env) newClient(b core.QueueBackend) *boson.Client {
	c, err := boson.NewClient(b, boson.ClientOptions{Clock: e.clock, Logger: quiet, PollInterval: 20 * time.Millisecond})
	if err != nil {
		e.Fatal(err)
	}
	return c
}

// workerOptions are fast-polling options on the env's clock, with the
// periodic loops off (scenarios call Rescue and Cleanup themselves).
func (e *env) workerOptions() boson.WorkerOptions {
	return boson.WorkerOptions{
		Clock:             e.clock,
		Logger:            quiet,
		PollInterval:      10 * time.Millisecond,
		HeartbeatInterval: 10 * time.Millisecond,
		LeaseTTL:          time.Minute,
		RescueInterval:    -1,
		RetentionInterval: -1,
		ShutdownGrace:     10 * time.Second,
	}
}

// worker builds a worker on the env's backend; register handlers, then
// call e.start.
func (e *env) worker(mod func(*boson.WorkerOptions)) *boson.Worker {
	o := e.workerOptions()
	if mod != nil {
		mod(&o)
	}
	w, err := boson.NewWorker(e.b, o)
	if err != nil {
		e.Fatal(err)
	}
	return w
}

func (e *env) start(w *boson.Worker) {
	if err := w.Start(e.ctx); err != nil {
		e.Fatal(err)
	}
	e.Cleanup(func() { _ = w.Shutdown(context.Background()) })
}

func (e *env) must(err error) {
	e.Helper()
	if err != nil {
		e.Fatal(err)
	}
}

// eventually waits for cond, failing the scenario after a deadline.
func (e *env) eventually(what string, cond func() bool) {
	e.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (e *env) job(id string) core.Job {
	e.Helper()
	j, err := e.b.GetJob(e.ctx, id)
	if err != nil {
		e.Fatal(err)
	}
	return j
}

func (e *env) waitState(id string, st core.JobState) core.Job {
	e.Helper()
	var j core.Job
	e.eventually("job to be "+string(st), func() bool {
		j = e.job(id)
		return j.State == st
	})
	return j
}

// waitRetry waits until the job is queued again after attempt n, then moves
// the clock to its retry time.
func (e *env) waitRetry(id string, n int) {
	e.Helper()
	var j core.Job
	e.eventually("retry after attempt", func() bool {
		j = e.job(id)
		return j.State == core.StateQueued && j.Attempt == n
	})
	if j.RunAt.After(e.clock.Now()) {
		e.clock.Set(j.RunAt)
	}
}

func (e *env) runs(id string) []core.Run {
	e.Helper()
	rs, err := e.b.ListRuns(e.ctx, id)
	e.must(err)
	return rs
}

// recv receives from ch, failing the scenario when nothing arrives before
// the scenario's deadline.
func recv[T any](e *env, ch <-chan T) T {
	e.Helper()
	select {
	case v := <-ch:
		return v
	case <-e.ctx.Done():
		e.Fatalf("timed out waiting on a channel")
		panic("unreachable")
	}
}
