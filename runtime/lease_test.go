package boson_test

import (
	"context"
	"errors"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var stepA = boson.NewStep[int]("a")

// A handler that outlives many lease periods keeps its lease through
// heartbeats, and the rescue pass finds nothing to do.
func TestLongHandlerKeepsLease(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.LeaseTTL = time.Second; o.HeartbeatInterval = 5 * time.Millisecond })
	started, release := make(chan struct{}), make(chan struct{})
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		close(started)
		<-release
		return addOut{Sum: 1}, ctx.Err()
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{})
	<-started
	for i := 0; i < 10; i++ {
		before := e.job(h.ID()).Lease.ExpiresAt
		e.clock.Advance(800 * time.Millisecond) // most of a lease period
		eventually(t, "heartbeat", func() bool { return e.job(h.ID()).Lease.ExpiresAt.After(before.Add(700 * time.Millisecond)) })
		if r, err := e.b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil || r.Total() != 0 {
			t.Fatalf("rescue %+v %v", r, err)
		}
	}
	close(release)
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if j := e.job(h.ID()); j.Attempt != 1 {
		t.Fatalf("attempts %d", j.Attempt)
	}
}

// Once a lease is rescued away, the stale attempt's context is cancelled
// and its writes are refused; once one was refused, the attempt starts no
// other step body, even with a context that is not cancelled.
func TestLeaseLostFencesWrites(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) {
		o.LeaseTTL = time.Hour
		o.HeartbeatInterval = time.Hour / 2 // no heartbeat during the test
		o.Concurrency = 1
	})
	gate := make(chan struct{})
	stale := make(chan error, 2)
	ran := make(chan bool, 1)
	var calls int
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		calls++
		if calls == 1 {
			<-gate
			// Without ctx's cancellation (the worker may have noticed the
			// rescue already), so that fencing is what refuses the write.
			live := context.WithoutCancel(ctx)
			_, err := stepA.Run(live, func(context.Context) (int, error) { return 1, nil })
			stale <- err
			called := false
			_, err = stepGuarded.Run(live, func(context.Context) (int, error) { called = true; return 1, nil })
			stale <- err
			ran <- called
			<-ctx.Done()
			return addOut{}, ctx.Err()
		}
		v, err := stepA.Run(ctx, func(context.Context) (int, error) { return 2, nil })
		return addOut{Sum: v}, err
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{})
	e.waitState(h.ID(), core.StateRunning)
	e.clock.Advance(2 * time.Hour)
	if r, err := e.b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil || r.Requeued != 1 {
		t.Fatalf("rescue %+v %v", r, err)
	}
	close(gate)
	for range 2 {
		if err := <-stale; !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("stale step: %v", err)
		}
	}
	if <-ran {
		t.Fatal("a step body ran after the attempt's lease was lost")
	}
	out, err := h.Wait(ctx)
	if err != nil || out.Sum != 2 {
		t.Fatalf("got %+v %v", out, err)
	}
	eventually(t, "lease lost metric", func() bool { return w.Metrics().Total.LeaseLost == 1 })
}

func TestCancelRunning(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	started := make(chan struct{})
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		close(started)
		<-ctx.Done()
		return addOut{}, ctx.Err()
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{})
	<-started
	if err := h.Cancel(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	_, err := h.Wait(ctx)
	if !errors.Is(err, boson.ErrTaskCancelled) {
		t.Fatalf("wait: %v", err)
	}
	eventually(t, "cancelled metric", func() bool { return w.Metrics().Total.Cancelled == 1 })
}

func TestAttemptTimeout(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		<-ctx.Done()
		return addOut{}, ctx.Err()
	}, boson.AttemptTimeout(20*time.Millisecond))
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{}, boson.WithMaxAttempts(1))
	_, err := h.Wait(ctx)
	if !errors.Is(err, boson.ErrTaskFailed) {
		t.Fatalf("wait: %v", err)
	}
	if j := e.job(h.ID()); j.LastError == "" || !contains(j.LastError, "timed out") {
		t.Fatalf("last error %q", j.LastError)
	}
}

