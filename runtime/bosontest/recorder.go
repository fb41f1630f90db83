package bosontest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// recorder is a minimal in-memory store behind a [Harness]: it keeps jobs
// and checkpoints so that spawns can be inspected and handlers can use
// steps, sleeps and awaits. It does not claim, lease or retry; the methods
// a test helper never needs report core.ErrUnsupported.
type recorder struct {
	clock core.Clock

	mu      sync.Mutex
	jobs    map[string]core.Job
	order   []string // spawned job ids in spawn order
	keys    map[string]string
	cps     map[string]map[string]core.Checkpoint
	configs map[string]core.TaskConfig
}

var _ core.QueueBackend = (*recorder)(nil)

func newRecorder(clock core.Clock) *recorder {
	return &recorder{
		clock:   clock,
		jobs:    map[string]core.Job{},
		keys:    map[string]string{},
		cps:     map[string]map[string]core.Checkpoint{},
		configs: map[string]core.TaskConfig{},
	}
}

func unsupported(op string) error {
	return fmt.Errorf("%w: bosontest does not %s", core.ErrUnsupported, op)
}

func (r *recorder) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	jobs, err := core.PrepareJobs(reqs, r.clock.Now(), core.Limits{})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]core.EnqueueResult, len(jobs))
	var fresh []core.Job
	for i, j := range jobs {
		if j.IdempotencyKey != "" {
			if id, ok := r.keys[j.Queue+"\x00"+j.IdempotencyKey]; ok {
				old := r.jobs[id]
				if old.Fingerprint != j.Fingerprint {
					return nil, &core.BatchError{Index: i, Err: core.ErrIdempotencyConflict}
				}
				out[i] = core.EnqueueResult{Job: old, Reused: true}
				continue
			}
		}
		out[i] = core.EnqueueResult{Job: j}
		fresh = append(fresh, j)
	}
	for _, j := range fresh {
		r.jobs[j.ID] = j
		r.order = append(r.order, j.ID)
		if j.IdempotencyKey != "" {
			r.keys[j.Queue+"\x00"+j.IdempotencyKey] = j.ID
		}
	}
	return out, nil
}

// put stores a job that was not spawned (the job a handler runs as).
func (r *recorder) put(j core.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs[j.ID] = j
}

func (r *recorder) spawned() []core.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]core.Job, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.jobs[id])
	}
	return out
}

func (r *recorder) setState(id string, st core.JobState, result []byte, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	j.State, j.Result, j.LastError, j.FinishedAt = st, result, msg, r.clock.Now()
	r.jobs[id] = j
	return nil
}

func (r *recorder) Claim(context.Context, core.ClaimRequest) ([]core.Job, error) {
	return nil, unsupported("claim")
}

func (r *recorder) Heartbeat(_ context.Context, l core.Lease, _ time.Duration) (core.Lease, error) {
	return l, nil
}

func (r *recorder) Complete(context.Context, []core.Completion) ([]error, error) {
	return nil, unsupported("complete")
}

func (r *recorder) Fail(context.Context, core.Failure) (core.JobState, error) {
	return "", unsupported("fail")
}

func (r *recorder) Sleep(context.Context, core.Lease, time.Time) error { return unsupported("sleep") }

func (r *recorder) SaveCheckpoint(_ context.Context, l core.Lease, step string, value []byte) ([]byte, error) {
	if err := core.ValidateName("step", step); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.cps[l.JobID]
	if m == nil {
		m = map[string]core.Checkpoint{}
		r.cps[l.JobID] = m
	}
	if c, ok := m[step]; ok {
		return slices.Clone(c.Value), nil
	}
	m[step] = core.Checkpoint{JobID: l.JobID, Step: step, Value: slices.Clone(value), CreatedAt: r.clock.Now()}
	return slices.Clone(value), nil
}

func (r *recorder) Checkpoints(_ context.Context, jobID string) ([]core.Checkpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Values(r.cps[jobID]))
	sort.Slice(out, func(i, k int) bool { return out[i].Step < out[k].Step })
	return out, nil
}

func (r *recorder) Rescue(context.Context, core.RescueRequest) (core.RescueResult, error) {
	return core.RescueResult{}, nil
}

func (r *recorder) Cancel(_ context.Context, id, reason string) (core.Job, error) {
	if reason == "" {
		reason = "cancelled"
	}
	if err := r.setState(id, core.StateCancelled, nil, reason); err != nil {
		return core.Job{}, err
	}
	return r.GetJob(context.Background(), id)
}

func (r *recorder) Retry(context.Context, string) (core.Job, error) {
	return core.Job{}, unsupported("retry")
}

func (r *recorder) GetJob(_ context.Context, id string) (core.Job, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return core.Job{}, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	return j, nil
}

func (r *recorder) ListJobs(context.Context, core.JobFilter) (core.JobPage, error) {
	return core.JobPage{}, unsupported("list jobs")
}

func (r *recorder) CountJobs(context.Context, core.JobFilter) (map[core.JobState]int64, error) {
	return nil, unsupported("count jobs")
}

func (r *recorder) ListRuns(context.Context, string) ([]core.Run, error) {
	return nil, unsupported("list runs")
}

func (r *recorder) TaskStats(context.Context, string) (core.TaskStats, error) {
	return core.TaskStats{}, unsupported("aggregate task stats")
}

func (r *recorder) ListQueues(context.Context) ([]core.QueueInfo, error) { return nil, nil }

func (r *recorder) GetTaskConfig(_ context.Context, task string) (core.TaskConfig, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.configs[task]
	if !ok {
		return core.TaskConfig{}, fmt.Errorf("%w: task config %s", core.ErrNotFound, task)
	}
	return c, nil
}

func (r *recorder) PutTaskConfig(_ context.Context, cfg core.TaskConfig) error {
	if err := core.ValidateTaskConfig(cfg); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configs[cfg.Task] = cfg
	return nil
}

func (r *recorder) GetQueueConfig(_ context.Context, q string) (core.QueueConfig, error) {
	return core.QueueConfig{Queue: q}, nil
}

func (r *recorder) PutQueueConfig(context.Context, core.QueueConfig) error {
	return unsupported("store queue configs")
}

func (r *recorder) Cleanup(context.Context, core.CleanupRequest) (int, error) { return 0, nil }

func (r *recorder) Close() error { return nil }
