package boson_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

type addIn struct{ A, B int }
type addOut struct{ Sum int }

var addTask = boson.NewTask[addIn, addOut]("add")

func TestSpawnAndWait(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	if err := boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		return addOut{Sum: in.A + in.B}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	h, err := boson.Spawn(ctx, e.client, addTask, addIn{20, 22})
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Wait(ctx)
	if err != nil || out.Sum != 42 {
		t.Fatalf("got %+v, %v", out, err)
	}
	m := w.Metrics()
	eventually(t, "completed metric", func() bool { return w.Metrics().Total.Completed == 1 })
	if m.Total.Claimed != 1 || m.Total.Executions != 1 {
		t.Fatalf("metrics %+v", m.Total)
	}
}

func TestRetryUntilSuccess(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	var calls atomic.Int32
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		if calls.Add(1) < 3 {
			return addOut{}, errors.New("transient")
		}
		return addOut{Sum: in.A + in.B}, nil
	})
	e.start(w)
	h, err := boson.Spawn(ctx, e.client, addTask, addIn{1, 2}, boson.WithRetry(core.RetryPolicy{Initial: time.Second, Factor: 2, Max: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		eventually(t, "failed attempt", func() bool {
			j := e.job(h.ID())
			return j.State == core.StateQueued && j.Attempt == attempt
		})
		j := e.job(h.ID())
		if j.LastError != "transient" {
			t.Fatalf("last error %q", j.LastError)
		}
		e.clock.Set(j.RunAt)
	}
	out, err := h.Wait(ctx)
	if err != nil || out.Sum != 3 {
		t.Fatalf("got %+v, %v", out, err)
	}
	runs, _ := e.b.ListRuns(ctx, h.ID())
	if len(runs) != 3 {
		t.Fatalf("runs %d", len(runs))
	}
}

func TestPermanentAndPanic(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		if in.A == 0 {
			panic("boom")
		}
		return addOut{}, boson.Permanent(errors.New("bad input"))
	})
	e.start(w)
	h1, _ := boson.Spawn(ctx, e.client, addTask, addIn{1, 0})
	_, err := h1.Wait(ctx)
	if !errors.Is(err, boson.ErrTaskFailed) || !strings.Contains(err.Error(), "bad input") {
		t.Fatalf("permanent: %v", err)
	}
	if j := e.job(h1.ID()); j.Attempt != 1 {
		t.Fatalf("attempt %d", j.Attempt)
	}
	h2, _ := boson.Spawn(ctx, e.client, addTask, addIn{0, 0}, boson.WithMaxAttempts(1))
	_, err = h2.Wait(ctx)
	if !errors.Is(err, boson.ErrTaskFailed) || !strings.Contains(err.Error(), "panic: boom") || !strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("panic: %v", err)
	}
}
