package faulty

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// Faults of the operations capabilities: runs across jobs, search, task
// listing and deletion. Each wraps a backend that implements them all.

func init() {
	register(Fault{
		Name:     "delete-leaves-checkpoints",
		What:     "DeleteJob deletes the job but its checkpoints stay readable",
		CaughtBy: []string{"Delete/EachState", "Delete/ForceRunning"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &deleteLeavesCheckpoints{base: base{b}, kept: map[string][]core.Checkpoint{}}
		},
	})
	register(Fault{
		Name:     "delete-keeps-key",
		What:     "DeleteJob does not release the job's idempotency key",
		CaughtBy: []string{"Delete/ReleasesKey"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &deleteKeepsKey{base: base{b}, held: map[[2]string]core.Job{}}
		},
	})
	register(Fault{
		Name:     "force-delete-keeps-lease",
		What:     "a forced DeleteJob hides the running job but its lease keeps working",
		CaughtBy: []string{"Delete/ForceRunning", "Delete/ForceNotRescued"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &forceKeepsLease{base: base{b}, hidden: map[string]bool{}}
		},
	})
	register(Fault{
		Name:     "delete-running-unforced",
		What:     "DeleteJob deletes a running job without force",
		CaughtBy: []string{"Delete/RunningRefused"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return deleteRunningUnforced{base{b}} },
	})
	register(Fault{
		Name:     "delete-queue-keeps-config",
		What:     "DeleteQueue reports done but leaves the queue's config",
		CaughtBy: []string{"Delete/Queue", "Delete/QueueEmpty"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return deleteQueueKeepsConfig{base{b}} },
	})
	register(Fault{
		Name:     "delete-queue-spills",
		What:     "each DeleteQueue step also deletes a job of another queue",
		CaughtBy: []string{"Delete/QueueLeavesOthers"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return deleteQueueSpills{base{b}} },
	})
	register(Fault{
		Name:     "search-ignores-header-value",
		What:     "SearchJobs and CountSearch match any value of the header key",
		CaughtBy: []string{"Search/Filters", "Search/FiltersDescending", "Search/Count"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return searchIgnoresValue{base{b}} },
	})
	register(Fault{
		Name:     "search-like-wildcards",
		What:     "SearchJobs reads '%' and '_' in a header value or id prefix as SQL LIKE wildcards",
		CaughtBy: []string{"Search/Filters", "Search/FiltersDescending"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return searchLike{base{b}} },
	})
	register(Fault{
		Name:     "search-paging-repeats",
		What:     "SearchJobs's Next points at the page's next-to-last job, so one job is listed twice",
		CaughtBy: []string{"Search/Filters", "Search/PaginationWhileStatesChange"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return searchPagingRepeats{base{b}} },
	})
	register(Fault{
		Name:     "count-search-ignores-search-fields",
		What:     "CountSearch counts what the JobFilter alone selects",
		CaughtBy: []string{"Search/Count"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return countSearchFilterOnly{base{b}} },
	})
	register(Fault{
		Name:     "search-ignores-id-prefix",
		What:     "SearchJobs and CountSearch ignore JobSearch.IDPrefix",
		CaughtBy: []string{"Search/Filters", "Search/FiltersDescending", "Search/Count"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return searchIgnoresIDPrefix{base{b}} },
	})
	register(Fault{
		Name:     "search-created-to-inclusive",
		What:     "SearchJobs and CountSearch include jobs created exactly at the Created range's upper bound",
		CaughtBy: []string{"Search/Filters", "Search/FiltersDescending", "Search/Count"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return searchCreatedToInclusive{base{b}} },
	})
	register(Fault{
		Name:     "search-ignores-finished",
		What:     "SearchJobs and CountSearch ignore JobSearch.Finished",
		CaughtBy: []string{"Search/Filters", "Search/FiltersDescending", "Search/Count"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return searchIgnoresFinished{base{b}} },
	})
	register(Fault{
		Name:     "run-paging-skips",
		What:     "ListAllRuns drops the first run after a cursor",
		CaughtBy: []string{"Runs/ListFilters", "Runs/ListFiltersDescending", "Runs/TokenOrder", "Runs/PaginationWhileRunsAdded"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return runPagingSkips{base{b}} },
	})
	register(Fault{
		Name:     "run-paging-repeats",
		What:     "ListAllRuns's Next points at the page's next-to-last run, so one run is listed twice",
		CaughtBy: []string{"Runs/ListFilters", "Runs/PaginationWhileRunsAdded", "Runs/PaginationDescending"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return runPagingRepeats{base{b}} },
	})
	register(Fault{
		Name:     "run-order-as-text",
		What:     "ListAllRuns orders the runs of a page by run id as text, so token 10 comes before 9",
		CaughtBy: []string{"Runs/TokenOrder"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return runOrderAsText{base{b}} },
	})
	register(Fault{
		Name:     "get-run-without-job",
		What:     "GetRun leaves the run's queue and task empty",
		CaughtBy: []string{"Runs/GetRun"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return getRunWithoutJob{base{b}} },
	})
	register(Fault{
		Name:     "count-runs-ignores-since",
		What:     "CountRuns ignores the lower time bound",
		CaughtBy: []string{"Runs/Count"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return countRunsNoSince{base{b}} },
	})
	register(Fault{
		Name:     "find-key-any-queue",
		What:     "FindByIdempotencyKey falls back to a job of another queue that holds the key",
		CaughtBy: []string{"Search/FindByKey"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return findKeyAnyQueue{base{b}} },
	})
	register(Fault{
		Name:     "list-tasks-omits-config-only",
		What:     "ListTasks leaves out tasks that have a config but no job",
		CaughtBy: []string{"Tasks/ConfigOnly", "Tasks/AfterCleanup"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return tasksOmitConfigOnly{base{b}} },
	})
}

