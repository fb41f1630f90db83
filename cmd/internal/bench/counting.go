package bench

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// Counting is a core.QueueBackend decorator that counts the calls made to
// the backend it wraps, by method, and reports every successful completion
// to an optional hook. It keeps the Notifier capability of the backend it
// wraps (see Wrap).
type Counting struct {
	core.QueueBackend
	mu      sync.Mutex
	calls   map[string]*atomic.Int64
	onDone  atomic.Pointer[func(jobID string, at time.Time)]
	onClaim atomic.Pointer[func(jobs []core.Job)]
}

// countingNotifier is Counting over a backend that implements core.Notifier.
type countingNotifier struct {
	*Counting
	n core.Notifier
}

// Subscribe implements core.Notifier; it is not counted as a call because
// it sends nothing by itself.
func (c countingNotifier) Subscribe(queue string) (<-chan struct{}, func()) {
	c.count("Subscribe")
	return c.n.Subscribe(queue)
}

// countingFlow is Counting over a backend that implements
// core.FlowController, with or without core.Notifier.
type countingFlow struct {
	core.QueueBackend // *Counting or countingNotifier
	f                 core.FlowController
}

// RunningByKey implements core.FlowController.
func (c countingFlow) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	return c.f.RunningByKey(ctx, task, limit)
}

// countingFlowNotifier is countingFlow over a backend that is a notifier too.
type countingFlowNotifier struct {
	countingFlow
	n countingNotifier
}

// Subscribe implements core.Notifier.
func (c countingFlowNotifier) Subscribe(queue string) (<-chan struct{}, func()) {
	return c.n.Subscribe(queue)
}

// Wrap returns a counting decorator of b and the backend to hand to the
// runtime: it implements core.Notifier and core.FlowController exactly
// when b does.
func Wrap(b core.QueueBackend) (*Counting, core.QueueBackend) {
	c := &Counting{QueueBackend: b, calls: map[string]*atomic.Int64{}}
	n, notifies := b.(core.Notifier)
	f, flows := b.(core.FlowController)
	switch {
	case notifies && flows:
		cn := countingNotifier{Counting: c, n: n}
		return c, countingFlowNotifier{countingFlow: countingFlow{QueueBackend: cn, f: f}, n: cn}
	case notifies:
		return c, countingNotifier{Counting: c, n: n}
	case flows:
		return c, countingFlow{QueueBackend: c, f: f}
	}
	return c, c
}

// OnComplete sets the function called for each job that a Complete call
// finished; nil removes it.
func (c *Counting) OnComplete(f func(jobID string, at time.Time)) {
	if f == nil {
		c.onDone.Store(nil)
		return
	}
	c.onDone.Store(&f)
}

// OnClaim sets the function called with the jobs of each successful
// Claim, as the store returned them; nil removes it.
func (c *Counting) OnClaim(f func(jobs []core.Job)) {
	if f == nil {
		c.onClaim.Store(nil)
		return
	}
	c.onClaim.Store(&f)
}

func (c *Counting) count(method string) {
	c.mu.Lock()
	n := c.calls[method]
	if n == nil {
		n = new(atomic.Int64)
		c.calls[method] = n
	}
	c.mu.Unlock()
	n.Add(1)
}

// Calls returns a copy of the call counts by method.
func (c *Counting) Calls() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.calls))
	for k, v := range c.calls {
		out[k] = v.Load()
	}
	return out
}

// Total returns the number of backend calls counted, Subscribe excluded.
func (c *Counting) Total() int64 {
	var t int64
	for k, v := range c.Calls() {
		if k != "Subscribe" {
			t += v
		}
	}
	return t
}

// diffCalls returns after-before per method, sorted keys dropped of zeros.
func diffCalls(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 && k != "Subscribe" {
			out[k] = d
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Enqueue counts and delegates.
func (c *Counting) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	c.count("Enqueue")
	return c.QueueBackend.Enqueue(ctx, reqs)
}

// Claim counts, delegates and hands the claimed jobs to the hook.
func (c *Counting) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	c.count("Claim")
	jobs, err := c.QueueBackend.Claim(ctx, req)
	if f := c.onClaim.Load(); f != nil && err == nil && len(jobs) > 0 {
		(*f)(jobs)
	}
	return jobs, err
}

