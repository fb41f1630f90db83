package engine

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgxConn is what pools, connections and transactions of pgx share.
type pgxConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// PgxQuerier adapts a pgx pool, connection or transaction.
type PgxQuerier struct {
	C pgxConn
	// After, when set, collects what to run once the transaction has
	// committed (local wake-ups that must not wait for the listener).
	After *[]func()
}

// Exec implements Querier.
func (p PgxQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := p.C.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// Query implements Querier.
func (p PgxQuerier) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	rows, err := p.C.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// PgxStore is a Store on a pgx pool.
type PgxStore struct {
	Pool *pgxpool.Pool
	// Owned pools are closed by Close.
	Owned bool
}

// pgDeadlockTries is how many times a write runs when Postgres aborts it
// to break a deadlock (a fan-in's waiters are locked after the jobs they
// await, which a cancel with CancelChildren locks the other way round).
const pgDeadlockTries = 3

// deadlocked reports a transaction Postgres aborted to break a deadlock:
// it was rolled back, so it may run again.
func deadlocked(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// WriteTx implements Store with one read-committed transaction, run
// again when Postgres aborted it to break a deadlock.
func (s *PgxStore) WriteTx(ctx context.Context, fn func(Querier) error) error {
	for try := 1; ; try++ {
		var after []func()
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error { return fn(PgxQuerier{C: tx, After: &after}) })
		if err == nil {
			for _, f := range after {
				f()
			}
		}
		if err == nil || try == pgDeadlockTries || !deadlocked(err) {
			return err
		}
	}
}

// WriteOne implements Store: a single statement on the pool, run again
// when Postgres aborted it to break a deadlock.
func (s *PgxStore) WriteOne(ctx context.Context, fn func(Querier) error) error {
	for try := 1; ; try++ {
		err := fn(PgxQuerier{C: s.Pool})
		if err == nil || try == pgDeadlockTries || !deadlocked(err) {
			return err
		}
	}
}

// Reader implements Store.
func (s *PgxStore) Reader() Querier { return PgxQuerier{C: s.Pool} }

// Close implements Store.
func (s *PgxStore) Close() error {
	if s.Owned {
		s.Pool.Close()
	}
	return nil
}
