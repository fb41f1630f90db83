package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

var (
	_ core.RunReader   = (*Backend)(nil)
	_ core.JobSearcher = (*Backend)(nil)
	_ core.TaskLister  = (*Backend)(nil)
)

// loadJob reads one job of queue q: its record, cold field and result, and
// its lease expiry, in one round trip. ok is false when it does not exist.
func (b *Backend) loadJob(ctx context.Context, op, q, id string) (core.Job, bool, error) {
	keys := b.ks.queueKeys(q)
	pipe := b.rdb.Pipeline()
	hm := pipe.HMGet(ctx, keys[kJob], id, coldField(id), resultField(id))
	exp := pipe.ZScore(ctx, keys[kLease], id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return core.Job{}, false, wrap(op, err)
	}
	vals := hm.Val()
	if len(vals) != 3 {
		return core.Job{}, false, wrap(op, hm.Err())
	}
	return decodeJob(id, q, vals[0], vals[1], vals[2], leaseScore(exp))
}

// GetRun returns one run by its id ("<job id>.<token>"), with its job's
// queue and task. A job's run under token n is its n-th run: the latest is
// in the job's record and the earlier ones are the fields "<id>|<n>" of the
// run hash, so it is one round trip. See core.RunReader.
func (b *Backend) GetRun(ctx context.Context, runID string) (core.Run, error) {
	if err := b.check("get run"); err != nil {
		return core.Run{}, err
	}
	jobID, tok, err := core.ParseRunID(runID)
	if err != nil {
		return core.Run{}, err
	}
	missing := fmt.Errorf("redisq: get run: run %s: %w", runID, core.ErrNotFound)
	q, ok, err := b.queueOf(ctx, jobID)
	if err != nil {
		return core.Run{}, err
	}
	if !ok {
		return core.Run{}, missing
	}
	keys := b.ks.queueKeys(q)
	pipe := b.rdb.Pipeline()
	rec := pipe.HGet(ctx, keys[kJob], jobID)
	spilled := pipe.HGet(ctx, keys[kRun], jobID+"|"+strconv.FormatInt(tok, 10))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return core.Run{}, wrap("get run", err)
	}
	if rec.Err() != nil {
		return core.Run{}, missing
	}
	v, err := parseRecord(jobID, rec.Val())
	if err != nil {
		return core.Run{}, err
	}
	var run core.Run
	switch {
	case tok == v.token && v.runCount > 0:
		run, _ = lastRun(jobID, v)
	case tok < v.runCount && spilled.Err() == nil:
		if run, err = spilledRun(jobID, spilled.Val()); err != nil {
			return core.Run{}, err
		}
		if run.Token != tok {
			return core.Run{}, missing
		}
	default:
		return core.Run{}, missing
	}
	run.Queue, run.Task = q, v.task
	return run, nil
}

// FindByIdempotencyKey returns the job of queue that holds key: one read of
// the queue's idempotency hash and one of the job. A key reserved by a
// cross-slot batch that is not stored yet names no job. See
// core.JobSearcher.
func (b *Backend) FindByIdempotencyKey(ctx context.Context, queue, key string) (core.Job, error) {
	if err := b.check("find by idempotency key"); err != nil {
		return core.Job{}, err
	}
	if err := core.ValidateKeyLookup(queue, key); err != nil {
		return core.Job{}, err
	}
	missing := fmt.Errorf("redisq: find by idempotency key: queue %s: %w", queue, core.ErrNotFound)
	v, err := b.rdb.HGet(ctx, b.ks.queueKeys(queue)[kIdem], key).Result()
	if errors.Is(err, redis.Nil) {
		return core.Job{}, missing
	}
	if err != nil {
		return core.Job{}, wrap("find by idempotency key", err)
	}
	id, _, held := strings.Cut(v, ":")
	if !held {
		return core.Job{}, missing // reserved by a prepared batch part
	}
	j, ok, err := b.loadJob(ctx, "find by idempotency key", queue, id)
	if err != nil {
		return core.Job{}, err
	}
	if !ok || j.IdempotencyKey != key {
		return core.Job{}, missing
	}
	if j.Unique != core.UniqueUntilRetention {
		// a job holds its key by its mode, on the store's clock
		now, err := b.now(ctx)
		if err != nil {
			return core.Job{}, err
		}
		if !core.HoldsKey(j, now) {
			return core.Job{}, missing
		}
	}
	return j, nil
}

// ListTasks names every task with retained jobs or a stored config, from
// the task config hash and each queue's job counts (one round trip for
// all queues). See core.TaskLister.
func (b *Backend) ListTasks(ctx context.Context) ([]core.TaskInfo, error) {
	if err := b.check("list tasks"); err != nil {
		return nil, err
	}
	qs, err := b.sortedQueues(ctx)
	if err != nil {
		return nil, err
	}
	configured, err := b.rdb.HKeys(ctx, b.ks.tasks()).Result()
	if err != nil {
		return nil, wrap("list tasks", err)
	}
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(qs))
	for i, q := range qs {
		cmds[i] = pipe.HGetAll(ctx, b.ks.queueKeys(q)[kCnt])
	}
	if len(qs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, wrap("list tasks", err)
		}
	}
	byName := map[string]*core.TaskInfo{}
	info := func(task string) *core.TaskInfo {
		t := byName[task]
		if t == nil {
			t = &core.TaskInfo{Name: task, Counts: map[core.JobState]int64{}}
			byName[task] = t
		}
		return t
	}
	for _, task := range configured {
		info(task).HasConfig = true
	}
	for _, c := range cmds {
		for f, v := range c.Val() {
			task, st, ok := strings.Cut(f, "|")
			n, _ := strconv.ParseInt(v, 10, 64)
			if !ok || n <= 0 || !core.JobState(st).Valid() {
				continue // a prepared batch part's count, or none
			}
			info(task).Counts[core.JobState(st)] += n
		}
	}
	out := make([]core.TaskInfo, 0, len(byName))
	for _, t := range byName {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b core.TaskInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