// Heartbeat counts and delegates.
func (c *Counting) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	c.count("Heartbeat")
	return c.QueueBackend.Heartbeat(ctx, lease, ttl)
}

// Complete counts, delegates and reports each finished job to the hook.
func (c *Counting) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	c.count("Complete")
	errs, err := c.QueueBackend.Complete(ctx, items)
	if f := c.onDone.Load(); f != nil && err == nil {
		now := time.Now()
		for i, it := range items {
			if i < len(errs) && errs[i] != nil {
				continue
			}
			(*f)(it.Lease.JobID, now)
		}
	}
	return errs, err
}

// Fail counts and delegates.
func (c *Counting) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	c.count("Fail")
	return c.QueueBackend.Fail(ctx, f)
}

// Sleep counts and delegates.
func (c *Counting) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	c.count("Sleep")
	return c.QueueBackend.Sleep(ctx, lease, until)
}

// SaveCheckpoint counts and delegates.
func (c *Counting) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	c.count("SaveCheckpoint")
	return c.QueueBackend.SaveCheckpoint(ctx, lease, step, value)
}

// Checkpoints counts and delegates.
func (c *Counting) Checkpoints(ctx context.Context, jobID string) ([]core.Checkpoint, error) {
	c.count("Checkpoints")
	return c.QueueBackend.Checkpoints(ctx, jobID)
}

// Rescue counts and delegates.
func (c *Counting) Rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	c.count("Rescue")
	return c.QueueBackend.Rescue(ctx, req)
}

// Cancel counts and delegates.
func (c *Counting) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	c.count("Cancel")
	return c.QueueBackend.Cancel(ctx, jobID, reason)
}

// Retry counts and delegates.
func (c *Counting) Retry(ctx context.Context, jobID string) (core.Job, error) {
	c.count("Retry")
	return c.QueueBackend.Retry(ctx, jobID)
}

// GetJob counts and delegates.
func (c *Counting) GetJob(ctx context.Context, jobID string) (core.Job, error) {
	c.count("GetJob")
	return c.QueueBackend.GetJob(ctx, jobID)
}

// ListJobs counts and delegates.
func (c *Counting) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	c.count("ListJobs")
	return c.QueueBackend.ListJobs(ctx, f)
}

// CountJobs counts and delegates.
func (c *Counting) CountJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	c.count("CountJobs")
	return c.QueueBackend.CountJobs(ctx, f)
}

// ListRuns counts and delegates.
func (c *Counting) ListRuns(ctx context.Context, jobID string) ([]core.Run, error) {
	c.count("ListRuns")
	return c.QueueBackend.ListRuns(ctx, jobID)
}

// TaskStats counts and delegates.
func (c *Counting) TaskStats(ctx context.Context, task string) (core.TaskStats, error) {
	c.count("TaskStats")
	return c.QueueBackend.TaskStats(ctx, task)
}

// ListQueues counts and delegates.
func (c *Counting) ListQueues(ctx context.Context) ([]core.QueueInfo, error) {
	c.count("ListQueues")
	return c.QueueBackend.ListQueues(ctx)
}

// GetTaskConfig counts and delegates.
func (c *Counting) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	c.count("GetTaskConfig")
	return c.QueueBackend.GetTaskConfig(ctx, task)
}

// PutTaskConfig counts and delegates.
func (c *Counting) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	c.count("PutTaskConfig")
	return c.QueueBackend.PutTaskConfig(ctx, cfg)
}

// GetQueueConfig counts and delegates.
func (c *Counting) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	c.count("GetQueueConfig")
	return c.QueueBackend.GetQueueConfig(ctx, queue)
}

// PutQueueConfig counts and delegates.
func (c *Counting) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	c.count("PutQueueConfig")
	return c.QueueBackend.PutQueueConfig(ctx, cfg)
}

// Cleanup counts and delegates.
func (c *Counting) Cleanup(ctx context.Context, req core.CleanupRequest) (int, error) {
	c.count("Cleanup")
	return c.QueueBackend.Cleanup(ctx, req)
}

// perJob divides call counts by n jobs.
func perJob(calls map[string]int64, n int) map[string]float64 {
	out := make(map[string]float64, len(calls))
	for k, v := range calls {
		out[k] = float64(v) / float64(max(n, 1))
	}
	return out
}