// A backend that notifies lets the worker notice a cancellation long
// before the next heartbeat.
func TestCancelNoticedBeforeHeartbeat(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.LeaseTTL = 2 * time.Hour; o.HeartbeatInterval = time.Hour })
	started := make(chan struct{})
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		close(started)
		<-ctx.Done()
		return addOut{}, ctx.Err()
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, addTask, addIn{})
	<-started
	if err := h.Cancel(ctx, "now"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler to stop", func() bool { return w.Metrics().Total.Cancelled == 1 })
}

// cancelOnClaim is a memory store whose Claim cancels what it hands out
// before it returns, and waits for the store's signal of that change to
// reach the worker: the cancellation lands while the job is on its way
// from the claim to a runner, before the worker tracks its attempt.
type cancelOnClaim struct{ *mem.Backend }

func (b cancelOnClaim) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	jobs, err := b.Backend.Claim(ctx, req)
	for _, j := range jobs {
		if _, cerr := b.Cancel(ctx, j.ID, "cancelled on its way to a runner"); cerr != nil {
			return nil, cerr
		}
	}
	if len(jobs) > 0 {
		time.Sleep(50 * time.Millisecond) // the signal reaches the worker first
	}
	return jobs, err
}

// A cancellation signalled between the claim and the start of the attempt
// is noticed all the same, long before the next heartbeat.
func TestCancelDuringHandOffNoticed(t *testing.T) {
	b := cancelOnClaim{mem.New(mem.Options{Logger: quiet})}
	t.Cleanup(func() { _ = b.Close() })
	ctx := ctxT(t)
	c, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w, err := boson.NewWorker(b, boson.WorkerOptions{
		Logger: quiet, PollInterval: 10 * time.Millisecond, LeaseTTL: 2 * time.Hour, HeartbeatInterval: time.Hour,
		RescueInterval: -1, RetentionInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		<-ctx.Done()
		return addOut{}, ctx.Err()
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	if _, err := boson.Spawn(ctx, c, addTask, addIn{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler to stop", func() bool { return w.Metrics().Total.Cancelled == 1 })
}

// Many attempts that each outlive several lease periods all keep their
// leases: the worker renews every running lease, not only the first, and
// none is rescued away.
func TestManyLongHandlersKeepLeases(t *testing.T) {
	b := mem.New(mem.Options{Logger: quiet}) // the process clock: leases expire in real time
	t.Cleanup(func() { _ = b.Close() })
	ctx := ctxT(t)
	c, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w, err := boson.NewWorker(b, boson.WorkerOptions{
		Logger: quiet, Concurrency: 20, PollInterval: 10 * time.Millisecond,
		LeaseTTL: 150 * time.Millisecond, HeartbeatInterval: 40 * time.Millisecond,
		RescueInterval: -1, RetentionInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		select {
		case <-time.After(600 * time.Millisecond): // four lease periods
			return addOut{Sum: in.A}, nil
		case <-ctx.Done():
			return addOut{}, context.Cause(ctx)
		}
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	var hs []*boson.Handle[addOut]
	for i := range 20 {
		h, err := boson.Spawn(ctx, c, addTask, addIn{A: i})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	stop := make(chan struct{})
	rescued := make(chan int, 1)
	go func() { // a rescuer running all along must find no expired lease
		n := 0
		for {
			select {
			case <-stop:
				rescued <- n
				return
			case <-time.After(20 * time.Millisecond):
			}
			r, _ := b.Rescue(context.Background(), core.RescueRequest{Limit: 100})
			n += r.Total()
		}
	}()
	for i, h := range hs {
		out, err := h.Wait(ctx)
		if err != nil || out.Sum != i {
			t.Fatalf("job %d: %+v %v", i, out, err)
		}
	}
	close(stop)
	if n := <-rescued; n != 0 {
		t.Fatalf("%d leases expired and were rescued", n)
	}
	for _, h := range hs {
		if j, _ := h.Snapshot(ctx); j.Attempt != 1 {
			t.Fatalf("job %s ran %d attempts", j.ID, j.Attempt)
		}
	}
	// A handle sees its job finished as soon as the store does; the worker
	// counts the completion just after its call returns.
	eventually(t, "20 completions counted", func() bool { return w.Metrics().Total.Completed == 20 })
	if m := w.Metrics(); m.Total.LeaseLost != 0 {
		t.Fatalf("metrics %+v", m.Total)
	}
}
