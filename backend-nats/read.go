package natsq

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/boson-go/boson/core"
)

// Reads answer from this replica. They see every command this Backend
// issued; to also see what other processes wrote a moment ago, call Sync
// first.

// GetJob implements core.QueueBackend.
func (b *Backend) GetJob(ctx context.Context, jobID string) (core.Job, error) {
	if err := b.readable(ctx); err != nil {
		return core.Job{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	r, ok := b.st.jobs[jobID]
	if !ok {
		return core.Job{}, fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
	}
	return copyJob(r.job), nil
}

func (b *Backend) readable(ctx context.Context) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	return ctx.Err()
}

func matches(f *core.JobFilter, j *core.Job) bool {
	if f.Queue != "" && j.Queue != f.Queue || f.Task != "" && j.Task != f.Task {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, j.State)
}

// ListJobs implements core.QueueBackend. Pages follow the job id, which
// never changes, so a listing visits each matching job once.
func (b *Backend) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	if err := b.readable(ctx); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return core.JobPage{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.st.listJobs(f, nil, func(j *core.Job) bool { return matches(&f, j) }), nil
}

// listJobs returns the page of f's jobs that match: jobs in id order (or
// descending) after f.Cursor, from all jobs (those of f.Queue when it is
// set), or, when ids is not nil, from those of ids the replica holds. The
// caller holds the lock.
func (s *state) listJobs(f core.JobFilter, ids []string, match func(*core.Job) bool) core.JobPage {
	size := f.PageSize()
	page := core.JobPage{Jobs: []core.Job{}}
	more := false
	visit := func(id string) bool {
		if id == f.Cursor {
			return true
		}
		r := s.jobs[id]
		if r == nil || !match(&r.job) {
			return true
		}
		if len(page.Jobs) == size {
			more = true
			return false
		}
		page.Jobs = append(page.Jobs, copyJob(r.job))
		return true
	}
	switch {
	case ids != nil:
		ids = slices.Clone(ids)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		if f.Desc {
			slices.Reverse(ids)
		}
		for _, id := range ids {
			if f.Cursor != "" && (!f.Desc && id < f.Cursor || f.Desc && id > f.Cursor) {
				continue
			}
			if !visit(id) {
				break
			}
		}
	default:
		walkIDs(s.idIndex(f.Queue), f.Cursor, f.Desc, visit)
	}
	if more {
		page.Next = page.Jobs[len(page.Jobs)-1].ID
	}
	return page
}

// CountJobs implements core.QueueBackend. States with no jobs are omitted.
func (b *Backend) CountJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.st.countJobs(f), nil
}

// countJobs counts f's jobs by state from the counters, without visiting
// a job. The caller holds the lock.
func (s *state) countJobs(f core.JobFilter) map[core.JobState]int64 {
	out := map[core.JobState]int64{}
	for k, n := range s.counts {
		if f.Queue != "" && k.queue != f.Queue || f.Task != "" && k.task != f.Task {
			continue
		}
		if len(f.States) > 0 && !slices.Contains(f.States, k.state) {
			continue
		}
		out[k.state] += n
	}
	return out
}

// ListRuns implements core.QueueBackend.
func (b *Backend) ListRuns(ctx context.Context, jobID string) ([]core.Run, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	r, ok := b.st.jobs[jobID]
	if !ok {
		return nil, fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
	}
	return append([]core.Run{}, r.runs...), nil
}

// Checkpoints implements core.QueueBackend.
func (b *Backend) Checkpoints(ctx context.Context, jobID string) ([]core.Checkpoint, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	r, ok := b.st.jobs[jobID]
	if !ok {
		return nil, fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
	}
	out := make([]core.Checkpoint, 0, len(r.checkpoints))
	for _, cp := range r.checkpoints {
		cp.Value = cloneBytes(cp.Value)
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// TaskStats implements core.QueueBackend.
func (b *Backend) TaskStats(ctx context.Context, task string) (core.TaskStats, error) {
	if err := b.readable(ctx); err != nil {
		return core.TaskStats{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskStats{}, err
	}
	ts := core.TaskStats{Task: task, Jobs: map[core.JobState]int64{}, Runs: map[core.RunStatus]int64{}}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for k, n := range b.st.counts {
		if k.task == task {
			ts.Jobs[k.state] += n
		}
	}
	if rs := b.st.taskRuns[task]; rs != nil {
		for s, n := range rs.runs {
			if n > 0 {
				ts.Runs[s] = n
			}
		}
		ts.RunTime = rs.runTime
	}
	return ts, nil
}

// ListQueues implements core.QueueBackend.
func (b *Backend) ListQueues(ctx context.Context) ([]core.QueueInfo, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	byName := map[string]*core.QueueInfo{}
	get := func(q string) *core.QueueInfo {
		qi := byName[q]
		if qi == nil {
			qi = &core.QueueInfo{Queue: q, Jobs: map[core.JobState]int64{}, Paused: b.st.queueCfg[q].Paused, Declared: b.st.declared[q]}
			byName[q] = qi
		}
		return qi
	}
	for k, n := range b.st.counts {
		get(k.queue).Jobs[k.state] += n
	}
	for q := range b.st.queueCfg {
		get(q)
	}
	out := make([]core.QueueInfo, 0, len(byName))
	for _, qi := range byName {
		out = append(out, *qi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}

// GetTaskConfig implements core.QueueBackend.
func (b *Backend) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	if err := b.readable(ctx); err != nil {
		return core.TaskConfig{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	cfg, ok := b.st.taskCfg[task]
	if !ok {
		return core.TaskConfig{}, fmt.Errorf("%w: task config %s", core.ErrNotFound, task)
	}
	return cfg, nil
}

// GetQueueConfig implements core.QueueBackend.
func (b *Backend) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	if err := b.readable(ctx); err != nil {
		return core.QueueConfig{}, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return core.QueueConfig{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	cfg, ok := b.st.queueCfg[queue]
	if !ok {
		return core.QueueConfig{Queue: queue}, nil
	}
	return cfg, nil
}

// hasDue reports whether this replica holds a due job of queue.
func (b *Backend) hasDue(queue string, now time.Time) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return !b.st.queueCfg[queue].Paused && b.hasDueLocked(queue, now)
}

func (b *Backend) hasDueLocked(queue string, now time.Time) bool {
	return b.st.claimable(queue, micros(now))
}

// rescueDueLocked reports whether a rescue pass at now would change a job
// this replica knows of.
func (b *Backend) rescueDueLocked(now time.Time) bool {
	for _, r := range b.st.running {
		if !r.job.Lease.ExpiresAt.After(now) {
			return true
		}
	}
	for _, m := range b.st.deadlined {
		for _, r := range m {
			if d, ok := core.Deadline(r.job); ok && !now.Before(d) {
				return true
			}
		}
	}
	return false
}