// deleteLeavesCheckpoints remembers the checkpoints of the jobs it
// deletes and keeps serving them.
type deleteLeavesCheckpoints struct {
	base
	mu   sync.Mutex
	kept map[string][]core.Checkpoint
}

func (d *deleteLeavesCheckpoints) DeleteJob(ctx context.Context, id string, force bool) error {
	cs, _ := d.QueueBackend.Checkpoints(ctx, id)
	err := d.base.DeleteJob(ctx, id, force)
	if err == nil && len(cs) > 0 {
		d.mu.Lock()
		d.kept[id] = cs
		d.mu.Unlock()
	}
	return err
}

func (d *deleteLeavesCheckpoints) Checkpoints(ctx context.Context, id string) ([]core.Checkpoint, error) {
	d.mu.Lock()
	cs, ok := d.kept[id]
	d.mu.Unlock()
	if ok {
		return slices.Clone(cs), nil
	}
	return d.QueueBackend.Checkpoints(ctx, id)
}

// deleteKeepsKey remembers the key of every job it deletes and answers
// enqueues and lookups of that key with the deleted job.
type deleteKeepsKey struct {
	base
	mu   sync.Mutex
	held map[[2]string]core.Job
}

func (d *deleteKeepsKey) DeleteJob(ctx context.Context, id string, force bool) error {
	j, _ := d.QueueBackend.GetJob(ctx, id)
	err := d.base.DeleteJob(ctx, id, force)
	if err == nil && j.IdempotencyKey != "" {
		d.mu.Lock()
		d.held[[2]string{j.Queue, j.IdempotencyKey}] = j
		d.mu.Unlock()
	}
	return err
}

func (d *deleteKeepsKey) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range reqs {
		queue := r.Queue
		if queue == "" {
			queue = core.DefaultQueue
		}
		if j, ok := d.held[[2]string{queue, r.IdempotencyKey}]; ok && len(reqs) == 1 {
			fp := r.Fingerprint
			if fp == "" {
				fp = core.Fingerprint(r)
			}
			if fp != j.Fingerprint {
				return nil, fmt.Errorf("%w: key %q", core.ErrIdempotencyConflict, r.IdempotencyKey)
			}
			return []core.EnqueueResult{{Job: j, Reused: true}}, nil
		}
	}
	return d.QueueBackend.Enqueue(ctx, reqs)
}

