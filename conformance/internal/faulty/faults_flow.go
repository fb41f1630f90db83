package faulty

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// Faults of flow control. Each wraps a backend that implements
// core.FlowController and enforces the flow rules, and breaks one of them.

func init() {
	register(Fault{
		Name:     "flow-task-limit-ignored",
		What:     "a task's MaxRunning is stored but not enforced",
		CaughtBy: []string{"FlowLimits/TaskMaxRunning", "FlowLimits/TaskPassOver", "FlowExact/TaskLimit"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return newUnenforced(b, func(c *core.TaskConfig) { c.MaxRunning = 0 })
		},
	})
	register(Fault{
		Name:     "flow-key-limit-ignored",
		What:     "a task's MaxRunningPerKey is stored but not enforced",
		CaughtBy: []string{"FlowLimits/KeyMaxRunning", "FlowLimits/FreedByComplete", "FlowExact/KeyLimit"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return newUnenforced(b, func(c *core.TaskConfig) { c.MaxRunningPerKey = 0 })
		},
	})
	register(Fault{
		Name:     "flow-rate-ignored",
		What:     "a task's MaxStartsPerSecond is stored but not enforced",
		CaughtBy: []string{"FlowRates/TaskStartsPerSecond", "FlowRates/WakeCounts", "FlowExact/TaskStartRate"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return newUnenforced(b, func(c *core.TaskConfig) { c.MaxStartsPerSecond = 0 })
		},
	})
	register(Fault{
		Name:     "flow-key-rate-shared",
		What:     "MaxStartsPerSecondPerKey is enforced across all keys of the task together",
		CaughtBy: []string{"FlowRates/KeyStartsPerSecond"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return newUnenforced(b, func(c *core.TaskConfig) {
				if c.MaxStartsPerSecond == 0 {
					c.MaxStartsPerSecond, c.MaxStartsPerSecondPerKey = c.MaxStartsPerSecondPerKey, 0
				}
			})
		},
	})
	register(Fault{
		Name:     "flow-queue-limit-ignored",
		What:     "a queue's MaxRunning is stored but not enforced",
		CaughtBy: []string{"FlowLimits/QueueMaxRunning", "FlowExact/QueueLimit"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &queueUnenforced{base: base{b}, stored: map[string]core.QueueConfig{}}
		},
	})
	register(Fault{
		Name:     "flow-claim-counts-apart",
		What:     "a claim checks each job against the running counts from before the claim, not counting the jobs it already took",
		CaughtBy: []string{"FlowLimits/ClaimCountsTogether", "FlowLimits/TaskMaxRunning"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &claimCountsApart{base: base{b}, tasks: map[string]core.TaskConfig{}}
		},
	})
	register(Fault{
		Name:     "flow-hold-released",
		What:     "a failed job releases its sequence though its task holds sequences on failure",
		CaughtBy: []string{"FlowSequence/HoldOnFailure", "FlowSequence/HoldRetryFailsAgain"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return &holdReleased{base: base{b}} },
	})
	register(Fault{
		Name:     "flow-sequence-ignored",
		What:     "sequence keys are dropped at enqueue, so a sequence's jobs run at once and in claim order",
		CaughtBy: []string{"FlowSequence/IDOrder", "FlowSequence/OneAtATime", "FlowExact/Sequence"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return sequenceIgnored{base{b}} },
	})
	register(Fault{
		Name:     "flow-while-active-freed-at-claim",
		What:     "a while-active key is freed once its job runs, not once it is terminal",
		CaughtBy: []string{"FlowUnique/WhileActiveHeldWhileActive"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return &freedAtClaim{base: base{b}} },
	})
	register(Fault{
		Name:     "flow-by-period-forever",
		What:     "a by-period key holds until retention, as if the mode were the default",
		CaughtBy: []string{"FlowUnique/ByPeriod", "FlowUnique/ByPeriodAligned", "FlowReads/FieldsRoundTrip"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return byPeriodForever{base{b}} },
	})
	register(Fault{
		Name:     "flow-running-by-key-by-name",
		What:     "RunningByKey orders its groups by key, not by running count",
		CaughtBy: []string{"FlowReads/RunningByKey", "FlowReads/RunningByKeyLimit"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return runningByName{base{b}} },
	})
	register(Fault{
		Name:     "flow-search-ignores-limit-key",
		What:     "SearchJobs and CountSearch ignore JobSearch.LimitKey",
		CaughtBy: []string{"FlowReads/SearchByKeys"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return searchIgnoresLimitKey{base{b}} },
	})
}

