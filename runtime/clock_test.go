package boson_test

import (
	"context"
	"sync"
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

// clockMovesDuringHeartbeat moves the clock once, after the store has
// stored the first renewal and before the call returns, as a test or a
// stepped clock may do while the answer is on its way back.
type clockMovesDuringHeartbeat struct {
	core.QueueBackend
	clock *core.ManualClock
	by    time.Duration
	once  sync.Once
}

func (b *clockMovesDuringHeartbeat) Heartbeat(ctx context.Context, l core.Lease, ttl time.Duration) (core.Lease, error) {
	nl, err := b.QueueBackend.Heartbeat(ctx, l, ttl)
	b.once.Do(func() { b.clock.Advance(b.by) })
	return nl, err
}

// TestRenewalDueFromWhenItWasSent: the next renewal is due an interval
// after the previous one was sent, not after its answer came back, so a
// clock that moved while the call was on its way does not leave the lease
// unrenewed until the clock moves again.
func TestRenewalDueFromWhenItWasSent(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	b := &clockMovesDuringHeartbeat{QueueBackend: e.b, clock: e.clock, by: 40 * time.Minute}
	w, err := boson.NewWorker(b, boson.WorkerOptions{
		Clock: e.clock, Logger: quiet, PollInterval: 10 * time.Millisecond,
		LeaseTTL: time.Hour, HeartbeatInterval: 20 * time.Minute,
		RescueInterval: -1, RetentionInterval: -1, ShutdownGrace: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
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
	e.waitState(h.ID(), core.StateRunning)
	// The first renewal dates the lease 25m+1h from the claim; the clock
	// then moves to 65m, past that renewal's due time plus an interval.
	firstRenewalEnd := e.clock.Now().Add(25*time.Minute + time.Hour)
	e.clock.Advance(25 * time.Minute)
	eventually(t, "a second renewal without another move of the clock", func() bool {
		return e.job(h.ID()).Lease.ExpiresAt.After(firstRenewalEnd)
	})
	close(release)
	if out, err := h.Wait(ctx); err != nil || out.Sum != 1 {
		t.Fatalf("got %+v %v", out, err)
	}
}

// clockMovesDuringClaim moves the clock once, after the store has claimed
// a job and before the call returns, as a stepped clock may do while a
// claimed job is on its way to a runner.
type clockMovesDuringClaim struct {
	core.QueueBackend
	clock *core.ManualClock
	by    time.Duration
	once  sync.Once
}

func (b *clockMovesDuringClaim) Claim(ctx context.Context, r core.ClaimRequest) ([]core.Job, error) {
	jobs, err := b.QueueBackend.Claim(ctx, r)
	if len(jobs) > 0 {
		b.once.Do(func() { b.clock.Advance(b.by) })
	}
	return jobs, err
}

// TestFirstRenewalDueFromTheClaim: the first renewal is due an interval
// after the claim was sent, not after the job reached a runner, so a clock
// that moved in between does not leave the lease unrenewed.
func TestFirstRenewalDueFromTheClaim(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	b := &clockMovesDuringClaim{QueueBackend: e.b, clock: e.clock, by: 25 * time.Minute}
	w, err := boson.NewWorker(b, boson.WorkerOptions{
		Clock: e.clock, Logger: quiet, PollInterval: 10 * time.Millisecond,
		LeaseTTL: time.Hour, HeartbeatInterval: 20 * time.Minute,
		RescueInterval: -1, RetentionInterval: -1, ShutdownGrace: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		select {
		case <-release:
			return addOut{Sum: 1}, nil
		case <-ctx.Done():
			return addOut{}, ctx.Err()
		}
	})
	claimedAt := e.clock.Now()
	h, err := boson.Spawn(ctx, e.client, addTask, addIn{})
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	first := claimedAt.Add(time.Hour)
	eventually(t, "a renewal once the clock passed the claim's due time", func() bool {
		return e.job(h.ID()).Lease.ExpiresAt.After(first)
	})
	close(release)
	if out, err := h.Wait(ctx); err != nil || out.Sum != 1 {
		t.Fatalf("got %+v %v", out, err)
	}
}
