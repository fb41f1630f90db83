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

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestStepReplayAfterFailure(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	var bodies, calls atomic.Int32
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		v, err := stepA.Run(ctx, func(context.Context) (int, error) {
			bodies.Add(1)
			return 40, nil
		})
		if err != nil {
			return addOut{}, err
		}
		if calls.Add(1) == 1 {
			return addOut{}, errors.New("after the step")
		}
		return addOut{Sum: v + 2}, nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{})
	eventually(t, "retry", func() bool { j := e.job(h.ID()); return j.State == core.StateQueued && j.Attempt == 1 })
	e.clock.Set(e.job(h.ID()).RunAt)
	out, err := h.Wait(ctx)
	if err != nil || out.Sum != 42 {
		t.Fatalf("got %+v %v", out, err)
	}
	if bodies.Load() != 1 {
		t.Fatalf("step body ran %d times", bodies.Load())
	}
}

func TestDurableSleep(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	var runs atomic.Int32
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		runs.Add(1)
		if err := boson.SleepFor(ctx, "nap", time.Hour); err != nil {
			return addOut{}, err
		}
		return addOut{Sum: 7}, nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{})
	j := e.waitState(h.ID(), core.StateSleeping)
	if !j.RunAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Fatalf("run at %v", j.RunAt)
	}
	eventually(t, "suspended metric and free slot", func() bool { return w.Metrics().Total.Suspended == 1 })
	e.clock.Advance(30 * time.Minute)
	time.Sleep(30 * time.Millisecond) // several poll periods: must stay asleep
	if st := e.job(h.ID()).State; st != core.StateSleeping {
		t.Fatalf("state %s", st)
	}
	e.clock.Advance(30 * time.Minute)
	out, err := h.Wait(ctx)
	if err != nil || out.Sum != 7 || runs.Load() != 2 {
		t.Fatalf("got %+v %v runs %d", out, err, runs.Load())
	}
	if j := e.job(h.ID()); j.Attempt != 1 {
		t.Fatalf("attempt %d", j.Attempt)
	}
}

var childTask = boson.NewTask[int, int]("child")

func TestAwaitCrossQueueAndSameQueue(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"parents", "children"} })
	_ = boson.Register(w, childTask, func(ctx context.Context, in int) (int, error) { return in * 2, nil })
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		info, _ := boson.Info(ctx)
		q := "children"
		if in.B == 1 {
			q = info.Queue
		}
		ch, err := boson.Spawn(ctx, e.client, childTask, in.A, boson.WithQueue(q), boson.WithIdempotencyKey(info.JobID+"-child"))
		if err != nil {
			return addOut{}, err
		}
		v, err := boson.Await(ctx, ch)
		return addOut{Sum: v}, err
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{A: 21}, boson.WithQueue("parents"))
	out, err := h.Wait(ctx)
	if err != nil || out.Sum != 42 {
		t.Fatalf("got %+v %v", out, err)
	}
	cps, _ := e.b.Checkpoints(ctx, h.ID())
	if len(cps) != 1 || !strings.HasPrefix(cps[0].Step, "await-") {
		t.Fatalf("checkpoints %+v", cps)
	}
	h2, _ := boson.Spawn(ctx, e.client, addTask, addIn{A: 1, B: 1}, boson.WithQueue("parents"))
	_, err = h2.Wait(ctx)
	if !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "same queue") {
		t.Fatalf("same queue: %v", err)
	}
}

func TestSnooze(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	var runs atomic.Int32
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		if runs.Add(1) == 1 {
			return addOut{}, boson.Snooze(time.Minute)
		}
		return addOut{Sum: 1}, nil
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{})
	e.waitState(h.ID(), core.StateSleeping)
	e.clock.Advance(time.Minute)
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if j := e.job(h.ID()); j.Attempt != 1 {
		t.Fatalf("attempt %d", j.Attempt)
	}
}