// unenforced stores task configs with a limit changed by drop, and reads
// them back as they were put: the store enforces the changed config.
type unenforced struct {
	base
	drop   func(c *core.TaskConfig)
	mu     sync.Mutex
	stored map[string]core.TaskConfig
}

func newUnenforced(b core.QueueBackend, drop func(c *core.TaskConfig)) *unenforced {
	return &unenforced{base: base{b}, drop: drop, stored: map[string]core.TaskConfig{}}
}

func (u *unenforced) PutTaskConfig(ctx context.Context, c core.TaskConfig) error {
	if err := core.ValidateTaskConfig(c); err != nil {
		return err
	}
	changed := c
	u.drop(&changed)
	if err := u.QueueBackend.PutTaskConfig(ctx, changed); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stored[c.Task] = c
	return nil
}

func (u *unenforced) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	c, err := u.QueueBackend.GetTaskConfig(ctx, task)
	u.mu.Lock()
	defer u.mu.Unlock()
	if s, ok := u.stored[task]; ok && err == nil {
		return s, nil
	}
	return c, err
}

// queueUnenforced stores queue configs without MaxRunning and reads them
// back as they were put.
type queueUnenforced struct {
	base
	mu     sync.Mutex
	stored map[string]core.QueueConfig
}

func (q *queueUnenforced) PutQueueConfig(ctx context.Context, c core.QueueConfig) error {
	if err := core.ValidateQueueConfig(c); err != nil {
		return err
	}
	changed := c
	changed.MaxRunning = 0
	if err := q.QueueBackend.PutQueueConfig(ctx, changed); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stored[c.Queue] = c
	return nil
}

func (q *queueUnenforced) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	c, err := q.QueueBackend.GetQueueConfig(ctx, queue)
	q.mu.Lock()
	defer q.mu.Unlock()
	if s, ok := q.stored[queue]; ok && err == nil {
		return s, nil
	}
	return c, err
}

func (q *queueUnenforced) DeleteQueue(ctx context.Context, r core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	res, err := q.base.DeleteQueue(ctx, r)
	if err == nil {
		q.mu.Lock()
		delete(q.stored, r.Queue)
		q.mu.Unlock()
	}
	return res, err
}

// claimCountsApart lifts a task's concurrency limits for the length of a
// claim when none of them is reached at its start: the claim then hands
// out as many jobs as it likes, as a store does that checks each job
// against the counts read before the claim.
type claimCountsApart struct {
	base
	mu    sync.Mutex
	tasks map[string]core.TaskConfig
}

func (c *claimCountsApart) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.QueueBackend.PutTaskConfig(ctx, cfg); err != nil {
		return err
	}
	c.tasks[cfg.Task] = cfg
	return nil
}

func (c *claimCountsApart) Claim(ctx context.Context, r core.ClaimRequest) ([]core.Job, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lifted []core.TaskConfig
	for _, cfg := range c.tasks {
		if cfg.MaxRunning == 0 && cfg.MaxRunningPerKey == 0 || c.reached(ctx, cfg) {
			continue
		}
		open := cfg
		open.MaxRunning, open.MaxRunningPerKey = 0, 0
		if err := c.QueueBackend.PutTaskConfig(ctx, open); err != nil {
			return nil, err
		}
		lifted = append(lifted, cfg)
	}
	jobs, err := c.QueueBackend.Claim(ctx, r)
	for _, cfg := range lifted {
		if perr := c.QueueBackend.PutTaskConfig(ctx, cfg); perr != nil && err == nil {
			err = perr
		}
	}
	return jobs, err
}

// reached reports whether a limit of cfg is reached now.
func (c *claimCountsApart) reached(ctx context.Context, cfg core.TaskConfig) bool {
	if cfg.MaxRunning > 0 {
		m, err := c.QueueBackend.CountJobs(ctx, core.JobFilter{Task: cfg.Task})
		if err != nil || m[core.StateRunning] >= int64(cfg.MaxRunning) {
			return true
		}
	}
	if cfg.MaxRunningPerKey > 0 {
		kcs, err := c.RunningByKey(ctx, cfg.Task, core.MaxPageSize)
		if err != nil {
			return true
		}
		for _, kc := range kcs {
			if kc.Running >= int64(cfg.MaxRunningPerKey) {
				return true
			}
		}
	}
	return false
}

