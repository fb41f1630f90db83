package kvq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// maxCAS bounds the compare-and-set attempts of one change; each attempt
// lost to another writer reads the record again.
const maxCAS = 64

// change applies fn to job id's record and stores the result with a
// compare-and-set, again on the newest revision when another writer came
// first. fn returns false to store nothing. It returns the stored record
// and revision.
func (b *Backend) change(ctx context.Context, id string, fn func(r *record) (bool, error)) (*record, uint64, error) {
	for range maxCAS {
		cur, rev, err := b.loadJob(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		r := cur.clone()
		ok, err := fn(r)
		if err != nil || !ok {
			return r, rev, err
		}
		nrev, err := b.storeJob(ctx, r, rev)
		if err == nil {
			return r, nrev, nil
		}
		if !errors.Is(err, errConflict) {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("natsq: job %s changed %d times while being changed", id, maxCAS)
}

// fenced is change for a lease: fn runs only while the job is running
// under lease.Token, else the call fails with core.ErrLeaseLost.
func (b *Backend) fenced(ctx context.Context, lease core.Lease, fn func(r *record) error) (*record, uint64, error) {
	if err := b.isClosed(); err != nil {
		return nil, 0, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return nil, 0, err
	}
	r, rev, err := b.change(ctx, lease.JobID, func(r *record) (bool, error) {
		if r.Job.State != core.StateRunning || r.Job.Lease.Token != lease.Token {
			return false, fmt.Errorf("%w: job %s is %s under token %d, the lease has token %d", core.ErrLeaseLost, r.Job.ID, r.Job.State, r.Job.Lease.Token, lease.Token)
		}
		return true, fn(r)
	})
	if errors.Is(err, core.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: job %s does not exist", core.ErrLeaseLost, lease.JobID)
	}
	return r, rev, err
}

// Heartbeat implements core.QueueBackend.
func (b *Backend) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	if ttl <= 0 {
		return core.Lease{}, fmt.Errorf("%w: ttl: %v must be positive", core.ErrInvalidArgument, ttl)
	}
	now := b.now()
	var reason string
	r, _, err := b.fenced(ctx, lease, func(r *record) error {
		if why, passed := core.DeadlinePassed(r.Job, now); passed {
			reason = why
			cancelRecord(r, now, why)
			return nil
		}
		r.Job.Lease.ExpiresAt = now.Add(ttl)
		return nil
	})
	if err != nil {
		return core.Lease{}, err
	}
	if reason != "" {
		b.tellDone(leaseEntry{ID: lease.JobID, Token: lease.Token})
		b.signal(r.Job.Queue)
		return core.Lease{}, fmt.Errorf("%w: job %s was cancelled: %s", core.ErrLeaseLost, lease.JobID, reason)
	}
	b.tellDone(leaseEntry{ID: lease.JobID, Token: lease.Token, Expires: r.Job.Lease.ExpiresAt})
	return r.Job.Lease, nil
}

// Complete implements core.QueueBackend. The batch's records are read at
// once and written with one compare-and-set each, all in flight together;
// an item whose record changed meanwhile is done again on its own.
func (b *Backend) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	if err := b.opts.Limits.ValidateBatch("completions", len(items)); err != nil {
		return nil, err
	}
	now := b.now()
	errs := make([]error, len(items))
	finish := func(r *record, it core.Completion) {
		r.closeRun(core.RunSucceeded, now, "")
		r.Job.State = core.StateSucceeded
		r.Job.Result = it.Result
		r.Job.FinishedAt = now
	}
	// Read every record at once.
	type slot struct {
		rec *record
		rev uint64
		err error
	}
	slots := make([]slot, len(items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i, it := range items {
		if err := core.ValidateLease(it.Lease); err != nil {
			errs[i] = err
			continue
		}
		if err := b.opts.Limits.ValidatePayload("result", it.Result); err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, rev, err := b.loadJob(ctx, it.Lease.JobID)
			slots[i] = slot{r, rev, err}
		}()
	}
	wg.Wait()
	// Write every record that the lease still holds, all in flight.
	futs := make([]jetstream.PubAckFuture, len(items))
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		sl := slots[i]
		switch {
		case errors.Is(sl.err, core.ErrNotFound):
			errs[i] = fmt.Errorf("%w: job %s does not exist", core.ErrLeaseLost, it.Lease.JobID)
			continue
		case sl.err != nil:
			return nil, sl.err
		case sl.rec.Job.State != core.StateRunning || sl.rec.Job.Lease.Token != it.Lease.Token:
			errs[i] = fmt.Errorf("%w: job %s is %s under token %d, the lease has token %d", core.ErrLeaseLost, sl.rec.Job.ID, sl.rec.Job.State, sl.rec.Job.Lease.Token, it.Lease.Token)
			continue
		}
		r := sl.rec.clone()
		finish(r, it)
		slots[i].rec = r
		data, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("natsq: encode job %s: %w", r.Job.ID, err)
		}
		if futs[i], err = b.js.PublishMsgAsync(&nats.Msg{Subject: b.jobSubj(r.Job.ID), Data: data},
			jetstream.WithExpectLastSequencePerSubject(sl.rev)); err != nil {
			return nil, fmt.Errorf("natsq: complete %s: %w", r.Job.ID, err)
		}
	}
	var done []leaseEntry
	queues := map[string]bool{}
	for i, it := range items {
		if futs[i] == nil {
			continue
		}
		select {
		case <-futs[i].Ok():
		case err := <-futs[i].Err():
			if !isConflict(err) {
				return nil, fmt.Errorf("natsq: complete %s: %w", it.Lease.JobID, err)
			}
			// Another writer came first: decide again on the newest record.
			if _, _, err := b.fenced(ctx, it.Lease, func(r *record) error { finish(r, it); return nil }); err != nil {
				if errors.Is(err, core.ErrLeaseLost) {
					errs[i] = err
					continue
				}
				return nil, err
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("natsq: complete: %w", ctx.Err())
		}
		done = append(done, leaseEntry{ID: it.Lease.JobID, Token: it.Lease.Token})
		queues[slots[i].rec.Job.Queue] = true
	}
	b.tellDone(done...)
	for q := range queues {
		b.signal(q)
	}
	return errs, nil
}

// Fail implements core.QueueBackend.
func (b *Backend) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	now := b.now()
	msg := core.TruncateError(f.Error)
	r, rev, err := b.fenced(ctx, f.Lease, func(r *record) error {
		r.closeRun(core.RunFailed, now, msg)
		r.Job.LastError = msg
		if f.Terminal || r.Job.Attempt >= r.Job.MaxAttempts {
			r.Job.State = core.StateFailed
			r.Job.FinishedAt = now
		} else {
			r.Job.State = core.StateQueued
			r.Job.RunAt = now
			if at := f.RetryAt.UTC().Truncate(time.Microsecond); at.After(now) {
				r.Job.RunAt = at
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return r.Job.State, b.afterRelease(ctx, r, rev, f.Lease)
}

// afterRelease publishes the ready entry of a job that left its claim for
// the queue again, and tells the owner.
func (b *Backend) afterRelease(ctx context.Context, r *record, rev uint64, lease core.Lease) error {
	var err error
	if r.Job.State == core.StateQueued || r.Job.State == core.StateSleeping {
		err = b.publishReady(ctx, r, rev)
	} else {
		b.signal(r.Job.Queue)
	}
	b.tellDone(leaseEntry{ID: lease.JobID, Token: lease.Token})
	return err
}

// Sleep implements core.QueueBackend.
func (b *Backend) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	now := b.now()
	r, rev, err := b.fenced(ctx, lease, func(r *record) error {
		r.closeRun(core.RunSleeping, now, "")
		r.Job.State = core.StateSleeping
		r.Job.RunAt = now
		if u := until.UTC().Truncate(time.Microsecond); u.After(now) {
			r.Job.RunAt = u
		}
		return nil
	})
	if err != nil {
		return err
	}
	return b.afterRelease(ctx, r, rev, lease)
}

// SaveCheckpoint implements core.QueueBackend. The value is stored under a
// subject of the claim's own token, then named in the job's record by a
// compare-and-set that also checks the lease: the first claim to name a
// step wins, and a stale worker's value is never named.
func (b *Backend) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	if err := core.ValidateName("step", step); err != nil {
		return nil, err
	}
	if err := b.opts.Limits.ValidatePayload("value", value); err != nil {
		return nil, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return nil, err
	}
	if value == nil {
		value = []byte{}
	}
	cur, _, err := b.loadJob(ctx, lease.JobID)
	if err == nil {
		if ref, ok := cur.CK[step]; ok {
			if cur.Job.State != core.StateRunning || cur.Job.Lease.Token != lease.Token {
				return nil, fmt.Errorf("%w: job %s is %s under token %d", core.ErrLeaseLost, lease.JobID, cur.Job.State, cur.Job.Lease.Token)
			}
			return b.checkpointValue(ctx, lease.JobID, step, ref.Token)
		}
	}
	if _, err := b.put(ctx, b.ckSubj(lease.JobID, step, lease.Token), value, -1); err != nil {
		return nil, err
	}
	now := b.now()
	var winner int64
	_, _, err = b.fenced(ctx, lease, func(r *record) error {
		if ref, ok := r.CK[step]; ok {
			winner = ref.Token
			return nil
		}
		if r.CK == nil {
			r.CK = map[string]ckRef{}
		}
		r.CK[step] = ckRef{Token: lease.Token, At: now}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if winner != 0 && winner != lease.Token {
		return b.checkpointValue(ctx, lease.JobID, step, winner)
	}
	return value, nil
}

func (b *Backend) checkpointValue(ctx context.Context, id, step string, token int64) ([]byte, error) {
	data, _, err := b.get(ctx, b.ckSubj(id, step, token))
	if err != nil {
		return nil, fmt.Errorf("natsq: %w: checkpoint %s of job %s is named but not stored: %v", core.ErrInvalidState, step, id, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Cancel implements core.QueueBackend.
func (b *Backend) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	if err := b.isClosed(); err != nil {
		return core.Job{}, err
	}
	if reason == "" {
		reason = "cancelled"
	}
	reason = core.TruncateError(reason)
	now := b.now()
	var token int64
	var wasRunning bool
	r, _, err := b.change(ctx, jobID, func(r *record) (bool, error) {
		switch r.Job.State {
		case core.StateCancelled:
			return false, nil
		case core.StateSucceeded, core.StateFailed:
			return false, fmt.Errorf("%w: job %s is %s", core.ErrInvalidState, jobID, r.Job.State)
		}
		wasRunning, token = r.Job.State == core.StateRunning, r.Job.Lease.Token
		cancelRecord(r, now, reason)
		return true, nil
	})
	if err != nil {
		return core.Job{}, err
	}
	if wasRunning {
		b.tellDone(leaseEntry{ID: jobID, Token: token})
	}
	b.signal(r.Job.Queue)
	return r.Job, nil
}

// Retry implements core.QueueBackend.
func (b *Backend) Retry(ctx context.Context, jobID string) (core.Job, error) {
	if err := b.isClosed(); err != nil {
		return core.Job{}, err
	}
	now := b.now()
	r, rev, err := b.change(ctx, jobID, func(r *record) (bool, error) {
		if r.Job.State != core.StateFailed && r.Job.State != core.StateCancelled {
			return false, fmt.Errorf("%w: job %s is %s; only failed or cancelled jobs can be retried", core.ErrInvalidState, jobID, r.Job.State)
		}
		r.Job.State = core.StateQueued
		r.Job.RunAt = now
		r.Job.FinishedAt = time.Time{}
		if r.Job.Attempt >= r.Job.MaxAttempts {
			r.Job.MaxAttempts = r.Job.Attempt + 1
		}
		return true, nil
	})
	if err != nil {
		return core.Job{}, err
	}
	return r.Job, b.publishReady(ctx, r, rev)
}

// GetTaskConfig implements core.QueueBackend.
func (b *Backend) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	if err := b.isClosed(); err != nil {
		return core.TaskConfig{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskConfig{}, err
	}
	data, _, err := b.get(ctx, b.taskCfgSubj(task))
	if errors.Is(err, errMissing) {
		return core.TaskConfig{}, fmt.Errorf("%w: task config %s", core.ErrNotFound, task)
	}
	if err != nil {
		return core.TaskConfig{}, err
	}
	var c core.TaskConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return core.TaskConfig{}, corrupt("task config "+task, err)
	}
	return c, nil
}

// PutTaskConfig implements core.QueueBackend.
func (b *Backend) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	if err := core.ValidateTaskConfig(cfg); err != nil {
		return err
	}
	data, _ := json.Marshal(cfg)
	_, err := b.put(ctx, b.taskCfgSubj(cfg.Task), data, -1)
	return err
}

// GetQueueConfig implements core.QueueBackend.
func (b *Backend) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	if err := b.isClosed(); err != nil {
		return core.QueueConfig{}, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return core.QueueConfig{}, err
	}
	data, _, err := b.get(ctx, b.queueCfgSubj(queue))
	if errors.Is(err, errMissing) {
		return core.QueueConfig{Queue: queue}, nil
	}
	if err != nil {
		return core.QueueConfig{}, err
	}
	var c core.QueueConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return core.QueueConfig{}, corrupt("queue config "+queue, err)
	}
	return c, nil
}

// PutQueueConfig implements core.QueueBackend. Claims read the config when
// they start, so it holds for every claim that starts after it returns.
func (b *Backend) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	if err := b.isClosed(); err != nil {
		return err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return err
	}
	data, _ := json.Marshal(cfg)
	if _, err := b.put(ctx, b.queueCfgSubj(cfg.Queue), data, -1); err != nil {
		return err
	}
	b.signal(cfg.Queue)
	return nil
}
