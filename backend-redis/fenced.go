package redisq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
)

func lost(op, id string) error {
	return fmt.Errorf("redisq: %s: job %s: %w", op, id, core.ErrLeaseLost)
}

// fencedQueue validates a lease and finds its job's queue. ok is false when
// the job is unknown, which a fenced call reports as a lost lease.
func (b *Backend) fencedQueue(ctx context.Context, op string, l core.Lease) (string, error) {
	if err := b.check(op); err != nil {
		return "", err
	}
	if err := core.ValidateLease(l); err != nil {
		return "", err
	}
	q, ok, err := b.queueOf(ctx, l.JobID)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", lost(op, l.JobID)
	}
	return q, nil
}

func token(l core.Lease) string { return strconv.FormatInt(l.Token, 10) }

// Heartbeat extends a held lease. See core.QueueBackend.
func (b *Backend) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	if ttl <= 0 {
		if err := b.check("heartbeat"); err != nil {
			return core.Lease{}, err
		}
		return core.Lease{}, invalidf("ttl %v must be positive", ttl)
	}
	q, err := b.fencedQueue(ctx, "heartbeat", lease)
	if err != nil {
		return core.Lease{}, err
	}
	res, err := b.run(ctx, scriptHeartbeat, q, lease.JobID, token(lease), durMicros(ttl))
	if err != nil {
		return core.Lease{}, wrap("heartbeat", err)
	}
	status, rest, err := reply(res, map[string]int{"ok": 2})
	if err != nil {
		return core.Lease{}, err
	}
	if status != "ok" {
		if len(rest) > 0 {
			b.forget(lease.JobID)
			reason, _ := str(rest[0])
			return core.Lease{}, fmt.Errorf("redisq: heartbeat: job %s cancelled (%s): %w", lease.JobID, reason, core.ErrLeaseLost)
		}
		return core.Lease{}, lost("heartbeat", lease.JobID)
	}
	out := core.Lease{JobID: lease.JobID, Token: lease.Token, ExpiresAt: toTime(rest[0])}
	out.WorkerID, _ = str(rest[1])
	return out, nil
}

// Complete finishes a batch of running jobs, one script call per queue.
// See core.QueueBackend.
func (b *Backend) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	if err := b.check("complete"); err != nil {
		return nil, err
	}
	if err := b.opts.Limits.ValidateBatch("completions", len(items)); err != nil {
		return nil, err
	}
	errs := make([]error, len(items))
	ids := make([]string, 0, len(items))
	for i, it := range items {
		if err := core.ValidateLease(it.Lease); err != nil {
			errs[i] = err
			continue
		}
		if err := b.opts.Limits.ValidatePayload("result", it.Result); err != nil {
			errs[i] = err
			continue
		}
		ids = append(ids, it.Lease.JobID)
	}
	queues, err := b.queuesOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	byQueue := map[string][]int{}
	var order []string
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		q, ok := queues[it.Lease.JobID]
		if !ok {
			errs[i] = lost("complete", it.Lease.JobID)
			continue
		}
		if byQueue[q] == nil {
			order = append(order, q)
		}
		byQueue[q] = append(byQueue[q], i)
	}
	for _, q := range order {
		idx := byQueue[q]
		args := make([]any, 0, 3*len(idx))
		for _, i := range idx {
			args = append(args, items[i].Lease.JobID, token(items[i].Lease), items[i].Result)
		}
		res, err := b.run(ctx, scriptComplete, q, args...)
		if err != nil {
			return nil, wrap("complete", err)
		}
		_, rest, err := reply(res, map[string]int{"ok": 1 + len(idx)})
		if err != nil {
			return nil, err
		}
		for n, i := range idx {
			if toInt(rest[1+n]) != 1 {
				errs[i] = lost("complete", items[i].Lease.JobID)
			} else {
				b.forget(items[i].Lease.JobID)
			}
		}
	}
	return errs, nil
}

// Fail ends the current run with an error. See core.QueueBackend.
func (b *Backend) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	q, err := b.fencedQueue(ctx, "fail", f.Lease)
	if err != nil {
		return "", err
	}
	retryAt := "0"
	if !f.RetryAt.IsZero() {
		retryAt = micros(f.RetryAt)
	}
	terminal := "0"
	if f.Terminal {
		terminal = "1"
	}
	res, err := b.run(ctx, scriptFail, q, f.Lease.JobID, token(f.Lease), core.TruncateError(f.Error), retryAt, terminal)
	if err != nil {
		return "", wrap("fail", err)
	}
	status, rest, err := reply(res, map[string]int{"ok": 1})
	if err != nil {
		return "", err
	}
	if status != "ok" {
		return "", lost("fail", f.Lease.JobID)
	}
	st, _ := str(rest[0])
	if core.JobState(st).Terminal() {
		b.forget(f.Lease.JobID)
	}
	return core.JobState(st), nil
}

// Sleep parks a running job until a time. See core.QueueBackend.
func (b *Backend) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	q, err := b.fencedQueue(ctx, "sleep", lease)
	if err != nil {
		return err
	}
	u := "0"
	if !until.IsZero() {
		u = micros(until)
	}
	res, err := b.run(ctx, scriptSleep, q, lease.JobID, token(lease), u)
	if err != nil {
		return wrap("sleep", err)
	}
	status, _, err := reply(res, nil)
	if err != nil {
		return err
	}
	if status != "ok" {
		return lost("sleep", lease.JobID)
	}
	return nil
}

// SaveCheckpoint stores a step's value; the first write wins. See
// core.QueueBackend.
func (b *Backend) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	if err := b.check("save checkpoint"); err != nil {
		return nil, err
	}
	if err := core.ValidateName("step", step); err != nil {
		return nil, err
	}
	if err := b.opts.Limits.ValidatePayload("value", value); err != nil {
		return nil, err
	}
	q, err := b.fencedQueue(ctx, "save checkpoint", lease)
	if err != nil {
		return nil, err
	}
	res, err := b.run(ctx, scriptCheckpoint, q, lease.JobID, token(lease), step, value)
	if err != nil {
		return nil, wrap("save checkpoint", err)
	}
	status, rest, err := reply(res, map[string]int{"ok": 1})
	if err != nil {
		return nil, err
	}
	if status != "ok" {
		return nil, lost("save checkpoint", lease.JobID)
	}
	s, _ := str(rest[0])
	return []byte(s), nil
}