// holdReleased fails jobs as if their task did not hold sequences.
type holdReleased struct {
	base
	mu sync.Mutex
}

func (h *holdReleased) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, err := h.QueueBackend.GetJob(ctx, f.Lease.JobID)
	if err != nil {
		return h.QueueBackend.Fail(ctx, f)
	}
	cfg, err := h.QueueBackend.GetTaskConfig(ctx, j.Task)
	if err != nil || !cfg.HoldSequenceOnFailure {
		return h.QueueBackend.Fail(ctx, f)
	}
	off := cfg
	off.HoldSequenceOnFailure = false
	if err := h.QueueBackend.PutTaskConfig(ctx, off); err != nil {
		return "", err
	}
	st, ferr := h.QueueBackend.Fail(ctx, f)
	if err := h.QueueBackend.PutTaskConfig(ctx, cfg); err != nil && ferr == nil {
		ferr = err
	}
	return st, ferr
}

// sequenceIgnored drops sequence keys at enqueue.
type sequenceIgnored struct{ base }

func (s sequenceIgnored) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	out := make([]core.EnqueueRequest, len(reqs))
	for i, r := range reqs {
		if core.ValidateName("sequence_key", r.SequenceKey) == nil {
			r.SequenceKey = ""
		}
		out[i] = r
	}
	return s.QueueBackend.Enqueue(ctx, out)
}

// freedAtClaim gives a while-active request whose key a running or
// sleeping job holds a key of its own, so that it makes a new job.
type freedAtClaim struct {
	base
	n atomic.Int64
}

func (f *freedAtClaim) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	out := make([]core.EnqueueRequest, len(reqs))
	for i, r := range reqs {
		if r.Unique == core.UniqueWhileActive && r.IdempotencyKey != "" {
			q := r.Queue
			if q == "" {
				q = core.DefaultQueue
			}
			if j, err := f.FindByIdempotencyKey(ctx, q, r.IdempotencyKey); err == nil && (j.State == core.StateRunning || j.State == core.StateSleeping) {
				r.IdempotencyKey = fmt.Sprintf("%s-%d", r.IdempotencyKey, f.n.Add(1))
			}
		}
		out[i] = r
	}
	return f.QueueBackend.Enqueue(ctx, out)
}

// byPeriodForever stores by-period requests in the default mode.
type byPeriodForever struct{ base }

func (b byPeriodForever) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	out := make([]core.EnqueueRequest, len(reqs))
	for i, r := range reqs {
		if r.Unique == core.UniqueByPeriod && r.IdempotencyKey != "" && r.UniquePeriod >= time.Second && r.UniquePeriod <= core.MaxUniquePeriod {
			r.Unique, r.UniquePeriod = core.UniqueUntilRetention, 0
		}
		out[i] = r
	}
	return b.QueueBackend.Enqueue(ctx, out)
}

// runningByName orders RunningByKey's groups by key.
type runningByName struct{ base }

func (r runningByName) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	kcs, err := r.base.RunningByKey(ctx, task, core.MaxPageSize)
	if err != nil {
		return kcs, err
	}
	if err := core.ValidateRunningByKey(task, limit); err != nil {
		return nil, err
	}
	slices.SortFunc(kcs, func(a, b core.KeyCount) int { return strings.Compare(a.Key, b.Key) })
	if limit == 0 {
		limit = core.DefaultPageSize
	}
	return kcs[:min(limit, len(kcs))], nil
}

// searchIgnoresLimitKey drops JobSearch.LimitKey.
type searchIgnoresLimitKey struct{ base }

func (s searchIgnoresLimitKey) SearchJobs(ctx context.Context, js core.JobSearch) (core.JobPage, error) {
	if core.ValidateJobSearch(js) == nil {
		js.LimitKey = ""
	}
	return s.base.SearchJobs(ctx, js)
}

func (s searchIgnoresLimitKey) CountSearch(ctx context.Context, js core.JobSearch) (map[core.JobState]int64, error) {
	if core.ValidateJobSearch(js) == nil {
		js.LimitKey = ""
	}
	return s.base.CountSearch(ctx, js)
}
