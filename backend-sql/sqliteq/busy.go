package sqliteq

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// busyWait bounds how long a write waits for another process's lock on
// the file, by the options and by the shortest lease handed out.
type busyWait struct {
	timeout time.Duration // per statement (BusyTimeout)
	max     time.Duration // retries (MaxBusyWait); 0 follows the leases
	floor   atomic.Int64  // shortest lease asked for, in ns; 0 = none yet
}

// retries returns how long a write may keep running again after
// SQLITE_BUSY, the last run's own statement wait aside.
func (w *busyWait) retries() time.Duration { return w.retriesFor(time.Duration(w.floor.Load())) }

// retriesFor is retries when the shortest lease is floor (0: none yet).
func (w *busyWait) retriesFor(floor time.Duration) time.Duration {
	switch {
	case w.max > 0:
		return w.max
	case floor == 0:
		return DefaultMaxBusyWait
	}
	return max(0, min(DefaultMaxBusyWait, floor/LeaseBusyFraction-w.timeout))
}

// total is the longest a write now waits: its retries and one statement's
// busy timeout.
func (w *busyWait) total() time.Duration { return w.retries() + w.timeout }

// lease checks that a lease of ttl leaves room for the busy wait and, if
// it does, lowers the wait of every later write (that of the call about
// to run included) to fit it. A ttl that is not positive is left to the
// call to refuse.
func (w *busyWait) lease(ttl time.Duration) error {
	if ttl <= 0 {
		return nil
	}
	floor := ttl
	if f := time.Duration(w.floor.Load()); f != 0 && f < ttl {
		floor = f
	}
	if wait := w.retriesFor(floor) + w.timeout; wait > ttl/LeaseBusyFraction {
		return fmt.Errorf("boson/sqlite: %w: a lease of %v is shorter than %d times the busy wait of %v (Options.BusyTimeout %v + MaxBusyWait %v): a write waiting that long for the file lock could let the lease expire and the job run twice; lower the busy wait or lengthen the lease",
			core.ErrInvalidArgument, ttl, LeaseBusyFraction, wait, w.timeout, w.retriesFor(floor))
	}
	for {
		f := w.floor.Load()
		if f != 0 && f <= int64(ttl) || w.floor.CompareAndSwap(f, int64(ttl)) {
			return nil
		}
	}
}

// BusyWait returns the longest a write now waits for another process's
// lock on the file before it fails: Options.BusyTimeout plus the retries
// that Options.MaxBusyWait, or the shortest lease asked for, allows.
func (b *Backend) BusyWait() time.Duration { return b.wait.total() }

// Claim implements [core.QueueBackend]. Its lease bounds the busy wait of
// this and every later write; a lease too short for the configured busy
// wait is refused (see Options.MaxBusyWait).
func (b *Backend) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	if err := b.wait.lease(req.LeaseTTL); err != nil {
		return nil, err
	}
	return b.e.Claim(ctx, req)
}

// Heartbeat implements [core.QueueBackend]. Like a claim, its lease
// bounds the busy wait (see Options.MaxBusyWait).
func (b *Backend) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	if err := b.wait.lease(ttl); err != nil {
		return core.Lease{}, err
	}
	return b.e.Heartbeat(ctx, lease, ttl)
}
