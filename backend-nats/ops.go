package natsq

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Enqueue implements core.QueueBackend. The batch is one command of the
// log, so it is stored whole or not at all, and its idempotency and limit
// checks see every command before it.
func (b *Backend) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	now := b.stamp()
	jobs, err := b.prepare(reqs, now)
	if err != nil {
		return nil, err
	}
	v := 0
	for _, r := range reqs {
		if r.UsesFlowControl() {
			v = flowVersion
		}
	}
	out, err := b.exec(ctx, &command{Op: opEnqueue, V: v, Now: now, Jobs: jobs})
	if err != nil {
		return nil, err
	}
	if out.err != nil {
		return nil, out.err
	}
	return out.enqueued, nil
}

// Claim implements core.QueueBackend. Claims are commands of the log, so two
// claims are applied one after the other in every replica: the second
// cannot see a job the first took.
func (b *Backend) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	if err := core.ValidateClaim(req, b.opts.Limits); err != nil {
		return nil, err
	}
	now, known := b.estimate()
	b.mu.RLock()
	idle := b.st.queueCfg[req.Queue].Paused || known && !b.hasDueLocked(req.Queue, now)
	b.mu.RUnlock()
	if idle {
		// Nothing this replica knows of is due. A claim appended now could
		// only find what another process enqueued within the last moments;
		// skipping it spares the log an empty command. A notifier signal or
		// the next poll brings the worker back.
		return []core.Job{}, nil
	}
	out, err := b.exec(ctx, &command{
		Op: opClaim, Now: b.stamp(), Queue: req.Queue, WorkerID: req.WorkerID,
		Limit: req.Limit, TTL: req.LeaseTTL,
	})
	if err != nil {
		return nil, err
	}
	if out.jobs == nil {
		return []core.Job{}, nil
	}
	return out.jobs, out.err
}

// Heartbeat implements core.QueueBackend.
func (b *Backend) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	if err := b.isClosed(); err != nil {
		return core.Lease{}, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return core.Lease{}, err
	}
	if ttl <= 0 {
		return core.Lease{}, fmt.Errorf("%w: ttl: %v must be positive", core.ErrInvalidArgument, ttl)
	}
	out, err := b.exec(ctx, &command{Op: opHeartbeat, Now: b.stamp(), Lease: lease, TTL: ttl})
	if err != nil {
		return core.Lease{}, err
	}
	return out.lease, out.err
}

// Complete implements core.QueueBackend. The batch is one command; each
// item is fenced on its own.
func (b *Backend) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	if err := b.opts.Limits.ValidateBatch("completions", len(items)); err != nil {
		return nil, err
	}
	errs := make([]error, len(items))
	valid := make([]completionItem, 0, len(items))
	for i, it := range items {
		if err := core.ValidateLease(it.Lease); err != nil {
			errs[i] = err
			continue
		}
		if err := b.opts.Limits.ValidatePayload("result", it.Result); err != nil {
			errs[i] = err
			continue
		}
		valid = append(valid, completionItem{Index: i, Lease: it.Lease, Result: it.Result})
	}
	if len(valid) == 0 {
		return errs, nil
	}
	out, err := b.exec(ctx, &command{Op: opComplete, Now: b.stamp(), Completions: valid})
	if err != nil {
		return nil, err
	}
	for n, it := range valid {
		if n < len(out.errs) {
			errs[it.Index] = out.errs[n]
		}
	}
	return errs, nil
}

// Fail implements core.QueueBackend.
func (b *Backend) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	if err := b.isClosed(); err != nil {
		return "", err
	}
	if err := core.ValidateLease(f.Lease); err != nil {
		return "", err
	}
	retryAt := time.Time{}
	if !f.RetryAt.IsZero() {
		retryAt = f.RetryAt.UTC().Truncate(time.Microsecond)
	}
	out, err := b.exec(ctx, &command{Op: opFail, Now: b.stamp(), Lease: f.Lease,
		Error: core.TruncateError(f.Error), RetryAt: retryAt, Terminal: f.Terminal})
	if err != nil {
		return "", err
	}
	return out.state, out.err
}

// Sleep implements core.QueueBackend.
func (b *Backend) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	if err := core.ValidateLease(lease); err != nil {
		return err
	}
	out, err := b.exec(ctx, &command{Op: opSleep, Now: b.stamp(), Lease: lease, Until: until.UTC().Truncate(time.Microsecond)})
	if err != nil {
		return err
	}
	return out.err
}

// SaveCheckpoint implements core.QueueBackend: the first write of a step
// wins, because the first checkpoint command in the log stores it.
func (b *Backend) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return nil, err
	}
	if err := core.ValidateName("step", step); err != nil {
		return nil, err
	}
	if err := b.opts.Limits.ValidatePayload("value", value); err != nil {
		return nil, err
	}
	out, err := b.exec(ctx, &command{Op: opCheckpoint, Now: b.stamp(), Lease: lease, Step: step, Value: value})
	if err != nil {
		return nil, err
	}
	return out.value, out.err
}

// Rescue implements core.QueueBackend. Passes from many workers at once are
// safe: each is one command and sees the outcome of every earlier one.
func (b *Backend) Rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	if err := b.isClosed(); err != nil {
		return core.RescueResult{}, err
	}
	if err := b.opts.Limits.ValidateBatch("limit", req.Limit); err != nil {
		return core.RescueResult{}, err
	}
	now, known := b.estimate()
	b.mu.RLock()
	work := !known || b.rescueDueLocked(now)
	b.mu.RUnlock()
	if !work {
		return core.RescueResult{}, nil
	}
	out, err := b.exec(ctx, &command{Op: opRescue, Now: b.stamp(), Limit: req.Limit})
	if err != nil {
		return core.RescueResult{}, err
	}
	return out.rescue, out.err
}

