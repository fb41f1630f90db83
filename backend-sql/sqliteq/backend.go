package sqliteq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/boson-go/boson/backend-sql/internal/engine"
	"github.com/boson-go/boson/core"
)

type queueBackend = core.QueueBackend

// Backend is a boson queue backend on one SQLite file. It implements
// [core.QueueBackend], [core.Notifier], [core.TxEnqueuer],
// [core.TxController] and the
// operations capabilities [core.RunReader], [core.JobSearcher],
// [core.TaskLister] and [core.JobDeleter], fan-in ([core.Awaiter]), and is safe
// for concurrent use; several processes may share the file.
type Backend struct {
	queueBackend
	opsBackend
	e      *engine.Engine
	writer *sql.DB
	reader *sql.DB
	path   string
	busy   atomic.Int64
	wait   busyWait
}

// Open opens (creating when missing) the database file at path and
// returns a backend that owns its connections. Call [Backend.Migrate]
// before first use. The path is a file name; ":memory:" is refused,
// because the writer and the readers must share one file.
func Open(ctx context.Context, path string, opts Options) (*Backend, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("boson/sqlite: open: %w", err)
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("boson/sqlite: open: %w: path %q must name a file", core.ErrInvalidArgument, path)
	}
	name := "file:" + (&url.URL{Path: path}).EscapedPath()
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", o.BusyTimeout.Milliseconds())
	writer, err := sql.Open("sqlite", name+"?"+busy+"&_pragma=journal_mode(WAL)&_pragma=synchronous("+string(o.Synchronous)+")&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("boson/sqlite: open: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("boson/sqlite: open %s: %w", path, err)
	}
	reader, err := sql.Open("sqlite", name+"?"+busy+"&_pragma=query_only(1)")
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("boson/sqlite: open: %w", err)
	}
	reader.SetMaxOpenConns(o.ReadConns)
	reader.SetMaxIdleConns(o.ReadConns)
	b := &Backend{writer: writer, reader: reader, path: path, wait: busyWait{timeout: o.BusyTimeout, max: o.MaxBusyWait}}
	st := &engine.SQLStore{
		W: writer, R: reader,
		WCache:   engine.NewStmtCache(writer),
		RCache:   engine.NewStmtCache(reader),
		IsBusy:   isBusy,
		BusyWait: b.wait.retries,
		OnBusy: func(attempt int, err error) {
			b.busy.Add(1)
			o.Logger.Debug("boson/sqlite: database busy; retrying", "attempt", attempt, "err", err)
		},
	}
	b.e = engine.New(engine.Config{
		Dialect:      engine.SQLite{},
		Store:        st,
		Clock:        o.Clock,
		Limits:       o.Limits,
		Logger:       o.Logger,
		PollInterval: o.PollInterval,
	})
	b.queueBackend, b.opsBackend = b.e, b.e
	return b, nil
}

// isBusy reports SQLITE_BUSY and SQLITE_LOCKED, with any extended code.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// Path returns the database file name.
func (b *Backend) Path() string { return b.path }

// BusyRetries returns how many write transactions were run again after
// SQLITE_BUSY or SQLITE_LOCKED since Open.
func (b *Backend) BusyRetries() int64 { return b.busy.Load() }

// Migrate applies every embedded migration not applied yet, in one
// IMMEDIATE transaction, so that processes starting at once take turns.
// It is safe to call on every start.
func (b *Backend) Migrate(ctx context.Context) error {
	_, err := b.e.Migrate(ctx, "sqlite", nil)
	return err
}

// BeginTx starts a transaction on the backend's writer connection. It
// begins IMMEDIATE: it holds the database's write lock until you Commit
// or Rollback, and every other write of this backend waits for it, so
// keep it short and always end it. Pass it to [Backend.EnqueueTx] (or
// core.EnqueueTx) to enqueue together with your own writes.
func (b *Backend) BeginTx(ctx context.Context) (*sql.Tx, error) {
	if err := b.e.Err("begin"); err != nil {
		return nil, err
	}
	tx, err := b.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("boson/sqlite: begin: %w", err)
	}
	return tx, nil
}

// DB returns the writer handle: a pool of one connection whose
// transactions begin IMMEDIATE. Use it for your own tables when they
// live in the same file; do not change its pool settings. While a
// transaction from [Backend.BeginTx] is open, the one connection is
// taken: use the transaction, not DB, or the call waits for it.
func (b *Backend) DB() *sql.DB { return b.writer }

// EnqueueTx implements [core.TxEnqueuer]: it stores reqs inside tx, a
// *sql.Tx on this database (best from [Backend.BeginTx]), under a
// savepoint. The jobs become visible only when the caller commits, and
// vanish if it rolls back; a refused batch leaves tx usable. Local
// subscribers are woken at once; they find the jobs when tx commits, or
// at the next polling tick.
func (b *Backend) EnqueueTx(ctx context.Context, tx any, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("boson/sqlite: enqueue: %w: tx is %T, not a *sql.Tx", core.ErrInvalidArgument, tx)
	}
	res, err := b.e.EnqueueIn(ctx, engine.SQLQuerier{C: t}, reqs) // a caller's tx: no statement cache
	if err == nil {
		seen := map[string]bool{}
		for _, r := range res {
			if !r.Reused && !seen[r.Job.Queue] {
				seen[r.Job.Queue] = true
				b.e.Signal(r.Job.Queue)
			}
		}
	}
	return res, err
}

// Subscribe implements [core.Notifier] for this process.
func (b *Backend) Subscribe(queue string) (<-chan struct{}, func()) { return b.e.Subscribe(queue) }

// Close implements [core.QueueBackend]: it closes the connections.
func (b *Backend) Close() error { return b.e.Close() }

var (
	_ core.QueueBackend = (*Backend)(nil)
	_ core.Notifier     = (*Backend)(nil)
	_ core.TxEnqueuer   = (*Backend)(nil)
)
