package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// BulkAction names what [Bulk] does to each job it selects.
type BulkAction string

// The bulk actions.
const (
	// BulkCancel cancels queued, running and sleeping jobs, as Cancel does.
	BulkCancel BulkAction = "cancel"
	// BulkRetry queues failed and cancelled jobs again, as Retry does.
	BulkRetry BulkAction = "retry"
	// BulkDelete deletes jobs, as [JobDeleter.DeleteJob] does; running
	// jobs only with Force.
	BulkDelete BulkAction = "delete"
)

// MaxBulkErrors is the most per-job errors one [BulkResult] reports.
const MaxBulkErrors = 10

// BulkRequest describes one bounded step of a bulk action.
type BulkRequest struct {
	// Action is what to do to each selected job.
	Action BulkAction `json:"action"`
	// Search selects the jobs; its Limit and Cursor are ignored (the
	// request's own are used), and Desc orders the step as in SearchJobs.
	// States that the action cannot apply to are left out of it: a bulk
	// retry of every job only visits failed and cancelled ones.
	Search JobSearch `json:"search"`
	// Reason is the cancellation reason of BulkCancel.
	Reason string `json:"reason,omitempty"`
	// Force lets BulkDelete delete running jobs (cancelling their leases).
	Force bool `json:"force,omitempty"`
	// DryRun changes nothing: the step counts every job the action would
	// visit with one CountSearch and reports Done.
	DryRun bool `json:"dry_run,omitempty"`
	// Limit is the most jobs one step visits, in [1, MaxPageSize].
	Limit int `json:"limit"`
	// Cursor resumes the action: pass the Next of the previous step.
	Cursor string `json:"cursor,omitempty"`
}

// BulkError is the failure of the action on one job.
type BulkError struct {
	JobID string `json:"job_id"`
	Error string `json:"error"`
}

// BulkResult reports one step of a bulk action.
type BulkResult struct {
	// Matched is the number of jobs the step selected; with DryRun, every
	// job the action would visit now.
	Matched int64 `json:"matched"`
	// Counts holds, with DryRun, Matched by state.
	Counts map[JobState]int64 `json:"counts,omitempty"`
	// Changed jobs took the action.
	Changed int `json:"changed"`
	// Skipped jobs had moved, between the search and the action, to a
	// state that no longer allows it (a worker finished a job being
	// cancelled, say), or had been deleted.
	Skipped int `json:"skipped"`
	// Failed jobs met another error; Errors holds the first MaxBulkErrors.
	Failed int         `json:"failed"`
	Errors []BulkError `json:"errors,omitempty"`
	// Next is the cursor of the following step; empty when Done.
	Next string `json:"next,omitempty"`
	// Done reports that no job is left to visit.
	Done bool `json:"done"`
}

// Record counts one visited job in r by the outcome of the per-job call
// (Cancel, Retry or DeleteJob) that err reports: Changed when err is nil,
// Skipped when it wraps [ErrInvalidState] or [ErrNotFound], Failed
// otherwise, keeping the first MaxBulkErrors errors. It adds one to
// Matched. A [BulkActor] may use it to keep Bulk's counting rules.
func (r *BulkResult) Record(jobID string, err error) {
	r.Matched++
	switch {
	case err == nil:
		r.Changed++
	case errors.Is(err, ErrInvalidState) || errors.Is(err, ErrNotFound):
		r.Skipped++
	default:
		r.Failed++
		if len(r.Errors) < MaxBulkErrors {
			r.Errors = append(r.Errors, BulkError{JobID: jobID, Error: err.Error()})
		}
	}
}

// allowed returns the states a's transition applies to (for BulkDelete
// without force, every state but running).
func (a BulkAction) allowed(force bool) []JobState {
	switch a {
	case BulkCancel:
		return []JobState{StateQueued, StateRunning, StateSleeping}
	case BulkRetry:
		return []JobState{StateFailed, StateCancelled}
	}
	if force {
		return slices.Clone(AllStates)
	}
	return []JobState{StateQueued, StateSleeping, StateSucceeded, StateFailed, StateCancelled}
}

