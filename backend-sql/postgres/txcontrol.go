package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/boson-go/boson/backend-sql/internal/engine"
	"github.com/boson-go/boson/core"
)

// CancelTx implements [core.TxController]: it is [Backend.Cancel] inside
// tx, a pgx.Tx (a *pgxpool.Tx or any other implementation), under a
// savepoint, with the guarantees core.TxController states. The job's row
// stays locked until tx ends, so its worker's heartbeat, checkpoint and
// completion wait for tx: keep it short. When tx commits, a running
// job's lease is superseded and its worker's next fenced call fails with
// [core.ErrLeaseLost]; the notification goes out with the commit. When tx
// rolls back, the job is as it was. A refused cancel leaves tx usable.
func (b *Backend) CancelTx(ctx context.Context, tx any, jobID, reason string) (core.Job, error) {
	t, err := asTx(tx, "cancel")
	if err != nil {
		return core.Job{}, err
	}
	return b.e.CancelIn(ctx, engine.PgxQuerier{C: t}, jobID, reason)
}

// RetryTx implements [core.TxController]: it is [Backend.Retry] inside
// tx, a pgx.Tx, with the savepoint, locking and notification of
// [Backend.CancelTx]. The job becomes claimable when tx commits.
func (b *Backend) RetryTx(ctx context.Context, tx any, jobID string) (core.Job, error) {
	t, err := asTx(tx, "retry")
	if err != nil {
		return core.Job{}, err
	}
	return b.e.RetryIn(ctx, engine.PgxQuerier{C: t}, jobID)
}

// asTx returns tx as a non-nil pgx.Tx, or an error wrapping
// core.ErrInvalidArgument.
func asTx(tx any, op string) (pgx.Tx, error) {
	t, ok := tx.(pgx.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("boson/postgres: %s: %w: tx is %T, not a pgx.Tx", op, core.ErrInvalidArgument, tx)
	}
	return t, nil
}

var _ core.TxController = (*Backend)(nil)
