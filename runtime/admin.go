package boson

import (
	"context"
	"fmt"
	"sort"

	"github.com/boson-go/boson/core"
)

// ListJobs returns one page of jobs from the backend that serves f.Queue
// (the default backend when f.Queue is empty); see
// [core.QueueBackend.ListJobs].
func (c *Client) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	b, err := c.router.Resolve(f.Queue)
	if err != nil {
		return core.JobPage{}, err
	}
	return b.ListJobs(ctx, f)
}

// CountJobs counts jobs by state: of f.Queue's backend when f.Queue is
// set, else summed over every backend of the client.
func (c *Client) CountJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	if f.Queue != "" {
		b, err := c.router.Resolve(f.Queue)
		if err != nil {
			return nil, err
		}
		return b.CountJobs(ctx, f)
	}
	out := map[core.JobState]int64{}
	for _, b := range distinct(c.router.Backends()) {
		n, err := b.CountJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		for s, v := range n {
			out[s] += v
		}
	}
	return out, nil
}

// ListRuns returns a job's runs in claim order, from whichever backend
// holds the job.
func (c *Client) ListRuns(ctx context.Context, jobID string) ([]core.Run, error) {
	_, b, err := c.find(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return b.ListRuns(ctx, jobID)
}

// Checkpoints returns a job's committed checkpoints ("step-<name>",
// "sleep-<name>", "await-<job id>"), from whichever backend holds the job.
func (c *Client) Checkpoints(ctx context.Context, jobID string) ([]core.Checkpoint, error) {
	_, b, err := c.find(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return b.Checkpoints(ctx, jobID)
}

// TaskStats aggregates one task's jobs and runs over every backend of the
// client.
func (c *Client) TaskStats(ctx context.Context, task string) (core.TaskStats, error) {
	out := core.TaskStats{Task: task, Jobs: map[core.JobState]int64{}, Runs: map[core.RunStatus]int64{}}
	for _, b := range distinct(c.router.Backends()) {
		s, err := b.TaskStats(ctx, task)
		if err != nil {
			return out, err
		}
		for k, v := range s.Jobs {
			out.Jobs[k] += v
		}
		for k, v := range s.Runs {
			out.Runs[k] += v
		}
		out.RunTime += s.RunTime
	}
	return out, nil
}

// ListQueues describes the queues of every backend of the client, ordered
// by name. A queue present on two backends is reported by the backend its
// route names.
func (c *Client) ListQueues(ctx context.Context) ([]core.QueueInfo, error) {
	seen := map[string]bool{}
	var out []core.QueueInfo
	for _, b := range distinct(c.router.Backends()) {
		qs, err := b.ListQueues(ctx)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			owner, err := c.router.Resolve(q.Queue)
			if err != nil {
				return nil, fmt.Errorf("boson: queue %s: %w", q.Queue, err)
			}
			if owner != b || seen[q.Queue] {
				continue
			}
			seen[q.Queue] = true
			out = append(out, q)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Queue < out[k].Queue })
	return out, nil
}

// GetTaskConfig returns the stored config of a task from the default
// backend, or an error wrapping [core.ErrNotFound].
func (c *Client) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	b, err := c.router.Resolve("")
	if err != nil {
		return core.TaskConfig{}, err
	}
	return b.GetTaskConfig(ctx, task)
}

// GetQueueConfig returns the stored config of a queue from the backend
// that serves it (the zero config when none is stored).
func (c *Client) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	b, err := c.router.Resolve(queue)
	if err != nil {
		return core.QueueConfig{}, err
	}
	return b.GetQueueConfig(ctx, queue)
}