// ValidateBulk checks a bulk request: a known action, a Limit in [1,
// MaxPageSize], a valid search and, for BulkCancel, a reason of at most
// MaxNameLength*4 bytes.
func ValidateBulk(r BulkRequest) error {
	switch r.Action {
	case BulkCancel, BulkRetry, BulkDelete:
	default:
		return invalid("action", "%q is not one of cancel, retry, delete", r.Action)
	}
	if r.Limit < 1 || r.Limit > MaxPageSize {
		return invalid("limit", "%d is outside [1, %d]", r.Limit, MaxPageSize)
	}
	if len(r.Reason) > MaxNameLength*4 {
		return invalid("reason", "is longer than %d bytes", MaxNameLength*4)
	}
	if r.Force && r.Action != BulkDelete {
		return invalid("force", "applies to delete only")
	}
	s := r.Search
	s.Limit, s.Cursor = 0, r.Cursor
	return ValidateJobSearch(s)
}

// BulkActor is implemented by backends that run a step of a bulk action
// natively (in a few statements rather than one call per job). [Bulk]
// validates the request, narrows req.Search.States to the states the
// action applies to (never leaving them empty), answers DryRun itself and
// only then calls BulkStep, with req.Search.States narrowed and DryRun
// false. BulkStep must then keep Bulk's contract exactly:
//   - it visits at most req.Limit jobs matching req.Search after
//     req.Cursor, in SearchJobs order (Desc included), counting each in
//     Matched, and reports Done when none is left after them, else a Next
//     that resumes after the last job visited;
//   - each visited job takes the action with the state check and effects
//     of the per-job call (Cancel, Retry or DeleteJob with req.Force):
//     Changed when the call would succeed (a job already cancelled counts
//     as Changed by BulkCancel, as Cancel returns it without error),
//     Skipped when the job moved to a state the action refuses or was
//     deleted, Failed (with at most MaxBulkErrors Errors) otherwise, so
//     that Changed+Skipped+Failed == Matched;
//   - it is safe while workers claim and finish the same jobs: a job is
//     never forced out of a state the action does not apply to;
//   - the step takes effect whole, as one atomic change of the store: a
//     concurrent reader (GetJob, CountSearch, Stats, a claim) sees the
//     store as it was before the step or after it, never with some of
//     the step's jobs changed and others not. A store whose atomic unit
//     is narrower than a search (a cluster slot, say) ends the step at
//     the unit's boundary, visiting fewer than req.Limit jobs;
//   - on an error it returns the counts of the work that took effect and
//     a Next from which the action resumes without missing a job (the
//     jobs that took the action have left the narrowed states).
type BulkActor interface {
	BulkStep(ctx context.Context, req BulkRequest) (BulkResult, error)
}

// BulkPage starts a native bulk step: it validates req and reads the
// step's page from js, up to req.Limit jobs matching req.Search after
// req.Cursor in SearchJobs order. It returns the page's job ids, in that
// order, and a result whose Next and Done are the page's; on an error, a
// result whose Next is req.Cursor. A [BulkActor] then applies the action
// to the ids and counts each with [BulkResult.Record].
func BulkPage(ctx context.Context, js JobSearcher, req BulkRequest) ([]string, BulkResult, error) {
	jobs, res, err := BulkJobs(ctx, js, req)
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids, res, err
}

// BulkJobs is [BulkPage] for a [BulkActor] that needs more of each job
// than its id, such as its queue: it returns the page's jobs as SearchJobs
// read them, in SearchJobs order, with the same result and errors.
func BulkJobs(ctx context.Context, js JobSearcher, req BulkRequest) ([]Job, BulkResult, error) {
	if err := ValidateBulk(req); err != nil {
		return nil, BulkResult{}, err
	}
	s := req.Search
	s.Limit, s.Cursor = req.Limit, req.Cursor
	page, err := js.SearchJobs(ctx, s)
	if err != nil {
		return nil, BulkResult{Next: req.Cursor}, err
	}
	return page.Jobs, BulkResult{Next: page.Next, Done: page.Next == ""}, nil
}

