package boson_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// TestNoJitterRetriesExactly: core.NoJitter gives exact retry delays,
// whether the spawn chose it or the worker's DefaultRetry did.
func TestNoJitterRetriesExactly(t *testing.T) {
	p := core.RetryPolicy{Initial: time.Second, Factor: 2, Max: 10 * time.Second, Jitter: core.NoJitter}
	for range 100 {
		if d := boson.Backoff(p, 3); d != 4*time.Second {
			t.Fatalf("third delay %v, want exactly 4s", d)
		}
	}

	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.DefaultRetry = core.RetryPolicy{Jitter: core.NoJitter} })
	_ = boson.Register(w, addTask, func(context.Context, addIn) (addOut, error) {
		return addOut{}, errors.New("transient")
	})
	own, err := boson.Spawn(ctx, e.client, addTask, addIn{}, boson.WithRetry(core.RetryPolicy{Initial: time.Minute, Jitter: core.NoJitter}))
	if err != nil {
		t.Fatal(err)
	}
	dflt, err := boson.Spawn(ctx, e.client, addTask, addIn{})
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	now := e.clock.Now()
	for h, want := range map[string]time.Duration{own.ID(): time.Minute, dflt.ID(): boson.DefaultRetry.Initial} {
		eventually(t, "a failed attempt", func() bool {
			j := e.job(h)
			return j.State == core.StateQueued && j.Attempt == 1
		})
		if got := e.job(h).RunAt.Sub(now); got != want {
			t.Errorf("job %s retries after %v, want exactly %v", h, got, want)
		}
	}
}
