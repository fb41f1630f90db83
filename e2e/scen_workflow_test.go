package e2e_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var workflowScenarios = []scenario{
	{"checkpoint_replay_after_failure", func(e *env) {
		var bodyOne, bodyTwo, calls atomic.Int32
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			a, err := stepOne.Run(ctx, func(context.Context) (int, error) { bodyOne.Add(1); return n, nil })
			if err != nil {
				return 0, err
			}
			if calls.Add(1) == 1 {
				return 0, errors.New("crash between steps")
			}
			b, err := stepTwo.Run(ctx, func(context.Context) (int, error) { bodyTwo.Add(1); return a * 2, nil })
			return a + b, err
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 5, fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1)
		if v, err := h.Wait(e.ctx); err != nil || v != 15 {
			e.Fatalf("%v %v", v, err)
		}
		if bodyOne.Load() != 1 || bodyTwo.Load() != 1 {
			e.Fatalf("step bodies ran %d and %d times", bodyOne.Load(), bodyTwo.Load())
		}
		cps, err := e.b.Checkpoints(e.ctx, h.ID())
		e.must(err)
		if len(cps) != 2 || cps[0].Step != "step-one" || string(cps[0].Value) != "5" {
			e.Fatalf("checkpoints %+v", cps)
		}
	}},
	{"durable_sleep_releases_claim", func(e *env) {
		var runs atomic.Int32
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 1 })
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			runs.Add(1)
			v, err := stepOne.Run(ctx, func(context.Context) (int, error) { return n * 10, nil })
			if err != nil {
				return 0, err
			}
			if err := boson.SleepFor(ctx, "nap", time.Hour); err != nil {
				return 0, err
			}
			return v + 1, nil
		}))
		e.must(boson.Register(w, childTask, echo))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 4)
		e.must(err)
		j := e.waitState(h.ID(), core.StateSleeping)
		if !j.RunAt.Equal(e.clock.Now().Add(time.Hour)) || j.Attempt != 1 {
			e.Fatalf("sleeping job %+v", j)
		}
		// The claim is released: the single slot serves other work.
		other, err := boson.Spawn(e.ctx, e.client, childTask, 1)
		e.must(err)
		if _, err := other.Wait(e.ctx); err != nil {
			e.Fatal(err)
		}
		e.clock.Advance(time.Hour)
		if v, err := h.Wait(e.ctx); err != nil || v != 41 {
			e.Fatalf("%v %v", v, err)
		}
		rs := e.runs(h.ID())
		if runs.Load() != 2 || len(rs) != 2 || rs[0].Status != core.RunSleeping || e.job(h.ID()).Attempt != 1 {
			e.Fatalf("runs %d %+v", runs.Load(), rs)
		}
	}},
	{"sleep_until", func(e *env) {
		wake := e.clock.Now().Add(3 * time.Hour)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			if err := boson.SleepUntil(ctx, "until", wake); err != nil {
				return 0, err
			}
			return n, nil
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 2)
		e.must(err)
		if j := e.waitState(h.ID(), core.StateSleeping); !j.RunAt.Equal(wake) {
			e.Fatalf("run at %v", j.RunAt)
		}
		e.clock.Set(wake)
		_, err = h.Wait(e.ctx)
		e.must(err)
	}},
	{"cross_queue_await", func(e *env) {
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"parents", "children"} })
		var childRuns atomic.Int32
		e.must(boson.Register(w, childTask, func(_ context.Context, n int) (int, error) { childRuns.Add(1); return n * n, nil }))
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			info, _ := boson.Info(ctx)
			ch, err := boson.Spawn(ctx, e.client, childTask, n, boson.WithQueue("children"), boson.WithIdempotencyKey(info.JobID+"-sq"))
			if err != nil {
				return 0, err
			}
			v, err := boson.Await(ctx, ch)
			if err != nil {
				return 0, err
			}
			if info.Attempt == 1 {
				return 0, errors.New("fail after the await")
			}
			return v + 1, nil
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 6, boson.WithQueue("parents"), fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1)
		if v, err := h.Wait(e.ctx); err != nil || v != 37 {
			e.Fatalf("%v %v", v, err)
		}
		cps, _ := e.b.Checkpoints(e.ctx, h.ID())
		if childRuns.Load() != 1 || len(cps) != 1 || !strings.HasPrefix(cps[0].Step, "await-") {
			e.Fatalf("child runs %d, checkpoints %+v", childRuns.Load(), cps)
		}
	}},
	{"same_queue_await_rejected", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, childTask, echo))
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			ch, err := boson.Spawn(ctx, e.client, childTask, n)
			if err != nil {
				return 0, err
			}
			return boson.Await(ctx, ch)
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		_, err = h.Wait(e.ctx)
		if !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "same queue") {
			e.Fatalf("wait: %v", err)
		}
		if j := e.job(h.ID()); j.Attempt != 1 {
			e.Fatalf("rejection was retried: %+v", j)
		}
	}},
	{"await_failed_child", func(e *env) {
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"parents", "children"} })
		e.must(boson.Register(w, childTask, func(context.Context, int) (int, error) {
			return 0, boson.Permanent(errors.New("child broke"))
		}))
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			ch, err := boson.Spawn(ctx, e.client, childTask, n, boson.WithQueue("children"))
			if err != nil {
				return 0, err
			}
			v, err := boson.Await(ctx, ch)
			return v, boson.Permanent(err)
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithQueue("parents"))
		e.must(err)
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "child broke") {
			e.Fatalf("wait: %v", err)
		}
	}},
}
