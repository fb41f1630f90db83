package natsq

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/boson-go/boson/core"
)

// The operations reads (core.RunReader, core.JobSearcher, core.TaskLister)
// answer from this replica, as every read does, under its read lock. They
// scan the replica's jobs in id order (those of one queue when the filter
// names it), so their cost grows with the jobs scanned rather than with
// the page: the exceptions are a search by ids, GetRun and
// FindByIdempotencyKey (one lookup each), and counts that only filter by
// queue, task and state (the counters).

var (
	_ core.RunReader   = (*Backend)(nil)
	_ core.JobSearcher = (*Backend)(nil)
	_ core.TaskLister  = (*Backend)(nil)
	_ core.JobDeleter  = (*Backend)(nil)
)

// GetRun implements core.RunReader.
func (b *Backend) GetRun(ctx context.Context, runID string) (core.Run, error) {
	if err := b.readable(ctx); err != nil {
		return core.Run{}, err
	}
	jobID, token, err := core.ParseRunID(runID)
	if err != nil {
		return core.Run{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if r, ok := b.st.jobs[jobID]; ok {
		for _, run := range r.runs {
			if run.Token == token {
				run.Queue, run.Task = r.job.Queue, r.job.Task
				return run, nil
			}
		}
	}
	return core.Run{}, fmt.Errorf("%w: run %s", core.ErrNotFound, runID)
}

// ListAllRuns implements core.RunReader. Runs are listed by job id and,
// within a job, by token; a job's runs only ever grow at the end, and a
// page continues strictly after the cursor's (job id, token), so a
// listing visits every run once.
func (b *Backend) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	if err := b.readable(ctx); err != nil {
		return core.RunPage{}, err
	}
	if err := core.ValidateRunFilter(f); err != nil {
		return core.RunPage{}, err
	}
	var curJob string
	var curTok int64
	if f.Cursor != "" {
		curJob, curTok, _ = core.ParseRunID(f.Cursor)
	}
	size := f.PageSize()
	page := core.RunPage{Runs: []core.Run{}}
	more := false
	visitRun := func(r *jobRec, run core.Run) bool {
		if r.job.ID == curJob && (!f.Desc && run.Token <= curTok || f.Desc && run.Token >= curTok) {
			return true
		}
		run.Queue, run.Task = r.job.Queue, r.job.Task
		if !f.Matches(run) {
			return true
		}
		if len(page.Runs) == size {
			more = true
			return false
		}
		page.Runs = append(page.Runs, run)
		return true
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	b.st.eachRunJob(f, curJob, func(r *jobRec) bool {
		if f.Desc {
			for i := len(r.runs) - 1; i >= 0; i-- {
				if !visitRun(r, r.runs[i]) {
					return false
				}
			}
			return true
		}
		for _, run := range r.runs {
			if !visitRun(r, run) {
				return false
			}
		}
		return true
	})
	if more {
		page.Next = page.Runs[len(page.Runs)-1].ID
	}
	return page, nil
}

// CountRuns implements core.RunReader.
func (b *Backend) CountRuns(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateRunFilter(f); err != nil {
		return nil, err
	}
	out := map[core.RunStatus]int64{}
	b.mu.RLock()
	defer b.mu.RUnlock()
	b.st.eachRunJob(core.RunFilter{JobID: f.JobID, Queue: f.Queue, Task: f.Task}, "", func(r *jobRec) bool {
		for _, run := range r.runs {
			run.Queue, run.Task = r.job.Queue, r.job.Task
			if f.Matches(run) {
				out[run.Status]++
			}
		}
		return true
	})
	return out, nil
}

// eachRunJob calls fn, in f's order from the job from on (every job when
// from is empty), for each job with runs that f's job, queue and task
// select, until fn returns false. The caller holds the lock.
func (s *state) eachRunJob(f core.RunFilter, from string, fn func(*jobRec) bool) {
	visit := func(id string) bool {
		r := s.jobs[id]
		if r == nil || len(r.runs) == 0 || f.Queue != "" && r.job.Queue != f.Queue || f.Task != "" && r.job.Task != f.Task {
			return true
		}
		return fn(r)
	}
	switch {
	case f.JobID != "":
		if from == "" || !f.Desc && f.JobID >= from || f.Desc && f.JobID <= from {
			visit(f.JobID)
		}
	default:
		walkIDs(s.idIndex(f.Queue), from, f.Desc, visit)
	}
}

// SearchJobs implements core.JobSearcher, with the order and paging of
// ListJobs.
func (b *Backend) SearchJobs(ctx context.Context, s core.JobSearch) (core.JobPage, error) {
	if err := b.readable(ctx); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobSearch(s); err != nil {
		return core.JobPage{}, err
	}
	var ids []string
	if len(s.IDs) > 0 {
		ids = s.IDs
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.st.listJobs(s.JobFilter, ids, func(j *core.Job) bool { return searchMatches(&s, j) }), nil
}

// CountSearch implements core.JobSearcher.
func (b *Backend) CountSearch(ctx context.Context, s core.JobSearch) (map[core.JobState]int64, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateJobSearch(s); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if !s.HasSearchFields() && !hasFlowFilter(&s) {
		return b.st.countJobs(s.JobFilter), nil
	}
	out := map[core.JobState]int64{}
	count := func(id string) bool {
		if r := b.st.jobs[id]; r != nil && searchMatches(&s, &r.job) {
			out[r.job.State]++
		}
		return true
	}
	if len(s.IDs) > 0 {
		ids := slices.Clone(s.IDs)
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			count(id)
		}
		return out, nil
	}
	walkIDs(b.st.idIndex(s.Queue), "", false, count)
	return out, nil
}

// FindByIdempotencyKey implements core.JobSearcher: the job that holds the
// key now under its unique mode, by this replica's estimate of the
// server's time (the DecisionClock's time when one is set).
func (b *Backend) FindByIdempotencyKey(ctx context.Context, queue, key string) (core.Job, error) {
	if err := b.readable(ctx); err != nil {
		return core.Job{}, err
	}
	if err := core.ValidateKeyLookup(queue, key); err != nil {
		return core.Job{}, err
	}
	now, _ := b.estimate()
	b.mu.RLock()
	defer b.mu.RUnlock()
	r := b.st.holder(queue, key, now)
	if r == nil {
		return core.Job{}, fmt.Errorf("%w: no job of queue %s holds idempotency key %q", core.ErrNotFound, queue, key)
	}
	return copyJob(r.job), nil
}

// ListTasks implements core.TaskLister.
func (b *Backend) ListTasks(ctx context.Context) ([]core.TaskInfo, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	byName := map[string]*core.TaskInfo{}
	get := func(task string) *core.TaskInfo {
		ti := byName[task]
		if ti == nil {
			ti = &core.TaskInfo{Name: task, Counts: map[core.JobState]int64{}}
			byName[task] = ti
		}
		return ti
	}
	for k, n := range b.st.counts {
		get(k.task).Counts[k.state] += n
	}
	for task := range b.st.taskCfg {
		get(task).HasConfig = true
	}
	out := make([]core.TaskInfo, 0, len(byName))
	for _, ti := range byName {
		out = append(out, *ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
