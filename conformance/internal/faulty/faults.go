package faulty

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

func init() {
	register(Fault{
		Name:     "double-claim",
		What:     "claim is not atomic: while another claim runs, a job just handed out is handed out again",
		CaughtBy: []string{"Exclusivity/ConcurrentClaimers"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return &doubleClaim{base: base{b}} },
	})
	register(Fault{
		Name:     "lost-claims",
		What:     "claim marks every 97th job running but does not return it",
		CaughtBy: []string{"Exclusivity/ConcurrentClaimers"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return &lostClaims{base: base{b}} },
	})
	register(Fault{
		Name:     "no-fencing",
		What:     "fenced calls use the job's current token instead of the caller's",
		CaughtBy: []string{"Fencing/AfterRescue/Complete", "Fencing/AfterRescue/Heartbeat", "Fencing/AfterSleepWake/SaveCheckpoint"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return noFencing{base{b}} },
	})
	register(Fault{
		Name:     "reversed-priority",
		What:     "claims the highest priority value first",
		CaughtBy: []string{"Claim/Order", "Claim/OrderBatch"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return reversedPriority{base{b}} },
	})
	register(Fault{
		Name:     "ignore-due-time",
		What:     "jobs scheduled or retried for later are claimable at once",
		CaughtBy: []string{"Claim/FutureRunAt", "Outcome/FailRetryAt"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return ignoreDueTime{base{b}} },
	})
	register(Fault{
		Name:     "checkpoint-overwrite",
		What:     "a second checkpoint write replaces the first",
		CaughtBy: []string{"Checkpoint/FirstWriteWins", "Checkpoint/SurviveRetry"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &checkpointOverwrite{base: base{b}, values: map[[2]string][]byte{}}
		},
	})
	register(Fault{
		Name:     "cancel-running-ignored",
		What:     "cancelling a running job reports success but leaves it running",
		CaughtBy: []string{"Cancel/Running"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return cancelRunningIgnored{base{b}} },
	})
	register(Fault{
		Name:     "idempotency-ignored",
		What:     "idempotency keys are dropped at enqueue",
		CaughtBy: []string{"Idempotency/Reuse", "Idempotency/Conflict"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return idempotencyIgnored{base{b}} },
	})
	register(Fault{
		Name:     "rate-limits-ignored",
		What:     "task configs lose their limits when stored",
		CaughtBy: []string{"RateLimits/MaxInFlight", "RateLimits/MaxEnqueuePerSecond", "Config/TaskRoundTrip"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return rateLimitsIgnored{base{b}} },
	})
	register(Fault{
		Name:     "aliased-reads",
		What:     "GetJob hands every caller the same payload buffer",
		CaughtBy: []string{"Lifecycle/NoAliasingOnReads"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &aliasedReads{base: base{b}, cache: map[string][]byte{}}
		},
	})
	register(Fault{
		Name:     "close-ignored",
		What:     "Close does nothing",
		CaughtBy: []string{"Lifecycle/Close"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return closeIgnored{base{b}} },
	})
	register(Fault{
		Name:     "pause-ignored",
		What:     "queue configs lose their paused flag when stored",
		CaughtBy: []string{"Claim/PausedQueue", "Config/QueueRoundTrip"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return pauseIgnored{base{b}} },
	})
	register(Fault{
		Name:     "heartbeat-no-extend",
		What:     "heartbeat reports a new expiry but does not store it",
		CaughtBy: []string{"Lease/HeartbeatExtends"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return heartbeatNoExtend{base{b}} },
	})
	register(Fault{
		Name:     "deadlines-ignored",
		What:     "cancellation policies are dropped at enqueue",
		CaughtBy: []string{"Deadline/MaxDelayAtClaim", "Deadline/MaxDurationAtHeartbeat", "Deadline/MaxDurationAtRescue"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return deadlinesIgnored{base{b}} },
	})
	register(Fault{
		Name:     "sleep-consumes-attempt",
		What:     "waking from a sleep counts as a new attempt",
		CaughtBy: []string{"Sleep/Until", "Sleep/Repeated"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return sleepConsumesAttempt{base{b}} },
	})
}

// doubleClaim hands the previous claim's first job out again whenever two
// claims overlap: the read-then-mark race of a non-atomic claim.
type doubleClaim struct {
	base
	inflight atomic.Int32
	mu       sync.Mutex
	last     []core.Job
}