// Bulk runs one bounded step of a bulk action on b: it reads up to
// req.Limit jobs matching req.Search from SearchJobs pages, from
// req.Cursor on, and applies the action to each with b's own per-job call
// (Cancel, Retry or DeleteJob), each an atomic transition that checks the
// job's state in the store. Workers may run meanwhile: a job whose state
// no longer allows the action when its turn comes is counted as Skipped,
// never forced. Call Bulk again with Next until Done. It returns
// [ErrUnsupported] when b lacks [JobSearcher] (or [JobDeleter] for
// BulkDelete), and an error wrapping [ErrInvalidArgument] for an invalid
// request. When ctx ends mid-step it returns the counts so far, with a
// Next from which the action resumes (the jobs that already took it are
// not visited again, since they left the states the action applies to),
// and ctx's error. When b implements [BulkActor], Bulk validates and
// narrows the request, answers DryRun, and hands the step to BulkStep.
func Bulk(ctx context.Context, b QueueBackend, req BulkRequest) (BulkResult, error) {
	if err := ValidateBulk(req); err != nil {
		return BulkResult{}, err
	}
	js, ok := b.(JobSearcher)
	if !ok {
		return BulkResult{}, fmt.Errorf("bulk %s needs a searchable backend: %w", req.Action, ErrUnsupported)
	}
	jd, canDelete := b.(JobDeleter)
	if req.Action == BulkDelete && !canDelete {
		return BulkResult{}, fmt.Errorf("bulk delete needs a backend that deletes jobs: %w", ErrUnsupported)
	}
	s := req.Search
	s.States = narrowStates(s.States, req.Action.allowed(req.Force))
	if len(s.States) == 0 {
		return BulkResult{Done: true}, nil // no selected state allows the action
	}
	if req.DryRun {
		counts, err := js.CountSearch(ctx, s)
		if err != nil {
			return BulkResult{}, err
		}
		res := BulkResult{Counts: map[JobState]int64{}, Done: true}
		for st, n := range counts {
			if n != 0 {
				res.Counts[st] = n
				res.Matched += n
			}
		}
		return res, nil
	}

	if ba, ok := b.(BulkActor); ok {
		step := req
		step.Search = s
		return ba.BulkStep(ctx, step)
	}
	var res BulkResult
	s.Cursor = req.Cursor
	for int(res.Matched) < req.Limit {
		// A cursor is opaque: a step that stops inside a page resumes from
		// the page's start. The jobs of it that took the action no longer
		// match the narrowed states, so they are not visited again.
		start := s.Cursor
		s.Limit = req.Limit - int(res.Matched)
		page, err := js.SearchJobs(ctx, s)
		if err != nil {
			res.Next = start
			return res, err
		}
		for _, j := range page.Jobs {
			if err := ctx.Err(); err != nil {
				res.Next = start
				return res, err
			}
			err := applyBulk(ctx, b, jd, req, j.ID)
			if err != nil && (errors.Is(err, ErrUnsupported) || errors.Is(err, ErrClosed) || ctx.Err() != nil) {
				res.Next = start
				return res, err
			}
			res.Record(j.ID, err)
		}
		if page.Next == "" {
			res.Done = true
			return res, nil
		}
		s.Cursor = page.Next
		if len(page.Jobs) == 0 {
			break // a page without jobs: let the caller come back
		}
	}
	res.Next = s.Cursor
	return res, nil
}

// applyBulk applies req's action to one job.
func applyBulk(ctx context.Context, b QueueBackend, jd JobDeleter, req BulkRequest, id string) error {
	switch req.Action {
	case BulkCancel:
		_, err := b.Cancel(ctx, id, req.Reason)
		return err
	case BulkRetry:
		_, err := b.Retry(ctx, id)
		return err
	}
	return jd.DeleteJob(ctx, id, req.Force)
}

// narrowStates returns the states of want that allowed holds; all of
// allowed when want is empty.
func narrowStates(want, allowed []JobState) []JobState {
	if len(want) == 0 {
		return allowed
	}
	var out []JobState
	for _, s := range want {
		if slices.Contains(allowed, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
