package faulty

import (
	"context"
	"errors"

	"github.com/boson-go/boson/core"
)

// Faults of a native bulk step (core.BulkActor): each wrapper implements
// BulkStep wrongly, so that core.Bulk hands it every step.

func init() {
	register(Fault{
		Name:     "bulk-step-ignores-limit",
		What:     "BulkStep visits up to MaxPageSize jobs whatever the request's Limit",
		CaughtBy: []string{"Bulk/CancelByHeader", "Bulk/Resume"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return bulkIgnoresLimit{base{b}} },
	})
	register(Fault{
		Name:     "bulk-step-any-state",
		What:     "BulkStep visits the jobs the search matches in every state, not only those the action applies to",
		CaughtBy: []string{"Bulk/CancelByHeader", "Bulk/RetryFailed", "Bulk/ResumeAfterCancel"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return bulkAnyState{base{b}} },
	})
}

// bulkIgnoresLimit runs each step of core.Bulk on the wrapped backend
// with the largest Limit.
type bulkIgnoresLimit struct{ base }

func (b bulkIgnoresLimit) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	req.Limit = core.MaxPageSize
	return core.Bulk(ctx, b.base, req)
}

// bulkAnyState drops the states of the step's search, which core.Bulk
// narrowed to the action's, and applies the action to one page of what
// is left with the per-job calls.
type bulkAnyState struct{ base }

func (b bulkAnyState) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	s := req.Search
	s.States, s.Limit, s.Cursor = nil, req.Limit, req.Cursor
	page, err := b.SearchJobs(ctx, s)
	if err != nil {
		return core.BulkResult{Next: req.Cursor}, err
	}
	res := core.BulkResult{Next: page.Next, Done: page.Next == ""}
	for _, j := range page.Jobs {
		switch req.Action {
		case core.BulkCancel:
			_, err = b.Cancel(ctx, j.ID, req.Reason)
		case core.BulkRetry:
			_, err = b.Retry(ctx, j.ID)
		default:
			err = b.DeleteJob(ctx, j.ID, req.Force)
		}
		res.Matched++
		switch {
		case err == nil:
			res.Changed++
		case errors.Is(err, core.ErrInvalidState) || errors.Is(err, core.ErrNotFound):
			res.Skipped++
		default:
			res.Failed++
			if len(res.Errors) < core.MaxBulkErrors {
				res.Errors = append(res.Errors, core.BulkError{JobID: j.ID, Error: err.Error()})
			}
		}
	}
	return res, nil
}
