package sqliteq

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/boson-go/boson/backend-sql/internal/engine"
	"github.com/boson-go/boson/core"
)

// CancelTx implements [core.TxController]: it is [Backend.Cancel] inside
// tx, a *sql.Tx on this database (best from [Backend.BeginTx]), under a
// savepoint, with the guarantees core.TxController states. tx holds the
// database's write lock, so the job's worker waits for it to heartbeat,
// checkpoint or complete: keep it short. When tx commits, a running job's
// lease is superseded and its worker's next fenced call fails with
// [core.ErrLeaseLost]; when it rolls back, the job is as it was. A refused
// cancel leaves tx usable. Local subscribers of the job's queue are woken
// at once; they see the change when tx commits.
func (b *Backend) CancelTx(ctx context.Context, tx any, jobID, reason string) (core.Job, error) {
	t, err := asTx(tx, "cancel")
	if err != nil {
		return core.Job{}, err
	}
	j, err := b.e.CancelIn(ctx, engine.SQLQuerier{C: t}, jobID, reason) // a caller's tx: no statement cache
	if err == nil {
		b.e.Signal(j.Queue)
	}
	return j, err
}

// RetryTx implements [core.TxController]: it is [Backend.Retry] inside
// tx, a *sql.Tx on this database, with the savepoint, locking and wake-up
// of [Backend.CancelTx]. The job becomes claimable when tx commits; a
// subscriber woken before that finds it at the next polling tick.
func (b *Backend) RetryTx(ctx context.Context, tx any, jobID string) (core.Job, error) {
	t, err := asTx(tx, "retry")
	if err != nil {
		return core.Job{}, err
	}
	j, err := b.e.RetryIn(ctx, engine.SQLQuerier{C: t}, jobID)
	if err == nil {
		b.e.Signal(j.Queue)
	}
	return j, err
}

// asTx returns tx as a non-nil *sql.Tx, or an error wrapping
// core.ErrInvalidArgument.
func asTx(tx any, op string) (*sql.Tx, error) {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("boson/sqlite: %s: %w: tx is %T, not a *sql.Tx", op, core.ErrInvalidArgument, tx)
	}
	return t, nil
}

var _ core.TxController = (*Backend)(nil)
