package core

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The operations capabilities are optional interfaces rather than methods
// of [QueueBackend]: an adapter written against an earlier contract keeps
// compiling and keeps running jobs, and the runtime, the admin API and the
// CLI report [ErrUnsupported] for what it lacks. Every backend in this
// repository implements all of them, and the conformance suite checks each
// one a harness declares.

// RunFilter selects runs across jobs for [RunReader]. Empty fields match all.
type RunFilter struct {
	// JobID restricts the selection to one job's runs.
	JobID string `json:"job_id,omitempty"`
	// Queue and Task restrict it to the runs of jobs of that queue or task.
	Queue string `json:"queue,omitempty"`
	Task  string `json:"task,omitempty"`
	// Statuses restricts it to runs in one of these statuses.
	Statuses []RunStatus `json:"statuses,omitempty"`
	// Since selects runs that started at or after it; zero means no bound.
	Since time.Time `json:"since,omitempty"`
	// Before selects runs that started strictly before it; zero means no bound.
	Before time.Time `json:"before,omitempty"`
	// Limit is the page size of ListAllRuns: 0 means [DefaultPageSize], and
	// it may not exceed [MaxPageSize]. CountRuns ignores it.
	Limit int `json:"limit,omitempty"`
	// Cursor continues a listing: pass the Next of the previous page.
	Cursor string `json:"cursor,omitempty"`
	// Desc lists the newest job's runs first.
	Desc bool `json:"desc,omitempty"`
}

// PageSize returns the page size a filter asks for: DefaultPageSize when 0.
func (f RunFilter) PageSize() int {
	if f.Limit == 0 {
		return DefaultPageSize
	}
	return f.Limit
}

