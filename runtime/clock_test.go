package boson_test

import (
	"context"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// TestRenewalsFollowTheWorkerClock: leases are renewed by the clock that
// dates them. When the worker's clock passes a renewal's due time, the
// lease is renewed at once (whatever the process clock says), so that the
// job is not rescued when the clock later passes the first lease's end.
func TestRenewalsFollowTheWorkerClock(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) {
		o.LeaseTTL = time.Hour
		o.HeartbeatInterval = 20 * time.Minute
	})
	release := make(chan struct{})
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		select {
		case <-release:
			return addOut{Sum: 1}, nil
		case <-ctx.Done():
			return addOut{}, ctx.Err()
		}
	})
	e.start(w)
	h, err := boson.Spawn(ctx, e.client, addTask, addIn{})
	if err != nil {
		t.Fatal(err)
	}
	first := e.waitState(h.ID(), core.StateRunning).Lease
	e.clock.Advance(25 * time.Minute)
	eventually(t, "a renewal after the worker's clock passed its due time", func() bool {
		return e.job(h.ID()).Lease.ExpiresAt.After(first.ExpiresAt)
	})
	e.clock.Advance(50 * time.Minute) // past the first lease's end
	if r, err := e.b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil || r.Total() != 0 {
		t.Fatalf("rescue of a renewed lease: %+v %v", r, err)
	}
	close(release)
	if out, err := h.Wait(ctx); err != nil || out.Sum != 1 {
		t.Fatalf("got %+v %v", out, err)
	}
	if j := e.job(h.ID()); j.Attempt != 1 {
		t.Fatalf("%d attempts, want 1", j.Attempt)
	}
}
