package mem

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// Options configures a Backend. The zero value is ready to use: the system
// clock, [core.DefaultLimits] and [slog.Default].
type Options struct {
	// Clock decides every lease, deadline and due time. Nil means the
	// process clock ([core.SystemClock]).
	Clock core.Clock
	// Limits bounds payloads, headers and batches. Zero fields take the
	// defaults of [core.DefaultLimits].
	Limits core.Limits
	// Logger receives debug records of rescue passes. Nil means [slog.Default].
	Logger *slog.Logger
}

// Backend is an in-memory [core.QueueBackend] that also implements
// [core.Notifier], the operations capabilities [core.RunReader],
// [core.JobSearcher], [core.TaskLister] and [core.JobDeleter], and
// [core.FlowController]: it enforces the flow limits, start rates,
// sequences and unique modes; and [core.Awaiter]: a job parks on other
// jobs and the transition that satisfies its wait wakes it. It is safe for concurrent use. It does not implement
// [core.TxEnqueuer]: memory has no transactions to join, so
// [core.EnqueueTx] returns [core.ErrUnsupported].
type Backend struct {
	clock  core.Clock
	limits core.Limits
	log    *slog.Logger

	mu     sync.Mutex
	closed bool
	// shut mirrors closed without the lock, so that a call on a closed
	// backend reports ErrClosed before it validates its arguments.
	shut atomic.Bool
	s    *store
	subs subscribers
}

var (
	_ core.QueueBackend = (*Backend)(nil)
	_ core.Notifier     = (*Backend)(nil)
)

// New returns an empty backend configured by opts. Negative limits are
// treated as their defaults.
func New(opts Options) *Backend {
	limits := opts.Limits
	if limits.Validate() != nil {
		limits = core.Limits{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Backend{
		clock:  core.ClockOrSystem(opts.Clock),
		limits: limits.WithDefaults(),
		log:    log,
		s:      newStore(),
		subs:   subscribers{},
	}
	b.s.signal = b.subs.signal
	if _, system := b.clock.(core.SystemClock); system {
		// Only the process clock moves with timers; see wake.go.
		b.s.scheduled = b.armWake
	}
	return b
}

// Close drops every job and makes every later call return an error wrapping
// [core.ErrClosed]. Closing twice is not an error.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.shut.Store(true)
	for _, q := range b.s.queues {
		q.wake.stop()
	}
	b.s = nil
	return nil
}

// now reads the backend's clock in UTC, truncated to microseconds, the
// precision every backend keeps.
func (b *Backend) now() time.Time {
	return b.clock.Now().UTC().Truncate(time.Microsecond)
}

// usable fails with ErrClosed when the backend is closed and with ctx's
// error when ctx is done. Methods that validate their arguments before
// taking the lock call it first, so that a closed backend says so even to
// a malformed call.
func (b *Backend) usable(ctx context.Context) error {
	if b.shut.Load() {
		return errClosed()
	}
	return ctx.Err()
}

func errClosed() error { return fmt.Errorf("mem: %w", core.ErrClosed) }

// lock takes the mutex after checking ctx, and fails with ErrClosed when the
// backend is closed. On success the caller must call b.mu.Unlock.
func (b *Backend) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed()
	}
	return nil
}
