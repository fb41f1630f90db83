package boson_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var stepGuarded = boson.NewStep[int]("guarded")

// TestStepRefusesDoneContext: a step whose context is done does not start
// its body, even when the job's checkpoints are loaded already (so that
// no backend call would notice the context).
func TestStepRefusesDoneContext(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	ran := make(chan bool, 1)
	stepErr := make(chan error, 1)
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		if _, err := stepA.Run(ctx, func(context.Context) (int, error) { return 1, nil }); err != nil {
			return addOut{}, err
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		called := false
		_, err := stepGuarded.Run(done, func(context.Context) (int, error) { called = true; return 2, nil })
		ran <- called
		stepErr <- err
		return addOut{}, boson.Permanent(errors.New("stop"))
	})
	e.start(w)
	if _, err := boson.Spawn(ctx, e.client, addTask, addIn{}); err != nil {
		t.Fatal(err)
	}
	if <-ran {
		t.Error("the step body ran although its context was done")
	}
	if err := <-stepErr; !errors.Is(err, context.Canceled) {
		t.Errorf("step error %v, want context.Canceled", err)
	}
}

// TestStepRefusesLostLease: once a fenced write of the attempt was refused
// (the job was rescued away), a later step does not start its body, even
// with a context that is not cancelled.
func TestStepRefusesLostLease(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) {
		o.LeaseTTL = time.Hour
		o.HeartbeatInterval = time.Hour / 2 // no heartbeat during the test
		o.Concurrency = 1
	})
	gate := make(chan struct{})
	ran := make(chan bool, 1)
	stepErr := make(chan error, 2)
	var calls int
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		calls++
		if calls > 1 {
			return addOut{Sum: 3}, nil
		}
		<-gate
		live := context.WithoutCancel(ctx)
		_, err := stepA.Run(live, func(context.Context) (int, error) { return 1, nil })
		stepErr <- err // refused by the backend's fence
		called := false
		_, err = stepGuarded.Run(live, func(context.Context) (int, error) { called = true; return 2, nil })
		stepErr <- err
		ran <- called
		<-ctx.Done()
		return addOut{}, ctx.Err()
	})
	e.start(w)
	h, err := boson.Spawn(ctx, e.client, addTask, addIn{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(h.ID(), core.StateRunning)
	e.clock.Advance(2 * time.Hour)
	if r, err := e.b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil || r.Requeued != 1 {
		t.Fatalf("rescue %+v %v", r, err)
	}
	close(gate)
	for range 2 {
		if err := <-stepErr; !errors.Is(err, core.ErrLeaseLost) {
			t.Errorf("step error %v, want core.ErrLeaseLost", err)
		}
	}
	if <-ran {
		t.Error("a step body ran after the attempt's lease was lost")
	}
	if out, err := h.Wait(ctx); err != nil || out.Sum != 3 {
		t.Fatalf("got %+v %v", out, err)
	}
}
