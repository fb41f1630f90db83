package boson

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

// CancelTx is [Client.Cancel] inside the caller's transaction tx (the
// store's own type, for example pgx.Tx or *sql.Tx), so that the cancel
// and the caller's own writes commit or roll back together, as
// [core.TxController] describes: nobody else sees the cancel until tx
// commits, a running task keeps its lease until then and loses it at the
// commit, and a rollback leaves the task as it was. A backend without
// transactional control returns an error wrapping [core.ErrUnsupported];
// a nil tx one wrapping [core.ErrInvalidArgument].
//
// A client of one backend hands the job to it, so tx may cancel a task
// it spawned itself. A client of several looks the job up by id outside
// tx first, so it finds only committed tasks.
func (c *Client) CancelTx(ctx context.Context, tx any, jobID, reason string) (core.Job, error) {
	b, err := c.txBackend(ctx, tx, jobID)
	if err != nil {
		return core.Job{}, err
	}
	return core.CancelTx(ctx, b, tx, jobID, reason)
}

// RetryTx is [Client.Retry] inside the caller's transaction tx, with the
// rules of [Client.CancelTx]: the task is queued again when tx commits
// and stays as it was if tx rolls back.
func (c *Client) RetryTx(ctx context.Context, tx any, jobID string) (core.Job, error) {
	b, err := c.txBackend(ctx, tx, jobID)
	if err != nil {
		return core.Job{}, err
	}
	return core.RetryTx(ctx, b, tx, jobID)
}

// CancelTx is [Handle.Cancel] inside the caller's transaction tx; see
// [Client.CancelTx].
func (h *Handle[Out]) CancelTx(ctx context.Context, tx any, reason string) error {
	if tx == nil {
		return errNilTx
	}
	_, err := core.CancelTx(ctx, h.b, tx, h.job.ID, reason)
	return err
}

// RetryTx is [Handle.Retry] inside the caller's transaction tx; see
// [Client.RetryTx].
func (h *Handle[Out]) RetryTx(ctx context.Context, tx any) error {
	if tx == nil {
		return errNilTx
	}
	_, err := core.RetryTx(ctx, h.b, tx, h.job.ID)
	return err
}

var errNilTx = fmt.Errorf("%w: tx must not be nil", core.ErrInvalidArgument)

// txBackend returns the backend that holds jobID for a call in tx: the
// only one, or the one where the job is found outside tx.
func (c *Client) txBackend(ctx context.Context, tx any, jobID string) (core.QueueBackend, error) {
	if tx == nil {
		return nil, errNilTx
	}
	bs := c.router.Backends()
	if len(bs) > 0 && allSame(bs) {
		return bs[0], nil
	}
	_, b, err := c.find(ctx, jobID)
	return b, err
}

// allSame reports whether every backend of bs is the first one (a
// router may register one backend under several names).
func allSame(bs []core.QueueBackend) bool {
	for _, b := range bs[1:] {
		if b != bs[0] {
			return false
		}
	}
	return true
}
