package faulty

import (
	"context"
	"time"

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
	register(Fault{
		Name:     "bulk-step-per-job",
		What:     "BulkStep applies a step job by job with the per-job calls, so a reader sees the step half applied",
		CaughtBy: []string{"Bulk/AtomicStep"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return bulkPerJob{base{b}} },
	})
	register(Fault{
		Name:     "bulk-step-stale-state",
		What:     "BulkStep trusts the states its search read: a job claimed since is deleted under its worker",
		CaughtBy: []string{"Bulk/DeleteWhileWorkers"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return bulkStaleState{base{b}} },
	})
}

// bulkPerJob runs each step on core.Bulk's per-job fallback: correct
// counts, but one atomic change per job rather than per step.
type bulkPerJob struct{ base }

func (b bulkPerJob) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	return core.Bulk(ctx, perJob{b.base, b.base, b.base}, req)
}

// perJob offers core.Bulk the wrapped backend's search and deletion but
// not its BulkStep.
type perJob struct {
	core.QueueBackend
	core.JobSearcher
	core.JobDeleter
}

// bulkStaleState reads the step's page and then deletes every job of it
// with force, as if the states the search saw still held. It waits a
// moment between the two, as a store whose search and writes are separate
// round trips does.
type bulkStaleState struct{ base }

func (b bulkStaleState) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	if req.Action != core.BulkDelete {
		return b.base.BulkStep(ctx, req)
	}
	s := req.Search
	s.Limit, s.Cursor = req.Limit, req.Cursor
	page, err := b.SearchJobs(ctx, s)
	if err != nil {
		return core.BulkResult{Next: req.Cursor}, err
	}
	time.Sleep(200 * time.Microsecond)
	res := core.BulkResult{Next: page.Next, Done: page.Next == ""}
	for _, j := range page.Jobs {
		res.Record(j.ID, b.DeleteJob(ctx, j.ID, true))
	}
	return res, nil
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
		res.Record(j.ID, err)
	}
	return res, nil
}
