package engine

import "context"

// Rows is the row cursor the engine reads. pgx.Rows satisfies it directly;
// database/sql rows are adapted by sqlRows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs statements on a pool, a connection or a transaction. SQL
// handed to it is already rendered for its dialect.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Store gives the engine its connections: a write transaction and a reader.
type Store interface {
	// WriteTx runs fn inside one write transaction and commits it when fn
	// returns nil; it rolls back otherwise. A store may run fn again after
	// a transient lock conflict that rolled the transaction back, so fn
	// must not keep state across calls.
	WriteTx(ctx context.Context, fn func(q Querier) error) error
	// WriteOne runs fn, which issues one statement, atomically: stores
	// whose single statements are atomic run it without an explicit
	// transaction (one round trip); the others use WriteTx.
	WriteOne(ctx context.Context, fn func(q Querier) error) error
	// Reader runs read-only statements outside any write transaction.
	Reader() Querier
	// Close releases what the store owns.
	Close() error
}
