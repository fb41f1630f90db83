package natsq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Backend is a core.QueueBackend on a JetStream command log. Each Backend
// is one replica of the store; any number of them, in any number of
// processes, may share a namespace. It is safe for concurrent use.
type Backend struct {
	opts   Options
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	log    *slog.Logger
	origin string
	reqSeq atomic.Uint64

	// mu guards st. Reads take it shared; applying a command takes it
	// exclusively.
	mu      sync.RWMutex
	st      *state
	applyCh chan struct{} // closed and replaced whenever st.applied moves

	pendMu  sync.Mutex
	pending map[uint64]*waiter

	submitCh chan *submission

	cons   jetstream.ConsumeContext
	notify *notifier

	// lastTSAt is when, on this process's monotonic clock, the replica
	// applied the command stamped st.lastTS. Guarded by mu.
	lastTSAt time.Time

	lastSnap   atomic.Uint64 // newest snapshot position this Backend knows of
	compacting atomic.Bool
	broken     atomic.Pointer[error]
	brokenCh   chan struct{} // closed when broken is set

	closeOnce sync.Once
	closed    chan struct{}
	bgMu      sync.Mutex // orders bg.Add against Close
	bg        sync.WaitGroup
}

// waiter receives the outcome of a command this replica issued.
type waiter struct {
	done chan struct{}
	out  outcome
}

var (
	_ core.QueueBackend = (*Backend)(nil)
	_ core.Notifier     = (*Backend)(nil)
)

// New connects a Backend to the namespace's command stream on nc, creating
// the stream when it does not exist, loads the newest snapshot, if any, and
// replays the commands after it, so that the Backend starts with the
// current state. nc stays the caller's: Close does
// not close it. New fails with an error wrapping core.ErrUnsupported when
// the server is older than 2.9 or lacks JetStream, or when the server did
// not keep the stream configuration the backend asked for.
func New(ctx context.Context, nc *nats.Conn, opts Options) (*Backend, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil NATS connection", core.ErrInvalidArgument)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkServerVersion(nc); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natsq: jetstream: %w", err)
	}
	stream, err := ensureStream(ctx, js, o)
	if err != nil {
		return nil, err
	}
	b := &Backend{
		opts:     o,
		nc:       nc,
		js:       js,
		stream:   stream,
		log:      o.Logger.With("backend", "nats", "namespace", o.Namespace),
		origin:   core.NewID(time.Now()),
		st:       newState(),
		applyCh:  make(chan struct{}),
		pending:  map[uint64]*waiter{},
		submitCh: make(chan *submission),
		closed:   make(chan struct{}),
		brokenCh: make(chan struct{}),
	}
	b.notify = newNotifier(b)
	snap, err := b.loadSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	if snap != nil {
		b.st = snap
		b.lastTSAt = time.Now()
		b.lastSnap.Store(snap.applied)
	}
	if err := b.startConsumer(ctx, b.st.applied+1); err != nil {
		return nil, err
	}
	if err := b.Sync(ctx); err != nil {
		b.Close()
		return nil, err
	}
	b.bgMu.Lock()
	b.bg.Add(2)
	b.bgMu.Unlock()
	go b.notify.poll()
	go b.commitLoop()
	return b, nil
}

// Close stops the backend's consumer and wake-ups. Later calls return errors
// wrapping core.ErrClosed. It does not close the NATS connection.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.bgMu.Lock()
		close(b.closed)
		b.bgMu.Unlock()
		if b.cons != nil {
			b.cons.Stop()
		}
		b.bg.Wait()
		b.notify.closeAll()
	})
	return nil
}

// Conn returns the NATS connection the Backend was opened on: the nc handed
// to New, which stays the caller's.
func (b *Backend) Conn() *nats.Conn { return b.nc }

// untilClosed returns a context derived from parent that also ends when the
// backend closes; cancel releases it.
func (b *Backend) untilClosed(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-b.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (b *Backend) isClosed() error {
	select {
	case <-b.closed:
		return fmt.Errorf("natsq: %w", core.ErrClosed)
	default:
	}
	if e := b.broken.Load(); e != nil {
		return *e
	}
	return nil
}

// stamp returns the time a command carries: DecisionClock's time at
// microsecond precision when it is set, else the zero time, which tells
// every replica to decide by the timestamp the server stored the command
// with.
func (b *Backend) stamp() time.Time {
	if b.opts.DecisionClock == nil {
		return time.Time{}
	}
	return b.opts.DecisionClock.Now().UTC().Truncate(time.Microsecond)
}

// estimate returns a time that is not after the server's time now, and
// false when there is none yet: DecisionClock's time when it is set, else
// the timestamp of the newest command this replica applied plus the time
// that passed on this process's monotonic clock since it applied it. The
// server stamped that command before this process received it, so the
// estimate lags the server's time and never leads it, whatever this
// process's wall clock says. It decides nothing; it only lets Claim,
// Rescue and the poller skip work that could not be due yet.
func (b *Backend) estimate() (time.Time, bool) {
	if b.opts.DecisionClock != nil {
		return b.stamp(), true
	}
	b.mu.RLock()
	ts, at := b.st.lastTS, b.lastTSAt
	b.mu.RUnlock()
	if ts.IsZero() {
		return time.Time{}, false
	}
	return ts.Add(time.Since(at)), true
}

// Sync waits until this replica has applied every command the stream held
// when Sync was called. Commands a Backend issues are applied before the
// call returns, so Sync is needed only to read, from this process, what
// another process wrote a moment ago.
func (b *Backend) Sync(ctx context.Context) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	info, err := b.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("natsq: stream info: %w", err)
	}
	return b.waitApplied(ctx, info.State.LastSeq)
}

func (b *Backend) waitApplied(ctx context.Context, seq uint64) error {
	for {
		b.mu.RLock()
		applied, ch := b.st.applied, b.applyCh
		b.mu.RUnlock()
		if applied >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("natsq: waiting for the log to reach %d (at %d): %w", seq, applied, ctx.Err())
		case <-b.closed:
			return fmt.Errorf("natsq: %w", core.ErrClosed)
		case <-b.brokenCh:
			return *b.broken.Load()
		}
	}
}

func isTransient(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}