// RunPage is one page of a run listing.
type RunPage struct {
	Runs []Run `json:"runs"`
	// Next is the cursor for the following page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// RunReader is an optional capability: reading runs by id and across jobs,
// as the seed's get_run, list_runs and count_runs do.
type RunReader interface {
	// GetRun returns the run with id runID (as [RunID] makes it), with its
	// Queue and Task set, or [ErrNotFound].
	GetRun(ctx context.Context, runID string) (Run, error)

	// ListAllRuns returns one page of the runs matching f, with Queue and
	// Task set, ordered by (JobID, Token), or by (JobID, Token) descending
	// when f.Desc is set. Following Next visits every run that matched
	// when the listing began and still matches exactly once; a run opened
	// after the listing began may or may not appear.
	ListAllRuns(ctx context.Context, f RunFilter) (RunPage, error)

	// CountRuns counts the runs matching f by status. Statuses with no run
	// may be left out of the map.
	CountRuns(ctx context.Context, f RunFilter) (map[RunStatus]int64, error)
}

// JobSearch selects jobs for [JobSearcher]: everything a [JobFilter]
// selects, narrowed by the search fields. Empty fields match all.
type JobSearch struct {
	JobFilter
	// HeaderKey selects jobs that carry this header; with HeaderValue set,
	// only those whose value of it is exactly HeaderValue. HeaderValue
	// without HeaderKey is invalid.
	HeaderKey   string `json:"header_key,omitempty"`
	HeaderValue string `json:"header_value,omitempty"`
	// IDPrefix selects jobs whose id starts with it.
	IDPrefix string `json:"id_prefix,omitempty"`
	// IDs selects the jobs with these ids; at most [MaxPageSize] of them.
	IDs []string `json:"ids,omitempty"`
	// Created selects jobs created within the range.
	Created TimeRange `json:"created,omitempty"`
	// Finished selects terminal jobs that finished within the range; a
	// non-empty range never matches a job that has not finished.
	Finished TimeRange `json:"finished,omitempty"`
	// LimitKey and SequenceKey select the jobs with exactly that key; a
	// [FlowController] honours them.
	LimitKey    string `json:"limit_key,omitempty"`
	SequenceKey string `json:"sequence_key,omitempty"`
}

// TimeRange is the half-open interval [From, To). A zero bound is open.
type TimeRange struct {
	From time.Time `json:"from,omitempty"`
	To   time.Time `json:"to,omitempty"`
}

// IsZero reports whether r bounds nothing.
func (r TimeRange) IsZero() bool { return r.From.IsZero() && r.To.IsZero() }

// Contains reports whether t lies in r. A zero t is in no bounded range.
func (r TimeRange) Contains(t time.Time) bool {
	if r.IsZero() {
		return true
	}
	if t.IsZero() {
		return false
	}
	return (r.From.IsZero() || !t.Before(r.From)) && (r.To.IsZero() || t.Before(r.To))
}

// JobSearcher is an optional capability: listing and counting jobs by the
// search fields, and finding the job that holds an idempotency key.
type JobSearcher interface {
	// SearchJobs returns one page of jobs matching s, with the ordering and
	// the exactly-once paging rule of ListJobs.
	SearchJobs(ctx context.Context, s JobSearch) (JobPage, error)

	// CountSearch counts the jobs matching s by state.
	CountSearch(ctx context.Context, s JobSearch) (map[JobState]int64, error)

	// FindByIdempotencyKey returns the retained job of queue that holds key,
	// whatever its state, or [ErrNotFound] when none does (never held, or
	// released by Cleanup or deletion).
	FindByIdempotencyKey(ctx context.Context, queue, key string) (Job, error)
}

// TaskInfo describes one task for [TaskLister].
type TaskInfo struct {
	// Name is the task's name.
	Name string `json:"name"`
	// Counts holds the number of retained jobs of the task by state; states
	// with no job may be left out.
	Counts map[JobState]int64 `json:"counts,omitempty"`
	// HasConfig reports whether a [TaskConfig] is stored for the task.
	HasConfig bool `json:"has_config"`
}

// TaskLister is an optional capability: naming every task.
type TaskLister interface {
	// ListTasks describes every task that has retained jobs or a stored
	// config, ordered by name.
	ListTasks(ctx context.Context) ([]TaskInfo, error)
}

// DeleteQueueRequest bounds one step of deleting a queue.
type DeleteQueueRequest struct {
	// Queue names the queue to delete.
	Queue string `json:"queue"`
	// Limit is the most jobs one step deletes; it must be in [1, Limits.MaxBatch].
	Limit int `json:"limit"`
}

// DeleteQueueResult reports one step of deleting a queue.
type DeleteQueueResult struct {
	// Deleted is the number of jobs this step deleted.
	Deleted int `json:"deleted"`
	// Done reports that the queue had no job left and that its config (and
	// its paused flag) was deleted in this step.
	Done bool `json:"done"`
}

// JobDeleter is an optional capability: deleting jobs and queues.
type JobDeleter interface {
	// DeleteJob deletes one job with its runs and checkpoints and releases
	// its idempotency key. A running job is refused with [ErrInvalidState]
	// unless force is set; force cancels and deletes it in one step, so its
	// lease is superseded and its worker's next fenced call fails with
	// [ErrLeaseLost]. A missing job gives [ErrNotFound].
	DeleteJob(ctx context.Context, jobID string, force bool) error

	// DeleteQueue runs one bounded step of deleting a queue: it deletes at
	// most req.Limit of the queue's jobs in any state (running ones as
	// DeleteJob with force does), and, once none is left, the queue's
	// config. Call it until Done. Jobs enqueued while it runs are deleted
	// by later steps; task configs are left alone, since tasks are not
	// bound to one queue.
	DeleteQueue(ctx context.Context, req DeleteQueueRequest) (DeleteQueueResult, error)
}

// ParseRunID splits a run id made by [RunID] into its job id and token.
func ParseRunID(runID string) (jobID string, token int64, err error) {
	i := strings.LastIndexByte(runID, '.')
	if i <= 0 || i == len(runID)-1 {
		return "", 0, invalid("run_id", "%q is not <job id>.<token>", clip(runID))
	}
	token, perr := strconv.ParseInt(runID[i+1:], 10, 64)
	if perr != nil || token <= 0 || runID[i+1] == '+' || runID[i+1] == '0' {
		return "", 0, invalid("run_id", "%q has no positive decimal token", clip(runID))
	}
	jobID = runID[:i]
	if len(jobID) > MaxNameLength {
		return "", 0, invalid("run_id", "job id is too long")
	}
	return jobID, token, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// ValidateRunFilter checks a run filter. A Cursor must be a run id as
// [RunID] makes it; backends page by (JobID, Token) after it.
func ValidateRunFilter(f RunFilter) error {
	if f.JobID != "" && len(f.JobID) > MaxNameLength {
		return invalid("job_id", "is too long")
	}
	if f.Queue != "" {
		if err := ValidateName("queue", f.Queue); err != nil {
			return err
		}
	}
	if f.Task != "" {
		if err := ValidateName("task", f.Task); err != nil {
			return err
		}
	}
	for _, s := range f.Statuses {
		if !s.Valid() {
			return invalid("statuses", "unknown status %q", s)
		}
	}
	if !f.Since.IsZero() && !f.Before.IsZero() && !f.Since.Before(f.Before) {
		return invalid("since", "must be before before")
	}
	if f.Limit < 0 || f.Limit > MaxPageSize {
		return invalid("limit", "%d is outside [0, %d]", f.Limit, MaxPageSize)
	}
	if f.Cursor != "" {
		if _, _, err := ParseRunID(f.Cursor); err != nil {
			return invalid("cursor", "is not a run id")
		}
	}
	return nil
}

// ValidateJobSearch checks a search: its [JobFilter] as ValidateJobFilter
// does, and the search fields.
func ValidateJobSearch(s JobSearch) error {
	if err := ValidateJobFilter(s.JobFilter); err != nil {
		return err
	}
	if s.HeaderValue != "" && s.HeaderKey == "" {
		return invalid("header_value", "needs header_key")
	}
	if len(s.HeaderKey)+len(s.HeaderValue) > DefaultLimits.MaxHeaderBytes {
		return invalid("header", "key and value are %d bytes, the limit is %d", len(s.HeaderKey)+len(s.HeaderValue), DefaultLimits.MaxHeaderBytes)
	}
	if !utf8.ValidString(s.HeaderKey) || !utf8.ValidString(s.HeaderValue) {
		return invalid("header", "key or value is not valid UTF-8")
	}
	for field, k := range map[string]string{"limit_key": s.LimitKey, "sequence_key": s.SequenceKey} {
		if k != "" {
			if err := ValidateName(field, k); err != nil {
				return err
			}
		}
	}
	if len(s.IDPrefix) > IDLength*2 {
		return invalid("id_prefix", "is too long")
	}
	if len(s.IDs) > MaxPageSize {
		return invalid("ids", "%d ids, the limit is %d", len(s.IDs), MaxPageSize)
	}
	for _, id := range s.IDs {
		if id == "" || len(id) > MaxNameLength {
			return invalid("ids", "an id is empty or too long")
		}
	}
	for name, r := range map[string]TimeRange{"created": s.Created, "finished": s.Finished} {
		if !r.From.IsZero() && !r.To.IsZero() && !r.From.Before(r.To) {
			return invalid(name, "from must be before to")
		}
	}
	return nil
}

// ValidateDeleteQueue checks one step of a queue deletion.
func ValidateDeleteQueue(r DeleteQueueRequest, l Limits) error {
	if err := ValidateName("queue", r.Queue); err != nil {
		return err
	}
	return l.ValidateBatch("limit", r.Limit)
}

// Matches reports whether j matches s. Backends that filter in the
// process, and tests, use it as the reference meaning of a search; it
// ignores Limit, Cursor and Desc.
func (s JobSearch) Matches(j Job) bool {
	if s.Queue != "" && j.Queue != s.Queue || s.Task != "" && j.Task != s.Task {
		return false
	}
	if len(s.States) > 0 {
		ok := false
		for _, st := range s.States {
			ok = ok || st == j.State
		}
		if !ok {
			return false
		}
	}
	if s.HeaderKey != "" {
		v, ok := j.Headers[s.HeaderKey]
		if !ok || s.HeaderValue != "" && v != s.HeaderValue {
			return false
		}
	}
	if !strings.HasPrefix(j.ID, s.IDPrefix) {
		return false
	}
	if len(s.IDs) > 0 {
		ok := false
		for _, id := range s.IDs {
			ok = ok || id == j.ID
		}
		if !ok {
			return false
		}
	}
	return s.Created.Contains(j.CreatedAt) && s.Finished.Contains(j.FinishedAt)
}

// Matches reports whether run r of a job of queue and task matches f,
// ignoring Limit, Cursor and Desc.
func (f RunFilter) Matches(r Run) bool {
	if f.JobID != "" && r.JobID != f.JobID || f.Queue != "" && r.Queue != f.Queue || f.Task != "" && r.Task != f.Task {
		return false
	}
	if len(f.Statuses) > 0 {
		ok := false
		for _, st := range f.Statuses {
			ok = ok || st == r.Status
		}
		if !ok {
			return false
		}
	}
	return (f.Since.IsZero() || !r.StartedAt.Before(f.Since)) && (f.Before.IsZero() || r.StartedAt.Before(f.Before))
}

// ValidateKeyLookup checks the arguments of FindByIdempotencyKey: a valid
// queue name and a non-empty key that an enqueue would accept.
func ValidateKeyLookup(queue, key string) error {
	if err := ValidateName("queue", queue); err != nil {
		return err
	}
	if key == "" {
		return invalid("idempotency_key", "must not be empty")
	}
	if len(key) > MaxIdempotencyKeyLength || !utf8.ValidString(key) {
		return invalid("idempotency_key", "must be valid UTF-8 of at most %d bytes", MaxIdempotencyKeyLength)
	}
	return nil
}

// ValidateJobID checks a job id handed to DeleteJob: 1 to [MaxNameLength]
// bytes. An id that is well formed but names no job gives [ErrNotFound].
func ValidateJobID(jobID string) error {
	if jobID == "" || len(jobID) > MaxNameLength {
		return invalid("job_id", "must be 1 to %d bytes", MaxNameLength)
	}
	return nil
}

// HasSearchFields reports whether s sets any field beyond its [JobFilter].
func (s JobSearch) HasSearchFields() bool {
	return s.HeaderKey != "" || s.IDPrefix != "" || len(s.IDs) > 0 || !s.Created.IsZero() || !s.Finished.IsZero()
}
