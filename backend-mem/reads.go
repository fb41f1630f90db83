package mem

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/boson-go/boson/core"
)

// GetJob returns a copy of one job, or [core.ErrNotFound]. Cost: O(log n),
// a binary search of the id index.
func (b *Backend) GetJob(ctx context.Context, jobID string) (core.Job, error) {
	if err := b.lock(ctx); err != nil {
		return core.Job{}, err
	}
	defer b.mu.Unlock()
	r, err := b.s.get(jobID)
	if err != nil {
		return core.Job{}, err
	}
	return r.copyOut(), nil
}

func (s *store) get(jobID string) (*jobRec, error) {
	r := s.ids.find(jobID)
	if r == nil {
		return nil, fmt.Errorf("%w: job %q", core.ErrNotFound, jobID)
	}
	return r, nil
}

// ListJobs returns one page of the jobs matching f in id order (newest
// first when f.Desc), starting strictly after (or, descending, before) the
// id in f.Cursor. Next is the id of the page's last job when more jobs
// match, else empty. It walks the narrowest id index the filter allows (the
// queue's, else the task's, else the global one) from the cursor: O(log n)
// to find the cursor plus the jobs it looks at.
func (b *Backend) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	return b.SearchJobs(ctx, core.JobSearch{JobFilter: f})
}

// CountJobs counts the jobs matching f by state, omitting zero counts. It
// sums counters kept per (queue, task) pair: O(number of pairs), never a
// scan of the jobs.
func (b *Backend) CountJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	return b.CountSearch(ctx, core.JobSearch{JobFilter: f})
}

// countJobs sums the counters of the (queue, task) pairs, queues or tasks
// that f selects.
func (s *store) countJobs(f core.JobFilter) map[core.JobState]int64 {
	out := map[core.JobState]int64{}
	switch {
	case f.Queue != "" && f.Task != "":
		if p, ok := s.pairs[pairKey{f.Queue, f.Task}]; ok {
			p.addTo(out, f.States)
		}
	case f.Queue != "":
		if q, ok := s.queues[f.Queue]; ok {
			q.counts.addTo(out, f.States)
		}
	case f.Task != "":
		if t, ok := s.tasks[f.Task]; ok {
			t.counts.addTo(out, f.States)
		}
	default:
		for _, q := range s.queues {
			q.counts.addTo(out, f.States)
		}
	}
	return out
}

// ListRuns returns copies of a job's runs in claim order, or
// [core.ErrNotFound]. Cost: O(runs).
func (b *Backend) ListRuns(ctx context.Context, jobID string) ([]core.Run, error) {
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	r, err := b.s.get(jobID)
	if err != nil {
		return nil, err
	}
	return slices.Clone(r.view().runs), nil
}

// Checkpoints returns copies of a job's checkpoints ordered by step name,
// or [core.ErrNotFound]. Cost: O(c log c) for c checkpoints.
func (b *Backend) Checkpoints(ctx context.Context, jobID string) ([]core.Checkpoint, error) {
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	r, err := b.s.get(jobID)
	if err != nil {
		return nil, err
	}
	cps := r.view().checkpoints
	out := make([]core.Checkpoint, 0, len(cps))
	for _, c := range cps {
		out = append(out, copyCheckpoint(c))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// TaskStats returns the counters kept for a task: its jobs by state, its
// runs by status and the summed duration of its finished runs, omitting
// zero counts. A task without jobs gives empty maps. Cost: O(1).
func (b *Backend) TaskStats(ctx context.Context, task string) (core.TaskStats, error) {
	if err := b.usable(ctx); err != nil {
		return core.TaskStats{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskStats{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.TaskStats{}, err
	}
	defer b.mu.Unlock()

	st := core.TaskStats{Task: task, Jobs: map[core.JobState]int64{}, Runs: map[core.RunStatus]int64{}}
	t, ok := b.s.tasks[task]
	if !ok {
		return st, nil
	}
	t.counts.addTo(st.Jobs, nil)
	for i, n := range t.runs {
		if n != 0 {
			st.Runs[core.AllRunStatuses[i]] = n
		}
	}
	st.RunTime = t.runTime
	return st, nil
}

// ListQueues describes every queue that has jobs or a stored config,
// ordered by name. Cost: O(q log q) for q queues.
func (b *Backend) ListQueues(ctx context.Context) ([]core.QueueInfo, error) {
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s

	var out []core.QueueInfo
	seen := map[string]bool{}
	for name, q := range s.queues {
		if q.counts.total() == 0 {
			continue
		}
		info := core.QueueInfo{Queue: name, Jobs: map[core.JobState]int64{}, Paused: s.queueConfigs[name].Paused, Declared: s.declared[name]}
		q.counts.addTo(info.Jobs, nil)
		out = append(out, info)
		seen[name] = true
	}
	for name, cfg := range s.queueConfigs {
		if !seen[name] {
			out = append(out, core.QueueInfo{Queue: name, Jobs: map[core.JobState]int64{}, Paused: cfg.Paused, Declared: s.declared[name]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}
