package engine

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"
)

// sqlConn is what *sql.DB, *sql.Conn and *sql.Tx share.
type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// SQLQuerier adapts a database/sql handle. With Cache set, statements are
// prepared once on the cache's database and reused (inside Tx, when set,
// which must belong to that database).
type SQLQuerier struct {
	C     sqlConn
	Tx    *sql.Tx
	Cache *StmtCache
	// After, when set, collects what to run once the transaction has
	// committed (the store's local wake-ups).
	After *[]func()
}

// stmt returns the cached statement for query, bound to the transaction,
// or nil when the querier has no cache or the cache is full.
func (s SQLQuerier) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s.Cache == nil {
		return nil, nil
	}
	st, err := s.Cache.get(ctx, query, s.Tx != nil)
	if err != nil || st == nil {
		return nil, err
	}
	if s.Tx != nil {
		return s.Tx.StmtContext(ctx, st), nil
	}
	return st, nil
}

// Exec implements Querier.
func (s SQLQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return 0, err
	}
	var res sql.Result
	if st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = s.C.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Query implements Querier.
func (s SQLQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	if st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = s.C.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// StmtCache keeps prepared statements of one database, so that SQLite
// parses each statement text once per connection instead of per call.
// It holds at most 256 statements; texts beyond that run unprepared.
//
// The writer database has a single connection, which a transaction
// holds: a text first met inside a transaction runs unprepared and is
// prepared by Flush once the transaction has ended.
type StmtCache struct {
	db      *sql.DB
	mu      sync.Mutex
	m       map[string]*sql.Stmt
	pending map[string]bool
}

// NewStmtCache returns an empty cache for db.
func NewStmtCache(db *sql.DB) *StmtCache {
	return &StmtCache{db: db, m: map[string]*sql.Stmt{}, pending: map[string]bool{}}
}

// get returns the prepared statement of query, or nil: when the cache is
// full, or when inTx and query was not prepared yet.
func (c *StmtCache) get(ctx context.Context, query string, inTx bool) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m)+len(c.pending) >= 256 {
		return nil, nil
	}
	if inTx {
		c.pending[query] = true
		return nil, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// Flush prepares the texts met inside transactions. It waits for a free
// connection, so call it where the caller is about to wait for one.
func (c *StmtCache) Flush(ctx context.Context) {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	texts := make([]string, 0, len(c.pending))
	for q := range c.pending {
		texts = append(texts, q)
	}
	c.mu.Unlock()
	// Prepare without the lock: it waits for the connection, which a
	// transaction that needs the lock may hold.
	for _, q := range texts {
		st, err := c.db.PrepareContext(ctx, q)
		c.mu.Lock()
		delete(c.pending, q)
		if _, dup := c.m[q]; err == nil && !dup {
			c.m[q] = st
			st = nil
		}
		c.mu.Unlock()
		if err == nil && st != nil {
			_ = st.Close()
		}
	}
}

// Close closes every cached statement.
func (c *StmtCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// SQLStore is a Store with one writer handle (a pool of one connection
// whose transactions take the write lock at BEGIN) and a reader pool.
type SQLStore struct {
	W, R *sql.DB
	// WCache and RCache, when set, cache prepared statements.
	WCache, RCache *StmtCache
	// IsBusy reports a transient lock conflict worth retrying.
	IsBusy func(error) bool
	// MaxBusyWait bounds how long WriteTx keeps retrying lock conflicts.
	MaxBusyWait time.Duration
	// BusyWait, when set, gives the bound of each transaction instead of
	// MaxBusyWait (which can then follow the leases handed out).
	BusyWait func() time.Duration
	// OnBusy is called before each retry.
	OnBusy func(attempt int, err error)
}

// errCommit marks a failed COMMIT, which is never retried.
type errCommit struct{ error }

func (e errCommit) Unwrap() error { return e.error }

// WriteTx implements Store. A transaction that failed with a lock
// conflict before its COMMIT was rolled back and is run again, with a
// short backoff, until the bound (BusyWait, else MaxBusyWait) has passed;
// the last run may still wait one statement's busy timeout.
func (s *SQLStore) WriteTx(ctx context.Context, fn func(Querier) error) error {
	start := time.Now()
	bound := s.MaxBusyWait
	if s.BusyWait != nil {
		bound = s.BusyWait()
	}
	backoff := time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.once(ctx, fn)
		var ce errCommit
		if err == nil || errors.As(err, &ce) || s.IsBusy == nil || !s.IsBusy(err) || time.Since(start) >= bound {
			if errors.As(err, &ce) {
				return ce.error
			}
			return err
		}
		if s.OnBusy != nil {
			s.OnBusy(attempt, err)
		}
		t := time.NewTimer(max(0, min(backoff, bound-time.Since(start))))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}

func (s *SQLStore) once(ctx context.Context, fn func(Querier) error) error {
	if s.WCache != nil {
		s.WCache.Flush(ctx) // prepares what the last transactions met
	}
	tx, err := s.W.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var after []func()
	if err := fn(SQLQuerier{C: tx, Tx: tx, Cache: s.WCache, After: &after}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return errCommit{err}
	}
	for _, f := range after {
		f()
	}
	return nil
}

// WriteOne implements Store with WriteTx: every write goes through the
// single writer.
func (s *SQLStore) WriteOne(ctx context.Context, fn func(Querier) error) error {
	return s.WriteTx(ctx, fn)
}

// Reader implements Store.
func (s *SQLStore) Reader() Querier { return SQLQuerier{C: s.R, Cache: s.RCache} }

// Close implements Store.
func (s *SQLStore) Close() error {
	var errs []error
	for _, c := range []*StmtCache{s.RCache, s.WCache} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(append(errs, s.R.Close(), s.W.Close())...)
}