func (d *deleteKeepsKey) FindByIdempotencyKey(ctx context.Context, queue, key string) (core.Job, error) {
	d.mu.Lock()
	j, ok := d.held[[2]string{queue, key}]
	d.mu.Unlock()
	if ok {
		return j, nil
	}
	return d.base.FindByIdempotencyKey(ctx, queue, key)
}

// forceKeepsLease hides a force-deleted running job from reads and
// deletes it for real only when it leaves the running state.
type forceKeepsLease struct {
	base
	mu     sync.Mutex
	hidden map[string]bool
}

func (f *forceKeepsLease) isHidden(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hidden[id]
}

func (f *forceKeepsLease) DeleteJob(ctx context.Context, id string, force bool) error {
	if force && !f.isHidden(id) {
		if j, err := f.QueueBackend.GetJob(ctx, id); err == nil && j.State == core.StateRunning {
			f.mu.Lock()
			f.hidden[id] = true
			f.mu.Unlock()
			return nil
		}
	}
	if f.isHidden(id) {
		return fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	return f.base.DeleteJob(ctx, id, force)
}

func (f *forceKeepsLease) GetJob(ctx context.Context, id string) (core.Job, error) {
	if f.isHidden(id) {
		return core.Job{}, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	return f.QueueBackend.GetJob(ctx, id)
}

func (f *forceKeepsLease) ListRuns(ctx context.Context, id string) ([]core.Run, error) {
	if f.isHidden(id) {
		return nil, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	return f.QueueBackend.ListRuns(ctx, id)
}

func (f *forceKeepsLease) Checkpoints(ctx context.Context, id string) ([]core.Checkpoint, error) {
	if f.isHidden(id) {
		return nil, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	return f.QueueBackend.Checkpoints(ctx, id)
}

func (f *forceKeepsLease) GetRun(ctx context.Context, runID string) (core.Run, error) {
	if id, _, err := core.ParseRunID(runID); err == nil && f.isHidden(id) {
		return core.Run{}, fmt.Errorf("%w: run %s", core.ErrNotFound, runID)
	}
	return f.base.GetRun(ctx, runID)
}

func (f *forceKeepsLease) ListAllRuns(ctx context.Context, rf core.RunFilter) (core.RunPage, error) {
	p, err := f.base.ListAllRuns(ctx, rf)
	p.Runs = slices.DeleteFunc(p.Runs, func(r core.Run) bool { return f.isHidden(r.JobID) })
	return p, err
}

func (f *forceKeepsLease) SearchJobs(ctx context.Context, s core.JobSearch) (core.JobPage, error) {
	p, err := f.base.SearchJobs(ctx, s)
	p.Jobs = slices.DeleteFunc(p.Jobs, func(j core.Job) bool { return f.isHidden(j.ID) })
	return p, err
}

// deleteRunningUnforced forces every deletion.
type deleteRunningUnforced struct{ base }

func (d deleteRunningUnforced) DeleteJob(ctx context.Context, id string, _ bool) error {
	return d.base.DeleteJob(ctx, id, true)
}

// deleteQueueKeepsConfig stores the queue's config again once the queue
// is deleted.
type deleteQueueKeepsConfig struct{ base }

func (d deleteQueueKeepsConfig) DeleteQueue(ctx context.Context, r core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	cfg, cerr := d.QueueBackend.GetQueueConfig(ctx, r.Queue)
	res, err := d.base.DeleteQueue(ctx, r)
	if err == nil && res.Done && cerr == nil && cfg != (core.QueueConfig{Queue: r.Queue}) {
		if perr := d.QueueBackend.PutQueueConfig(ctx, cfg); perr != nil {
			return res, perr
		}
	}
	return res, err
}

// deleteQueueSpills deletes the first job of another queue with each step.
type deleteQueueSpills struct{ base }

func (d deleteQueueSpills) DeleteQueue(ctx context.Context, r core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	res, err := d.base.DeleteQueue(ctx, r)
	if err != nil || res.Done {
		return res, err
	}
	p, lerr := d.QueueBackend.ListJobs(ctx, core.JobFilter{Limit: core.MaxPageSize})
	if lerr != nil {
		return res, lerr
	}
	for _, j := range p.Jobs {
		if j.Queue != r.Queue {
			return res, d.base.DeleteJob(ctx, j.ID, true)
		}
	}
	return res, nil
}

// searchIgnoresValue drops the header value from every search.
type searchIgnoresValue struct{ base }

func (s searchIgnoresValue) SearchJobs(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	q.HeaderValue = ""
	return s.base.SearchJobs(ctx, q)
}

func (s searchIgnoresValue) CountSearch(ctx context.Context, q core.JobSearch) (map[core.JobState]int64, error) {
	q.HeaderValue = ""
	return s.base.CountSearch(ctx, q)
}

// searchLike matches header values and id prefixes that hold '%' or '_'
// as SQL LIKE patterns would, paging by itself over the whole result.
type searchLike struct{ base }

func (s searchLike) SearchJobs(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	if !strings.ContainsAny(q.HeaderValue+q.IDPrefix, "%_") {
		return s.base.SearchJobs(ctx, q)
	}
	if err := core.ValidateJobSearch(q); err != nil {
		return core.JobPage{}, err
	}
	wide := q
	wide.HeaderValue, wide.IDPrefix, wide.Cursor, wide.Limit = "", "", "", core.MaxPageSize
	var all []core.Job
	for {
		p, err := s.base.SearchJobs(ctx, wide)
		if err != nil {
			return core.JobPage{}, err
		}
		for _, j := range p.Jobs {
			v, ok := j.Headers[q.HeaderKey]
			if (q.HeaderValue == "" || ok && like(v, q.HeaderValue)) && (q.IDPrefix == "" || like(j.ID, q.IDPrefix+"%")) &&
				(q.Cursor == "" || !q.Desc && j.ID > q.Cursor || q.Desc && j.ID < q.Cursor) {
				all = append(all, j)
			}
		}
		if p.Next == "" {
			break
		}
		wide.Cursor = p.Next
	}
	page := core.JobPage{Jobs: all}
	if n := q.PageSize(); len(all) > n {
		page.Jobs, page.Next = all[:n], all[n-1].ID
	}
	return page, nil
}

// like reports whether s matches the SQL LIKE pattern p without escapes.
func like(s, p string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if like(s[i:], p[1:]) {
				return true
			}
		}
		return false
	case '_':
		return s != "" && like(s[1:], p[1:])
	}
	return s != "" && s[0] == p[0] && like(s[1:], p[1:])
}

// searchPagingRepeats moves Next back by one job.
type searchPagingRepeats struct{ base }

func (s searchPagingRepeats) SearchJobs(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	p, err := s.base.SearchJobs(ctx, q)
	if err == nil && p.Next != "" && len(p.Jobs) >= 2 {
		p.Next = p.Jobs[len(p.Jobs)-2].ID
	}
	return p, err
}

// countSearchFilterOnly counts with the JobFilter alone.
type countSearchFilterOnly struct{ base }

func (c countSearchFilterOnly) CountSearch(ctx context.Context, q core.JobSearch) (map[core.JobState]int64, error) {
	if err := core.ValidateJobSearch(q); err != nil {
		return nil, err
	}
	return c.QueueBackend.CountJobs(ctx, q.JobFilter)
}

// searchIgnoresIDPrefix drops the id prefix from every valid search.
type searchIgnoresIDPrefix struct{ base }

func (s searchIgnoresIDPrefix) SearchJobs(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	return s.base.SearchJobs(ctx, ifValid(q, func(q *core.JobSearch) { q.IDPrefix = "" }))
}

func (s searchIgnoresIDPrefix) CountSearch(ctx context.Context, q core.JobSearch) (map[core.JobState]int64, error) {
	return s.base.CountSearch(ctx, ifValid(q, func(q *core.JobSearch) { q.IDPrefix = "" }))
}

// searchCreatedToInclusive moves the Created range's upper bound of every
// valid search one nanosecond later, so a job created exactly at it
// matches.
type searchCreatedToInclusive struct{ base }

func createdToInclusive(q *core.JobSearch) {
	if !q.Created.To.IsZero() {
		q.Created.To = q.Created.To.Add(time.Nanosecond)
	}
}

func (s searchCreatedToInclusive) SearchJobs(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	return s.base.SearchJobs(ctx, ifValid(q, createdToInclusive))
}

func (s searchCreatedToInclusive) CountSearch(ctx context.Context, q core.JobSearch) (map[core.JobState]int64, error) {
	return s.base.CountSearch(ctx, ifValid(q, createdToInclusive))
}

// searchIgnoresFinished drops the Finished range from every valid search.
type searchIgnoresFinished struct{ base }

func (s searchIgnoresFinished) SearchJobs(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	return s.base.SearchJobs(ctx, ifValid(q, func(q *core.JobSearch) { q.Finished = core.TimeRange{} }))
}

func (s searchIgnoresFinished) CountSearch(ctx context.Context, q core.JobSearch) (map[core.JobState]int64, error) {
	return s.base.CountSearch(ctx, ifValid(q, func(q *core.JobSearch) { q.Finished = core.TimeRange{} }))
}

// ifValid returns q changed by change when q is a valid search, and q
// itself otherwise, so that invalid searches are still refused.
func ifValid(q core.JobSearch, change func(*core.JobSearch)) core.JobSearch {
	if core.ValidateJobSearch(q) == nil {
		change(&q)
	}
	return q
}

// runPagingSkips drops the first run of every page that follows a cursor.
type runPagingSkips struct{ base }

func (r runPagingSkips) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	p, err := r.base.ListAllRuns(ctx, f)
	if err == nil && f.Cursor != "" && len(p.Runs) > 0 {
		p.Runs = p.Runs[1:]
	}
	return p, err
}

// runPagingRepeats moves Next back by one run.
type runPagingRepeats struct{ base }

func (r runPagingRepeats) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	p, err := r.base.ListAllRuns(ctx, f)
	if err == nil && p.Next != "" && len(p.Runs) >= 2 {
		p.Next = p.Runs[len(p.Runs)-2].ID
	}
	return p, err
}

