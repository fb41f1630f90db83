package boson

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// watchPause is the shortest time between two passes of the cancellation
// watcher: it bounds the extra reads to one per running attempt per pause.
const watchPause = time.Second

// watcher keeps the running attempts of a worker. It renews their leases
// (one goroutine for the whole worker, so an attempt that ends before its
// first renewal costs no timer and no goroutine), and notices, without
// waiting for the next renewal, that a running job was cancelled (or
// otherwise left its lease): when a backend that notifies signals a served
// queue, it reads the state of that queue's running attempts, at most once
// per watchPause.
type watcher struct {
	w       *Worker
	mu      sync.Mutex
	running map[string]map[*attempt]struct{} // by queue
	pending map[string]bool                  // queues signalled since the last pass
	// signals counts each queue's signals, so that an attempt added after
	// a signal that came while its job was on the way from the claim to a
	// runner is checked all the same (see seq and add).
	signals map[string]uint64
	kick    chan struct{}
	renews  sync.WaitGroup // renewals in flight
}

func newWatcher(w *Worker) *watcher {
	return &watcher{w: w, running: map[string]map[*attempt]struct{}{}, pending: map[string]bool{},
		signals: map[string]uint64{}, kick: make(chan struct{}, 1)}
}

// seq returns queue's signal count; a claim reads it before it is sent.
func (wt *watcher) seq(queue string) uint64 {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.signals[queue]
}

// add starts tracking a; its first renewal is due one heartbeat interval
// after its claim was sent (the store dated the lease no earlier), not
// after the attempt began: a job that waited for a runner, or a clock
// that moved meanwhile, must not push the renewal past its due time.
// claimSeq is the queue's signal count read before the claim was sent: a
// signal since then (a cancellation of the job while it was on its way to
// a runner, say) found no attempt to check, so add schedules a pass.
func (wt *watcher) add(a *attempt, claimSent time.Time, claimSeq uint64) {
	a.renewAt = claimSent.Add(wt.w.opts.HeartbeatInterval)
	wt.mu.Lock()
	m := wt.running[a.job.Queue]
	if m == nil {
		m = map[*attempt]struct{}{}
		wt.running[a.job.Queue] = m
	}
	m[a] = struct{}{}
	missed := wt.signals[a.job.Queue] != claimSeq
	if missed {
		wt.pending[a.job.Queue] = true
	}
	wt.mu.Unlock()
	if missed {
		wt.wake()
	}
}

// remove stops tracking a. A renewal already in flight may still finish;
// it only touches a's lease, which fencing makes harmless.
func (wt *watcher) remove(a *attempt) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	delete(wt.running[a.job.Queue], a)
	if a.long {
		wt.w.longRunning.Add(-1)
	}
}

// signal records that queue changed.
func (wt *watcher) signal(queue string) {
	wt.mu.Lock()
	wt.signals[queue]++
	if len(wt.running[queue]) == 0 {
		wt.mu.Unlock()
		return
	}
	wt.pending[queue] = true
	wt.mu.Unlock()
	wt.wake()
}

// wake starts a pass, unless one is already due.
func (wt *watcher) wake() {
	select {
	case wt.kick <- struct{}{}:
	default:
	}
}

// loop runs cancellation passes until stop closes.
func (wt *watcher) loop(ctx context.Context, stop <-chan struct{}) {
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-stop:
			return
		case <-wt.kick:
		}
		wt.pass(ctx)
		pause.Reset(watchPause)
		select {
		case <-stop:
			return
		case <-pause.C:
		}
	}
}

// pass checks the running attempts of the signalled queues.
func (wt *watcher) pass(ctx context.Context) {
	wt.mu.Lock()
	var check []*attempt
	for q := range wt.pending {
		for a := range wt.running[q] {
			check = append(check, a)
		}
	}
	clear(wt.pending)
	wt.mu.Unlock()
	for _, a := range check {
		if a.lost.Load() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		j, err := a.b.GetJob(rctx, a.job.ID)
		cancel()
		if err != nil {
			continue // the renewal decides
		}
		if j.State != core.StateRunning || j.Lease.Token != a.job.Lease.Token {
			a.markLost()
		}
	}
}

// renewLoop renews the lease of every running attempt once per heartbeat
// interval until stop closes, then waits for the renewals in flight. Each
// renewal runs on its own goroutine, so one slow call delays no other
// lease. Attempts due within an eighth of the interval are renewed together
// (early), which bounds the passes to about eight per interval however
// many attempts run.
//
// Due times are read on the worker's clock, the one that dates the leases,
// and the loop looks at it at least once per watchPause: a clock that is
// moved (a test's) or stepped is noticed within that pause. A renewal
// dated more than an interval ahead (the clock went back) is due at once.
func (wt *watcher) renewLoop(stop <-chan struct{}) {
	defer wt.renews.Wait()
	hb := wt.w.opts.HeartbeatInterval
	slack := hb / 8
	t := time.NewTimer(min(hb, watchPause))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := wt.w.clock.Now()
		next := now.Add(hb)
		var due []*attempt
		longSince := time.Now().Add(-adaptLong)
		grew := false
		wt.mu.Lock()
		for _, m := range wt.running {
			for a := range m {
				if wt.w.adapt != nil && !a.long && a.begun.Before(longSince) {
					a.long, grew = true, true
					wt.w.longRunning.Add(1)
				}
				switch {
				case a.renewing, a.lost.Load():
				case !a.renewAt.After(now.Add(slack)), a.renewAt.After(now.Add(hb)):
					a.renewing = true
					due = append(due, a)
				case a.renewAt.Before(next):
					next = a.renewAt
				}
			}
		}
		wt.mu.Unlock()
		if grew {
			wt.w.wakeClaimer()
		}
		for _, a := range due {
			wt.renews.Add(1)
			go wt.renew(a)
		}
		t.Reset(min(next.Sub(now), watchPause))
	}
}

// renew extends a's lease once. A lost lease, or a lease that cannot be
// renewed before it expires, cancels the attempt.
func (wt *watcher) renew(a *attempt) {
	defer wt.renews.Done()
	w := wt.w
	lease := a.currentLease()
	// The call may take up to the rest of a lease period; a slow store
	// must not turn into a lost lease.
	ctx, cancel := context.WithTimeout(w.baseCtx, w.opts.LeaseTTL-w.opts.HeartbeatInterval)
	// The next renewal is due an interval after this one was sent: the
	// store dates the new lease no earlier than that, and the clock may
	// move while the call is on its way (the store may even show the new
	// lease before the call returns).
	sent := w.clock.Now()
	nl, err := a.b.Heartbeat(ctx, lease, w.opts.LeaseTTL)
	cancel()
	next := sent.Add(w.opts.HeartbeatInterval)
	switch {
	case err == nil:
		a.mu.Lock()
		a.lease = nl
		a.mu.Unlock()
	case errors.Is(err, core.ErrLeaseLost):
		a.markLost()
	default:
		if w.baseCtx.Err() == nil {
			w.log.Warn("boson: heartbeat failed", "job_id", a.job.ID, "error", err)
			if !w.clock.Now().Before(lease.ExpiresAt) {
				a.markLost()
			}
			// Try again soon rather than a whole interval later.
			next = w.clock.Now().Add(min(w.opts.HeartbeatInterval, time.Second))
		}
	}
	wt.mu.Lock()
	a.renewing = false
	a.renewAt = next
	wt.mu.Unlock()
}
