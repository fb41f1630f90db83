package e2e_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var cancelScenarios = []scenario{
	{"cancel_queued_job", func(e *env) {
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		e.must(h.Cancel(e.ctx, "not needed"))
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		_, err = h.Wait(e.ctx)
		var te *boson.TaskError
		if !errors.As(err, &te) || !errors.Is(err, boson.ErrTaskCancelled) || te.Message != "not needed" {
			e.Fatalf("wait: %v", err)
		}
		e.must(h.Cancel(e.ctx, "again")) // cancelling twice is a no-op
		if j := e.job(h.ID()); j.Attempt != 0 || j.LastError != "not needed" {
			e.Fatalf("job %+v", j)
		}
	}},
	{"cancel_missing_job", func(e *env) {
		if _, err := e.client.Cancel(e.ctx, core.NewID(e.clock.Now()), ""); !errors.Is(err, core.ErrNotFound) {
			e.Fatalf("cancel: %v", err)
		}
	}},
	{"cancel_running_job", func(e *env) {
		started := make(chan struct{})
		stopped := make(chan error, 1)
		var calls atomic.Int32
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			if calls.Add(1) > 1 {
				return n, nil // the manual retry below
			}
			close(started)
			<-ctx.Done()
			stopped <- context.Cause(ctx)
			return 0, ctx.Err()
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		recv(e, started)
		e.must(h.Cancel(e.ctx, "user asked"))
		if err := recv(e, stopped); !errors.Is(err, core.ErrLeaseLost) {
			e.Fatalf("handler context cause: %v", err)
		}
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskCancelled) {
			e.Fatalf("wait: %v", err)
		}
		e.eventually("cancelled metric", func() bool { return w.Metrics().Total.Cancelled == 1 })
		e.must(h.Retry(e.ctx)) // a cancelled task may be retried
		if v, err := h.Wait(e.ctx); err != nil || v != 1 {
			e.Fatalf("after retry: %v %v", v, err)
		}
	}},
	{"cancel_finished_job_refused", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		_, err = h.Wait(e.ctx)
		e.must(err)
		if err := h.Cancel(e.ctx, ""); !errors.Is(err, core.ErrInvalidState) {
			e.Fatalf("cancel: %v", err)
		}
	}},
	{"max_delay_deadline", func(e *env) {
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithCancellation(core.CancellationPolicy{MaxDelay: time.Minute}))
		e.must(err)
		e.clock.Advance(time.Minute)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		_, err = h.Wait(e.ctx)
		if !errors.Is(err, boson.ErrTaskCancelled) || !contains(err.Error(), "max delay") {
			e.Fatalf("wait: %v", err)
		}
		if j := e.job(h.ID()); j.Attempt != 0 {
			e.Fatalf("started anyway: %+v", j)
		}
	}},
	{"max_duration_deadline", func(e *env) {
		started := make(chan struct{})
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			close(started)
			<-ctx.Done()
			return 0, ctx.Err()
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithCancellation(core.CancellationPolicy{MaxDuration: 10 * time.Minute}))
		e.must(err)
		recv(e, started)
		e.clock.Advance(10 * time.Minute) // the next heartbeat cancels the job
		_, err = h.Wait(e.ctx)
		if !errors.Is(err, boson.ErrTaskCancelled) || !contains(err.Error(), "max duration") {
			e.Fatalf("wait: %v", err)
		}
		e.eventually("cancelled metric", func() bool { return w.Metrics().Total.Cancelled == 1 })
	}},
}