func (d *doubleClaim) Claim(ctx context.Context, r core.ClaimRequest) ([]core.Job, error) {
	concurrent := d.inflight.Add(1) > 1
	defer d.inflight.Add(-1)
	jobs, err := d.QueueBackend.Claim(ctx, r)
	runtime.Gosched() // widen the window in which claims overlap
	if err != nil {
		return jobs, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if (concurrent || d.inflight.Load() > 1) && len(d.last) > 0 && len(jobs) > 0 {
		jobs[len(jobs)-1] = d.last[0]
	}
	if len(jobs) > 0 {
		d.last = jobs
	}
	return jobs, nil
}

// lostClaims drops every 97th claimed job from the result.
type lostClaims struct {
	base
	n atomic.Int64
}

func (l *lostClaims) Claim(ctx context.Context, r core.ClaimRequest) ([]core.Job, error) {
	jobs, err := l.QueueBackend.Claim(ctx, r)
	out := jobs[:0]
	for _, j := range jobs {
		if l.n.Add(1)%97 == 0 {
			continue
		}
		out = append(out, j)
	}
	return out, err
}

// noFencing replaces the caller's token with the job's current one.
type noFencing struct{ base }

func (n noFencing) Heartbeat(ctx context.Context, l core.Lease, ttl time.Duration) (core.Lease, error) {
	return n.QueueBackend.Heartbeat(ctx, currentToken(ctx, n.QueueBackend, l), ttl)
}

func (n noFencing) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	fixed := make([]core.Completion, len(items))
	for i, it := range items {
		it.Lease = currentToken(ctx, n.QueueBackend, it.Lease)
		fixed[i] = it
	}
	return n.QueueBackend.Complete(ctx, fixed)
}

func (n noFencing) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	f.Lease = currentToken(ctx, n.QueueBackend, f.Lease)
	return n.QueueBackend.Fail(ctx, f)
}

func (n noFencing) Sleep(ctx context.Context, l core.Lease, until time.Time) error {
	return n.QueueBackend.Sleep(ctx, currentToken(ctx, n.QueueBackend, l), until)
}

func (n noFencing) SaveCheckpoint(ctx context.Context, l core.Lease, step string, v []byte) ([]byte, error) {
	return n.QueueBackend.SaveCheckpoint(ctx, currentToken(ctx, n.QueueBackend, l), step, v)
}

// reversedPriority stores priorities negated, so the store claims the
// highest value first, and shows callers the values they asked for.
type reversedPriority struct{ base }

func flip(j core.Job) core.Job { j.Priority = -j.Priority; return j }

func flipAll(jobs []core.Job) []core.Job {
	for i := range jobs {
		jobs[i] = flip(jobs[i])
	}
	return jobs
}

func (r reversedPriority) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	flipped := make([]core.EnqueueRequest, len(reqs))
	for i, q := range reqs {
		q.Priority = -q.Priority
		flipped[i] = q
	}
	res, err := r.QueueBackend.Enqueue(ctx, flipped)
	for i := range res {
		res[i].Job = flip(res[i].Job)
	}
	return res, err
}

func (r reversedPriority) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	jobs, err := r.QueueBackend.Claim(ctx, req)
	return flipAll(jobs), err
}

func (r reversedPriority) GetJob(ctx context.Context, id string) (core.Job, error) {
	j, err := r.QueueBackend.GetJob(ctx, id)
	return flip(j), err
}

func (r reversedPriority) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	p, err := r.QueueBackend.ListJobs(ctx, f)
	p.Jobs = flipAll(p.Jobs)
	return p, err
}

func (r reversedPriority) Cancel(ctx context.Context, id, reason string) (core.Job, error) {
	j, err := r.QueueBackend.Cancel(ctx, id, reason)
	return flip(j), err
}

func (r reversedPriority) Retry(ctx context.Context, id string) (core.Job, error) {
	j, err := r.QueueBackend.Retry(ctx, id)
	return flip(j), err
}

// ignoreDueTime drops run-at at enqueue and retry-at at fail.
type ignoreDueTime struct{ base }

func (i ignoreDueTime) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	now := make([]core.EnqueueRequest, len(reqs))
	for k, r := range reqs {
		r.RunAt = time.Time{}
		now[k] = r
	}
	return i.QueueBackend.Enqueue(ctx, now)
}

func (i ignoreDueTime) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	f.RetryAt = time.Time{}
	return i.QueueBackend.Fail(ctx, f)
}

