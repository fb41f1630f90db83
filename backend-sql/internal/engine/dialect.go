package engine

import (
	"context"

	"github.com/boson-go/boson/core"
)

// Dialect holds everything that differs between the SQL stores. The
// engine's generic statements use only what both stores share; the
// dialect supplies placeholders, locking clauses, the clock expression,
// and the batched hot paths (claim, complete, notify). A dialect also
// implements either [BatchEnqueuer] (the whole enqueue in the store) or
// [RowInserter] (the engine's portable enqueue around its insert).
type Dialect interface {
	// Name labels the dialect in errors and logs.
	Name() string
	// NumberedPlaceholders reports whether ? must become $1, $2, ...
	NumberedPlaceholders() bool
	// NowExpr is an expression with exactly one ? that yields the current
	// time in UTC microseconds: the argument when it is not NULL, and the
	// store's own clock otherwise.
	NowExpr() string
	// ServerClock reports whether a NULL time argument means "use the
	// store's clock". When false the engine always passes the process time.
	ServerClock() bool
	// LockRows is appended to a SELECT that reads rows the transaction
	// will change ("FOR UPDATE" or nothing).
	LockRows() string
	// SkipLocked is appended to a SELECT that picks rows to change when
	// another transaction may be picking the same ones.
	SkipLocked() string
	// Claim performs the whole claim step of req at time now (NULL
	// meaning the store's clock) and returns the claimed jobs.
	Claim(ctx context.Context, e *Engine, req core.ClaimRequest, now any) ([]core.Job, error)
	// Complete finishes items as succeeded at now, atomically, and returns
	// per item whether it was accepted and the queues that changed. Items
	// have distinct job ids.
	Complete(ctx context.Context, e *Engine, items []core.Completion, now any) ([]bool, []string, error)
	// Notify announces, inside the transaction q, that queues changed.
	Notify(ctx context.Context, e *Engine, q Querier, queues []string) error
}

// RowInserter is the insert step of the engine's portable enqueue, for
// dialects that are not a [BatchEnqueuer].
type RowInserter interface {
	// InsertJobs stores new jobs, skipping any whose (queue, idempotency
	// key) is already held, returns the ids it inserted, and announces
	// (where the store has notifications) the queues that got jobs, to
	// be delivered when q commits.
	InsertJobs(ctx context.Context, e *Engine, q Querier, jobs []core.Job) (map[string]bool, error)
}