// runOrderAsText sorts each page of runs by run id as a string.
type runOrderAsText struct{ base }

func (r runOrderAsText) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	p, err := r.base.ListAllRuns(ctx, f)
	slices.SortStableFunc(p.Runs, func(a, b core.Run) int {
		if f.Desc {
			return strings.Compare(b.ID, a.ID)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return p, err
}

// getRunWithoutJob clears the queue and task of GetRun's run.
type getRunWithoutJob struct{ base }

func (g getRunWithoutJob) GetRun(ctx context.Context, id string) (core.Run, error) {
	r, err := g.base.GetRun(ctx, id)
	r.Queue, r.Task = "", ""
	return r, err
}

// countRunsNoSince drops the lower time bound of CountRuns.
type countRunsNoSince struct{ base }

func (c countRunsNoSince) CountRuns(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	f.Since = time.Time{}
	return c.base.CountRuns(ctx, f)
}

// findKeyAnyQueue looks the key up in every queue when the named one
// does not hold it.
type findKeyAnyQueue struct{ base }

func (f findKeyAnyQueue) FindByIdempotencyKey(ctx context.Context, queue, key string) (core.Job, error) {
	j, err := f.base.FindByIdempotencyKey(ctx, queue, key)
	if !errors.Is(err, core.ErrNotFound) {
		return j, err
	}
	qs, qerr := f.QueueBackend.ListQueues(ctx)
	if qerr != nil {
		return j, qerr
	}
	for _, q := range qs {
		if other, oerr := f.base.FindByIdempotencyKey(ctx, q.Queue, key); oerr == nil {
			return other, nil
		}
	}
	return j, err
}

// tasksOmitConfigOnly drops tasks without jobs.
type tasksOmitConfigOnly struct{ base }

func (t tasksOmitConfigOnly) ListTasks(ctx context.Context) ([]core.TaskInfo, error) {
	ts, err := t.base.ListTasks(ctx)
	return slices.DeleteFunc(ts, func(ti core.TaskInfo) bool {
		for _, n := range ti.Counts {
			if n != 0 {
				return false
			}
		}
		return true
	}), err
}