// checkpointOverwrite keeps the last write of every step beside the store
// and reports it instead of the first.
type checkpointOverwrite struct {
	base
	mu     sync.Mutex
	values map[[2]string][]byte
}

func (c *checkpointOverwrite) SaveCheckpoint(ctx context.Context, l core.Lease, step string, v []byte) ([]byte, error) {
	if _, err := c.QueueBackend.SaveCheckpoint(ctx, l, step, v); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values[[2]string{l.JobID, step}] = append([]byte(nil), v...)
	return append([]byte(nil), v...), nil
}

func (c *checkpointOverwrite) Checkpoints(ctx context.Context, id string) ([]core.Checkpoint, error) {
	cs, err := c.QueueBackend.Checkpoints(ctx, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range cs {
		if v, ok := c.values[[2]string{id, cs[i].Step}]; ok {
			cs[i].Value = append([]byte(nil), v...)
		}
	}
	return cs, err
}

// cancelRunningIgnored pretends to cancel running jobs.
type cancelRunningIgnored struct{ base }

func (c cancelRunningIgnored) Cancel(ctx context.Context, id, reason string) (core.Job, error) {
	j, err := c.QueueBackend.GetJob(ctx, id)
	if err == nil && j.State == core.StateRunning {
		j.State = core.StateCancelled
		j.LastError = reason
		return j, nil
	}
	return c.QueueBackend.Cancel(ctx, id, reason)
}

// idempotencyIgnored drops idempotency keys.
type idempotencyIgnored struct{ base }

func (i idempotencyIgnored) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	out := make([]core.EnqueueRequest, len(reqs))
	for k, r := range reqs {
		r.IdempotencyKey = ""
		out[k] = r
	}
	return i.QueueBackend.Enqueue(ctx, out)
}

// rateLimitsIgnored stores task configs without their limits.
type rateLimitsIgnored struct{ base }

func (r rateLimitsIgnored) PutTaskConfig(ctx context.Context, c core.TaskConfig) error {
	c.MaxInFlight, c.MaxEnqueuePerSecond = 0, 0
	return r.QueueBackend.PutTaskConfig(ctx, c)
}

// aliasedReads returns one shared payload buffer per job from GetJob.
type aliasedReads struct {
	base
	mu    sync.Mutex
	cache map[string][]byte
}

func (a *aliasedReads) GetJob(ctx context.Context, id string) (core.Job, error) {
	j, err := a.QueueBackend.GetJob(ctx, id)
	if err != nil {
		return j, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.cache[id]; ok {
		j.Payload = p
	} else {
		a.cache[id] = j.Payload
	}
	return j, nil
}

// closeIgnored never closes.
type closeIgnored struct{ base }

func (closeIgnored) Close() error { return nil }

// sleepConsumesAttempt fails to keep the attempt of a woken job: it
// reports and stores one more attempt by failing over to a retry.
type sleepConsumesAttempt struct{ base }

func (s sleepConsumesAttempt) Sleep(ctx context.Context, l core.Lease, until time.Time) error {
	// A retry-at instead of a sleep: the job comes back as a new attempt.
	_, err := s.QueueBackend.Fail(ctx, core.Failure{Lease: l, Error: "sleeping", RetryAt: until})
	return err
}

// pauseIgnored stores queue configs without the paused flag.
type pauseIgnored struct{ base }

func (p pauseIgnored) PutQueueConfig(ctx context.Context, c core.QueueConfig) error {
	c.Paused = false
	return p.QueueBackend.PutQueueConfig(ctx, c)
}

// heartbeatNoExtend checks the lease but never moves its expiry.
type heartbeatNoExtend struct{ base }

func (h heartbeatNoExtend) Heartbeat(ctx context.Context, l core.Lease, ttl time.Duration) (core.Lease, error) {
	j, err := h.QueueBackend.GetJob(ctx, l.JobID)
	if err != nil || ttl <= 0 || j.State != core.StateRunning || j.Lease.Token != l.Token {
		return h.QueueBackend.Heartbeat(ctx, l, ttl)
	}
	nl := j.Lease
	nl.ExpiresAt = nl.ExpiresAt.Add(ttl) // reported, not stored
	return nl, nil
}

// deadlinesIgnored drops cancellation policies.
type deadlinesIgnored struct{ base }

func (d deadlinesIgnored) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	out := make([]core.EnqueueRequest, len(reqs))
	for k, r := range reqs {
		r.Cancel = core.CancellationPolicy{}
		out[k] = r
	}
	return d.QueueBackend.Enqueue(ctx, out)
}
