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

func contains(s, sub string) bool { return strings.Contains(s, sub) }

var fastRetry = boson.WithRetry(core.RetryPolicy{Initial: time.Second, Factor: 2, Max: time.Minute})

var retryScenarios = []scenario{
	{"retry_then_success", func(e *env) {
		fn, calls := failTimes(2)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, fn))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 9, fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1)
		e.waitRetry(h.ID(), 2)
		if v, err := h.Wait(e.ctx); err != nil || v != 9 || calls.Load() != 3 {
			e.Fatalf("got %v %v after %d calls", v, err, calls.Load())
		}
	}},
	{"retry_backoff_grows", func(e *env) {
		fn, _ := failTimes(2)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, fn))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1,
			boson.WithRetry(core.RetryPolicy{Initial: 10 * time.Second, Factor: 3, Max: time.Hour, Jitter: 0}))
		e.must(err)
		var delays []time.Duration
		for n := 1; n <= 2; n++ {
			var j core.Job
			e.eventually("retry", func() bool { j = e.job(h.ID()); return j.State == core.StateQueued && j.Attempt == n })
			delays = append(delays, j.RunAt.Sub(e.clock.Now()))
			e.clock.Set(j.RunAt)
		}
		// Default jitter shortens a delay by at most 10%.
		if delays[0] > 10*time.Second || delays[0] < 9*time.Second || delays[1] > 30*time.Second || delays[1] < 27*time.Second {
			e.Fatalf("delays %v", delays)
		}
		_, err = h.Wait(e.ctx)
		e.must(err)
	}},
	{"retry_exhaustion", func(e *env) {
		fn, calls := failTimes(100)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, fn))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithMaxAttempts(3), fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1)
		e.waitRetry(h.ID(), 2)
		_, err = h.Wait(e.ctx)
		var te *boson.TaskError
		if !errors.As(err, &te) || te.State != core.StateFailed || !contains(te.Message, "transient failure") || calls.Load() != 3 {
			e.Fatalf("wait: %v after %d calls", err, calls.Load())
		}
	}},
	{"retry_run_count", func(e *env) {
		fn, _ := failTimes(2)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, fn))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1)
		e.waitRetry(h.ID(), 2)
		_, err = h.Wait(e.ctx)
		e.must(err)
		rs := e.runs(h.ID())
		want := []core.RunStatus{core.RunFailed, core.RunFailed, core.RunSucceeded}
		if len(rs) != 3 {
			e.Fatalf("runs %+v", rs)
		}
		for i, r := range rs {
			if r.Status != want[i] || r.Attempt != i+1 {
				e.Fatalf("run %d: %+v", i, r)
			}
		}
	}},
	{"handler_failure_terminal", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(context.Context, int) (int, error) {
			return 0, boson.Permanent(errors.New("bad request"))
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "bad request") {
			e.Fatalf("wait: %v", err)
		}
		if j := e.job(h.ID()); j.Attempt != 1 || j.MaxAttempts != core.DefaultMaxAttempts {
			e.Fatalf("job %+v", j)
		}
	}},
	{"panic_recorded_with_stack", func(e *env) {
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(context.Context, int) (int, error) { panic("kaboom") }))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, boson.WithMaxAttempts(1))
		e.must(err)
		_, err = h.Wait(e.ctx)
		if !errors.Is(err, boson.ErrTaskFailed) {
			e.Fatalf("wait: %v", err)
		}
		j := e.job(h.ID())
		if !contains(j.LastError, "panic: kaboom") || !contains(j.LastError, "goroutine") {
			e.Fatalf("last error %q", j.LastError)
		}
		if rs := e.runs(h.ID()); len(rs) != 1 || rs[0].Status != core.RunFailed || !contains(rs[0].Error, "kaboom") {
			e.Fatalf("runs %+v", rs)
		}
	}},
	{"manual_retry_after_failure", func(e *env) {
		fn, _ := failTimes(1)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, fn))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 4, boson.WithMaxAttempts(1))
		e.must(err)
		if _, err := h.Wait(e.ctx); !errors.Is(err, boson.ErrTaskFailed) {
			e.Fatalf("first: %v", err)
		}
		e.must(h.Retry(e.ctx))
		if v, err := h.Wait(e.ctx); err != nil || v != 4 {
			e.Fatalf("after retry: %v %v", v, err)
		}
		if j := e.job(h.ID()); j.Attempt != 2 || j.MaxAttempts != 2 {
			e.Fatalf("job %+v", j)
		}
	}},
	{"snooze_keeps_attempt", func(e *env) {
		var n atomic.Int32
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(_ context.Context, in int) (int, error) {
			if n.Add(1) == 1 {
				return 0, boson.Snooze(time.Minute)
			}
			return in, nil
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		j := e.waitState(h.ID(), core.StateSleeping)
		if !j.RunAt.Equal(e.clock.Now().Add(time.Minute)) {
			e.Fatalf("run at %v", j.RunAt)
		}
		e.clock.Advance(time.Minute)
		_, err = h.Wait(e.ctx)
		e.must(err)
		if j := e.job(h.ID()); j.Attempt != 1 {
			e.Fatalf("attempt %d", j.Attempt)
		}
	}},
}
