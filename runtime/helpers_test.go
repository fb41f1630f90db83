package boson_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type env struct {
	t      *testing.T
	clock  *core.ManualClock
	b      *mem.Backend
	client *boson.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clock := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := mem.New(mem.Options{Clock: clock, Logger: quiet})
	t.Cleanup(func() { _ = b.Close() })
	c, err := boson.NewClient(b, boson.ClientOptions{Clock: clock, Logger: quiet, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, clock: clock, b: b, client: c}
}

// worker builds a worker with fast polling and the env's clock; adjust
// options with mod.
func (e *env) worker(mod func(*boson.WorkerOptions)) *boson.Worker {
	e.t.Helper()
	o := boson.WorkerOptions{
		Clock:             e.clock,
		Logger:            quiet,
		PollInterval:      10 * time.Millisecond,
		HeartbeatInterval: 10 * time.Millisecond,
		LeaseTTL:          time.Minute,
		RescueInterval:    -1,
		RetentionInterval: -1,
		ShutdownGrace:     5 * time.Second,
	}
	if mod != nil {
		mod(&o)
	}
	w, err := boson.NewWorker(e.b, o)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func (e *env) start(w *boson.Worker) {
	e.t.Helper()
	if err := w.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
}

// eventually waits for cond with a deadline, failing the test when it
// never holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (e *env) job(id string) core.Job {
	e.t.Helper()
	j, err := e.b.GetJob(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e *env) waitState(id string, st core.JobState) core.Job {
	e.t.Helper()
	var j core.Job
	eventually(e.t, "job "+id+" to be "+string(st), func() bool {
		j = e.job(id)
		return j.State == st
	})
	return j
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
