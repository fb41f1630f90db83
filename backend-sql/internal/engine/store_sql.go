package engine

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// sqlConn is what *sql.DB, *sql.Conn and *sql.Tx share.
type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// SQLQuerier adapts a database/sql handle.
type SQLQuerier struct{ C sqlConn }

// Exec implements Querier.
func (s SQLQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.C.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Query implements Querier.
func (s SQLQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := s.C.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// SQLStore is a Store with one writer handle (a pool of one connection
// whose transactions take the write lock at BEGIN) and a reader pool.
type SQLStore struct {
	W, R *sql.DB
	// IsBusy reports a transient lock conflict worth retrying.
	IsBusy func(error) bool
	// MaxBusyWait bounds how long WriteTx keeps retrying lock conflicts.
	MaxBusyWait time.Duration
	// OnBusy is called before each retry.
	OnBusy func(attempt int, err error)
}

// errCommit marks a failed COMMIT, which is never retried.
type errCommit struct{ error }

func (e errCommit) Unwrap() error { return e.error }

// WriteTx implements Store. A transaction that failed with a lock
// conflict before its COMMIT was rolled back and is run again, with a
// short backoff, until MaxBusyWait has passed.
func (s *SQLStore) WriteTx(ctx context.Context, fn func(Querier) error) error {
	start := time.Now()
	backoff := time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.once(ctx, fn)
		var ce errCommit
		if err == nil || errors.As(err, &ce) || s.IsBusy == nil || !s.IsBusy(err) || time.Since(start) >= s.MaxBusyWait {
			if errors.As(err, &ce) {
				return ce.error
			}
			return err
		}
		if s.OnBusy != nil {
			s.OnBusy(attempt, err)
		}
		t := time.NewTimer(backoff)
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
	tx, err := s.W.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(SQLQuerier{tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return errCommit{err}
	}
	return nil
}

// WriteOne implements Store with WriteTx: every write goes through the
// single writer.
func (s *SQLStore) WriteOne(ctx context.Context, fn func(Querier) error) error {
	return s.WriteTx(ctx, fn)
}

// Reader implements Store.
func (s *SQLStore) Reader() Querier { return SQLQuerier{s.R} }

// Close implements Store.
func (s *SQLStore) Close() error {
	return errors.Join(s.R.Close(), s.W.Close())
}
