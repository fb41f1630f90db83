// Package engine is the SQL queue engine shared by the Postgres and SQLite
// backends. Every store-specific detail sits behind [Dialect] and [Store];
// the rest (validation, fencing, state transitions, reads) lives here once.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// Config assembles an engine.
type Config struct {
	Dialect Dialect
	Store   Store
	// Prefix is prepended to every table name: `"schema".` or empty.
	Prefix string
	// Channel is the notification channel name for dialects that have one.
	Channel string
	Clock   core.Clock
	Limits  core.Limits
	Logger  *slog.Logger
	// PollInterval is how often subscriptions get a polling signal; zero
	// or negative turns the fallback ticks off.
	PollInterval time.Duration
	// ClaimRescan is how often a claim that follows a cursor starts at the
	// head of the claim index again (Postgres only: SQLite claims from the
	// head):
	// zero means [DefaultClaimRescan], negative turns the cursors off.
	ClaimRescan time.Duration
}

// Engine implements core.QueueBackend on top of a Dialect and a Store.
type Engine struct {
	d        Dialect
	st       Store
	prefix   string
	channel  string
	clock    core.Clock // nil: the store's clock (or the process clock)
	limits   core.Limits
	log      *slog.Logger
	hub      *hub
	cursors  *claimCursors
	sqlCache sync.Map
	closed   atomic.Bool
	// flowOn caches that flow control was on at the last claim, so that
	// Postgres claims go straight to ClaimFlow.
	flowOn atomic.Bool
	// statsAt is when keepStats last read the table statistics, in Unix
	// nanoseconds.
	statsAt atomic.Int64
	// flowSlow holds the queues whose last Postgres flow claim needed
	// ClaimFlow: their claims start in a transaction (see flowClaimAlone).
	flowSlow sync.Map
	onClose  []func()
}

// New returns an engine. It starts the polling ticker of the hub.
func New(cfg Config) *Engine {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	e := &Engine{
		d:       cfg.Dialect,
		st:      cfg.Store,
		prefix:  cfg.Prefix,
		channel: cfg.Channel,
		clock:   cfg.Clock,
		limits:  cfg.Limits.WithDefaults(),
		log:     log,
		cursors: newClaimCursors(cfg.ClaimRescan),
	}
	if _, ok := cfg.Dialect.(Postgres); !ok {
		e.cursors = newClaimCursors(-1) // only the Postgres claim follows cursors
	}
	e.hub = newHub(cfg.PollInterval)
	return e
}

// Store returns the engine's store.
func (e *Engine) Store() Store { return e.st }

// Dialect returns the engine's dialect.
func (e *Engine) Dialect() Dialect { return e.d }

// Prefix returns the table name prefix.
func (e *Engine) Prefix() string { return e.prefix }

// Channel returns the notification channel name.
func (e *Engine) Channel() string { return e.channel }

// Limits returns the limits with defaults applied.
func (e *Engine) Limits() core.Limits { return e.limits }

// Logger returns the engine's logger.
func (e *Engine) Logger() *slog.Logger { return e.log }

// Render expands a statement template for the engine's dialect.
func (e *Engine) Render(tmpl string) string { return e.render(tmpl) }

// Signal wakes local subscribers of queue.
func (e *Engine) Signal(queue string) { e.hub.signal(queue) }

// OnClose registers f to run when the engine closes, before its store.
func (e *Engine) OnClose(f func()) { e.onClose = append(e.onClose, f) }

// Close stops the engine; later calls return core.ErrClosed.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	for _, f := range e.onClose {
		f()
	}
	e.hub.close()
	return e.st.Close()
}

// Subscribe implements core.Notifier for the local process.
func (e *Engine) Subscribe(queue string) (<-chan struct{}, func()) {
	return e.hub.subscribe(queue)
}

// check returns core.ErrClosed after Close.
func (e *Engine) check(op string) error {
	if e.closed.Load() {
		return fmt.Errorf("boson/%s: %s: %w", e.d.Name(), op, core.ErrClosed)
	}
	return nil
}

// wrap decorates a store error with the operation. Errors that already
// carry a core sentinel pass through with context.
func (e *Engine) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if e.closed.Load() && !errors.Is(err, core.ErrClosed) {
		return fmt.Errorf("boson/%s: %s: %w (%v)", e.d.Name(), op, core.ErrClosed, err)
	}
	return fmt.Errorf("boson/%s: %s: %w", e.d.Name(), op, err)
}

// NowArg is the time argument for {now}: the configured clock's time in
// microseconds, NULL for the store's clock, or the process time.
func (e *Engine) NowArg() any {
	if e.clock != nil {
		return toUS(e.clock.Now())
	}
	if e.d.ServerClock() {
		return nil
	}
	return toUS(time.Now())
}

// now returns the decision time in microseconds, asking the store when
// the store's clock is in charge.
func (e *Engine) now(ctx context.Context, q Querier) (int64, error) {
	arg := e.NowArg()
	if v, ok := arg.(int64); ok {
		return v, nil
	}
	rows, err := q.Query(ctx, e.render("SELECT {now}"), arg)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var v int64
	if rows.Next() {
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
	}
	return v, rows.Err()
}

// toUS encodes a time as UTC microseconds; the zero time is 0.
func toUS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromUS decodes toUS.
func fromUS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// ceilUS converts a duration to whole microseconds, rounding up.
func ceilUS(d time.Duration) int64 {
	return (int64(d) + 999) / 1000
}

var _ core.QueueBackend = (*Engine)(nil)
var _ core.Notifier = (*Engine)(nil)

// SignalAll wakes every local subscriber.
func (e *Engine) SignalAll() { e.hub.signalAll() }

// Err returns an error wrapping core.ErrClosed after Close, else nil.
func (e *Engine) Err(op string) error { return e.check(op) }
