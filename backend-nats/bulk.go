package natsq

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

var _ core.BulkActor = (*Backend)(nil)

// bulkCmd is the step of an opBulk command: the action and the ids of the
// jobs it visits, in the order of the issuer's search page.
type bulkCmd struct {
	Action core.BulkAction `json:"action"`
	IDs    []string        `json:"ids"`
}

// BulkStep implements [core.BulkActor]: one step of a bulk action is one
// command of the log (bulk, command version 6), which carries the action,
// the cancellation reason, force and the ids of the step's jobs. The ids
// are the page that SearchJobs answers from this replica for req.Search
// after req.Cursor (up to req.Limit jobs); every replica then applies the
// action to each of them in one step under its lock, with the state check
// and effects of a cancel, retry or delete_job command, so a reader of
// any replica sees the store before the step or after it, and a job that
// a worker moved since the search is skipped, not forced. The outcome of
// each job comes back to the caller, which counts it with
// [core.BulkResult.Record].
//
// A step of core.MaxPageSize ids of up to core.MaxNameLength bytes is
// about 130 kB of JSON; a command larger than the server's max_payload is
// stored in parts and still applied whole (see the package doc). A replica
// of a version before bulk steps stops at the first one (see Fail-stop).
// On an error the outcome is unknown (the step may have taken effect), and
// the result's Next is req.Cursor: the jobs that took the action left the
// narrowed states, so the step resumes without missing one.
func (b *Backend) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	ids, res, err := core.BulkPage(ctx, b, req)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	out, err := b.exec(ctx, &command{Op: opBulk, V: bulkVersion, Now: b.stamp(),
		Bulk: &bulkCmd{Action: req.Action, IDs: ids}, Reason: core.CancelReason(req.Reason), Force: req.Force})
	if err == nil {
		err = out.err
	}
	if err == nil && len(out.errs) != len(ids) {
		err = fmt.Errorf("natsq: %w: the bulk step answered %d outcomes for %d jobs", core.ErrInvalidState, len(out.errs), len(ids))
	}
	if err != nil {
		return core.BulkResult{Next: req.Cursor}, err
	}
	for i, id := range ids {
		res.Record(id, out.errs[i])
	}
	return res, nil
}

// applyBulk applies a bulk step: the action to each job of the step in
// order, with the transition of the per-job command (cancelID, retryID,
// deleteID), all at the command's position. The outcome holds each job's
// error, nil for a job that took the action. A step without a body or of
// an action this version does not know stops the replica before it
// changes anything.
func (s *state) applyBulk(c *command) (outcome, error) {
	if c.Bulk == nil {
		return outcome{}, fmt.Errorf("natsq: %w: bulk command %d of %s carries no step", core.ErrInvalidState, c.Req, c.Origin)
	}
	switch c.Bulk.Action {
	case core.BulkCancel, core.BulkRetry, core.BulkDelete:
	default:
		return outcome{}, fmt.Errorf("natsq: %w: bulk action %q, command %d of %s", errUnknownCommand, c.Bulk.Action, c.Req, c.Origin)
	}
	errs := make([]error, len(c.Bulk.IDs))
	for i, id := range c.Bulk.IDs {
		switch c.Bulk.Action {
		case core.BulkCancel:
			_, errs[i] = s.cancelID(id, c.Reason, c)
		case core.BulkRetry:
			_, errs[i] = s.retryID(id, c.Now)
		default:
			errs[i] = s.deleteID(id, c.Force)
		}
	}
	return outcome{errs: errs}, nil
}
