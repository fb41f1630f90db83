package core

import "time"

// ClaimRequest asks for up to Limit due jobs of one queue.
type ClaimRequest struct {
	Queue    string
	WorkerID string
	// Limit is the most jobs to claim; it must be in [1, Limits.MaxBatch].
	Limit int
	// LeaseTTL is how long the claim lasts without a heartbeat; it must be positive.
	LeaseTTL time.Duration
}

// Completion finishes one running job with a result.
type Completion struct {
	Lease  Lease
	Result []byte
}

// Failure ends one run of a job with an error.
type Failure struct {
	Lease Lease
	// Error is recorded on the run and as the job's LastError.
	Error string
	// RetryAt is when the job may run again. Ignored when Terminal is set or
	// when the job's attempts are spent.
	RetryAt time.Time
	// Terminal fails the job for good, whatever attempts remain.
	Terminal bool
}

// RescueRequest bounds one rescue pass.
type RescueRequest struct {
	// Limit is the most jobs one pass changes; it must be in [1, Limits.MaxBatch].
	Limit int
}

// RescueResult counts what a rescue pass did.
type RescueResult struct {
	// Requeued jobs had an expired lease and attempts left.
	Requeued int
	// Failed jobs had an expired lease and no attempts left.
	Failed int
	// Cancelled jobs had passed a cancellation deadline.
	Cancelled int
}

// Total is the number of jobs the pass changed.
func (r RescueResult) Total() int { return r.Requeued + r.Failed + r.Cancelled }

// JobFilter selects jobs for ListJobs and CountJobs. Empty fields match all.
type JobFilter struct {
	Queue  string
	Task   string
	States []JobState
	// Limit is the page size for ListJobs: 0 means [DefaultPageSize], and it
	// may not exceed [MaxPageSize]. CountJobs ignores it.
	Limit int
	// Cursor continues a listing: pass the Next of the previous page.
	Cursor string
	// Desc lists newest first; the default is oldest first (by job id).
	Desc bool
}

// Page sizes for ListJobs.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// JobPage is one page of a job listing.
type JobPage struct {
	Jobs []Job
	// Next is the cursor for the following page; empty on the last page.
	Next string
}

// CleanupRequest bounds one retention pass.
type CleanupRequest struct {
	// Queue restricts the pass to one queue; empty means every queue.
	Queue string
	// FinishedBefore selects terminal jobs that finished strictly before it.
	FinishedBefore time.Time
	// Limit is the most jobs one pass deletes; it must be in [1, Limits.MaxBatch].
	Limit int
}