// Cancel implements core.QueueBackend.
func (b *Backend) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	if err := b.isClosed(); err != nil {
		return core.Job{}, err
	}
	if err := validateJobID(jobID); err != nil {
		return core.Job{}, err
	}
	out, err := b.exec(ctx, &command{Op: opCancel, Now: b.stamp(), JobID: jobID, Reason: core.CancelReason(reason)})
	if err != nil {
		return core.Job{}, err
	}
	return out.job, out.err
}

// Retry implements core.QueueBackend.
func (b *Backend) Retry(ctx context.Context, jobID string) (core.Job, error) {
	if err := b.isClosed(); err != nil {
		return core.Job{}, err
	}
	if err := validateJobID(jobID); err != nil {
		return core.Job{}, err
	}
	out, err := b.exec(ctx, &command{Op: opRetry, Now: b.stamp(), JobID: jobID})
	if err != nil {
		return core.Job{}, err
	}
	return out.job, out.err
}

// PutTaskConfig implements core.QueueBackend.
func (b *Backend) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	if err := core.ValidateTaskConfig(cfg); err != nil {
		return err
	}
	v := 0
	if cfg.UsesFlowControl() {
		v = flowVersion
	}
	out, err := b.exec(ctx, &command{Op: opTaskConfig, V: v, Now: b.stamp(), TaskConfig: &cfg})
	if err != nil {
		return err
	}
	return out.err
}

// PutQueueConfig implements core.QueueBackend. Because the config is a
// command of the log, every claim appended after it sees it.
func (b *Backend) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return err
	}
	v := 0
	if cfg.UsesFlowControl() {
		v = flowVersion
	}
	out, err := b.exec(ctx, &command{Op: opQueueCfg, V: v, Now: b.stamp(), QueueConfig: &cfg})
	if err != nil {
		return err
	}
	return out.err
}

// Cleanup implements core.QueueBackend.
func (b *Backend) Cleanup(ctx context.Context, req core.CleanupRequest) (int, error) {
	if err := b.isClosed(); err != nil {
		return 0, err
	}
	if err := core.ValidateCleanup(req, b.opts.Limits); err != nil {
		return 0, err
	}
	out, err := b.exec(ctx, &command{Op: opCleanup, Now: b.stamp(), Queue: req.Queue, Limit: req.Limit,
		Before: req.FinishedBefore.UTC().Truncate(time.Microsecond)})
	if err != nil {
		return 0, err
	}
	return out.count, out.err
}

// DeleteJob implements core.JobDeleter. The deletion is one command of the
// log: every replica removes the job, its runs, checkpoints and result,
// and frees its idempotency key at the same position. With force, a
// running job is deleted in the same step, and its worker's next fenced
// call fails with core.ErrLeaseLost because no job holds its lease.
func (b *Backend) DeleteJob(ctx context.Context, jobID string, force bool) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	if err := core.ValidateJobID(jobID); err != nil {
		return err
	}
	out, err := b.exec(ctx, &command{Op: opDeleteJob, V: deleteVersion, Now: b.stamp(), JobID: jobID, Force: force})
	if err != nil {
		return err
	}
	return out.err
}

// DeleteQueue implements core.JobDeleter. Each step is one command of the
// log, which deletes the queue's first req.Limit jobs by id (running ones
// as DeleteJob with force does) and, once the queue holds none, its
// config.
func (b *Backend) DeleteQueue(ctx context.Context, req core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	if err := b.isClosed(); err != nil {
		return core.DeleteQueueResult{}, err
	}
	if err := core.ValidateDeleteQueue(req, b.opts.Limits); err != nil {
		return core.DeleteQueueResult{}, err
	}
	out, err := b.exec(ctx, &command{Op: opDeleteQ, V: deleteVersion, Now: b.stamp(), Queue: req.Queue, Limit: req.Limit})
	if err != nil {
		return core.DeleteQueueResult{}, err
	}
	return core.DeleteQueueResult{Deleted: out.count, Done: out.done}, out.err
}

// prepare validates reqs and builds their jobs. With a DecisionClock the
// jobs are dated now; without one their creation and due times are left
// to the server (applying the command dates them at its timestamp, keeping
// only a requested run-at), and their ids are dated by this process's
// Clock, which orders ids and decides nothing.
func (b *Backend) prepare(reqs []core.EnqueueRequest, now time.Time) ([]core.Job, error) {
	if !now.IsZero() {
		return core.PrepareJobs(reqs, now, b.opts.Limits)
	}
	jobs, err := core.PrepareJobs(reqs, time.Unix(0, 0), b.opts.Limits)
	if err != nil {
		return nil, err
	}
	idAt := b.opts.Clock.Now()
	for i := range jobs {
		jobs[i].ID = core.NewID(idAt)
	}
	return jobs, nil
}

func validateJobID(id string) error {
	if id == "" || len(id) > core.MaxNameLength {
		return fmt.Errorf("%w: job id must be 1 to %d bytes", core.ErrInvalidArgument, core.MaxNameLength)
	}
	return nil
}
