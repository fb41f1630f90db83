package mem

import (
	"context"

	"github.com/boson-go/boson/core"
)

var _ core.BulkActor = (*Backend)(nil)

// BulkStep implements [core.BulkActor]: it runs one step of a bulk action
// under the store's mutex, so the step takes effect whole. It reads the
// step's page as SearchJobs does (up to req.Limit jobs after req.Cursor)
// and applies the action to each job with the state check and effects of
// Cancel, Retry or DeleteJob; a reader or a claim sees the store before
// the step or after it, never in between. Cost: that of the page, plus
// O(log n) per job.
func (b *Backend) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	if err := b.usable(ctx); err != nil {
		return core.BulkResult{Next: req.Cursor}, err
	}
	if err := core.ValidateBulk(req); err != nil {
		return core.BulkResult{}, err
	}
	q := req.Search
	q.Limit, q.Cursor = req.Limit, req.Cursor
	reason := core.CancelReason(req.Reason)
	if err := b.lock(ctx); err != nil {
		return core.BulkResult{Next: req.Cursor}, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	page := s.search(&q)
	res := core.BulkResult{Next: page.Next, Done: page.Next == ""}
	for _, j := range page.Jobs {
		var err error
		switch req.Action {
		case core.BulkCancel:
			_, err = s.cancelID(j.ID, reason, now)
		case core.BulkRetry:
			_, err = s.retryID(j.ID, now)
		default:
			err = s.deleteID(j.ID, req.Force, now)
		}
		res.Record(j.ID, err)
	}
	return res, nil
}
